"""Deep awaits for asyncbpf-tasks: the task `deep-coro` is suspended DEPTH coroutines
down (`down` awaiting itself, as CPython's own tests build 1,500-deep chains), and CHAIN
tasks await one another in a line, `link-0` awaiting `link-1` ... awaiting `link-N`.

Once the innermost coroutine and the last task are suspended, prints
{"depth": DEPTH, "main": the name of the task that gathers both, "chain": [names,
outermost first]} and READY; idles until killed.
"""
import asyncio
import sys

import _wl

DEPTH = 1500
CHAIN = 300
bottom = None


async def down(n):
    if n > 1:
        return await down(n - 1)
    bottom.set()
    await asyncio.sleep(3600)


async def link(i, last):
    if i < CHAIN - 1:
        await asyncio.create_task(link(i + 1, last), name="link-%d" % (i + 1))
    else:
        last.set()
        await asyncio.sleep(3600)


async def main():
    global bottom
    bottom, last = asyncio.Event(), asyncio.Event()
    tasks = [asyncio.create_task(down(DEPTH), name="deep-coro"),
             asyncio.create_task(link(0, last), name="link-0")]
    await bottom.wait()
    await last.wait()
    await asyncio.sleep(0.1)  # every task past its last step: all suspended
    _wl.fact(depth=DEPTH, main=asyncio.current_task().get_name(),
             chain=["link-%d" % i for i in range(CHAIN)])
    _wl.ready()
    await asyncio.gather(*tasks)


if __name__ == "__main__":
    # each level of a resumed chain is a C call on 3.8-3.11
    sys.setrecursionlimit(DEPTH * 4 + 1000)
    asyncio.run(main())
