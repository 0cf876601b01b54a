"""Busy tasks whose names are long, non-ASCII, automatic or changing, each running a
coroutine function of its own, so that a profiler's `<task NAME>` frames can be checked
against the names the tasks really held (Python 3.8+).

    long_names.py

Prints {"names": {coroutine: name}} (the name each task was given; anyio-style names are
module.qualname of the task's own coroutine, Task-N the one asyncio gave), {"renamed":
[names]} (every name the renamed task held so far, printed again as it changes) and
READY, then runs until killed.
"""
import asyncio
import json
import time

from _wl import fact, ready

FOREVER = 3600


async def spin():
    end = time.perf_counter() + 0.004
    while time.perf_counter() < end:
        pass
    await asyncio.sleep(0.001)


async def busy_ascii_120():
    while True:
        await spin()


async def busy_ascii_255():
    while True:
        await spin()


async def busy_ascii_300():
    while True:
        await spin()


async def busy_latin1():
    while True:
        await spin()


async def busy_cjk():
    while True:
        await spin()


async def busy_emoji():
    while True:
        await spin()


async def busy_ucs2_long():
    while True:
        await spin()


async def busy_anyio_style():
    while True:
        await spin()


async def busy_unnamed():
    while True:
        await spin()


async def busy_renamed():
    n = 0
    while True:
        end = time.perf_counter() + 0.3
        while time.perf_counter() < end:
            await spin()
        n += 1
        name = "renamed-%d-%s" % (n, "r" * (40 + n % 7))
        asyncio.current_task().set_name(name)
        fact(renamed=name)


NAMES = {
    "busy_ascii_120": "ascii-120-" + "a" * 110,
    "busy_ascii_255": "ascii-255-" + "b" * 245,
    "busy_ascii_300": "ascii-300-" + "c" * 290,
    "busy_latin1": "caf\u00e9-cr\u00e8me-\u00f1and\u00fa",
    "busy_cjk": "\u4efb\u52a1-\u6570\u636e\u5e93-\u67e5\u8be2",
    "busy_emoji": "\U0001f680 launch \U0001f30d",
    "busy_ucs2_long": "\u6570" * 200,
    "busy_anyio_style": __name__ + ".busy_anyio_style",
}


async def main():
    g = globals()
    tasks = {k: asyncio.create_task(g[k](), name=v) for k, v in NAMES.items()}
    tasks["busy_unnamed"] = asyncio.create_task(busy_unnamed())
    first = "renamed-0-first"
    tasks["busy_renamed"] = asyncio.create_task(busy_renamed(), name=first)
    fact(names={k: t.get_name() for k, t in tasks.items() if k != "busy_renamed"})
    fact(renamed=first)
    ready()
    await asyncio.sleep(FOREVER)


asyncio.run(main())
