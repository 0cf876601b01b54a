"""Two named asyncio tasks, A and B, under a main task that gathers them; each spins in
its own leaf (A twice as long as B) between `await sleep(0)`: few distinct stacks, so
that profiles of the same run taken by different readers can be compared.

Prints READY, then runs until killed."""
import asyncio

import _wl


def spin_a():
    n = 0
    for i in range(20000):  # A
        n += i
    return n


def spin_b():
    n = 0
    for i in range(10000):  # B
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
