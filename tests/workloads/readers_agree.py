"""Two named asyncio tasks, A and B, under a main task that gathers them; each spins in
its own leaf (A twice as long as B on average) between `await sleep(0)`: few distinct
stacks, so that profiles of the same run taken by different readers can be compared.
Each spin's length is drawn at random: a fixed one makes the loop periodic, and a reader
sampling at a fixed period (the BPF reader's cpu-clock) then keeps one phase against it
for the whole run, which each reader's own cost per sample shifts differently: the
A/B split then differed between readers by up to 0.06, from run to run.

Prints READY, then runs until killed."""
import asyncio
import random

import _wl


def spin_a():
    n = 0
    for i in range(random.randint(10000, 30000)):  # A
        n += i
    return n


def spin_b():
    n = 0
    for i in range(random.randint(5000, 15000)):  # B
        n += i
    return n


async def chain(depth, leaf):
    if depth:
        return await chain(depth - 1, leaf)
    while True:
        leaf()
        await asyncio.sleep(0)


async def main():
    loop = asyncio.get_event_loop()
    a = loop.create_task(chain(8, spin_a))
    b = loop.create_task(chain(4, spin_b))
    if hasattr(a, "set_name"):
        a.set_name("A")
        b.set_name("B")
    _wl.ready()
    await asyncio.gather(a, b)


asyncio.new_event_loop().run_until_complete(main())
