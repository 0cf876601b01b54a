"""asyncbpf-top's workload: one event loop whose tasks take known shares of the CPU.

    main -> handler -> fetch: parse      8 parts
    main -> handler -> render: encode    2 parts
    main -> background: tick             1 part

Each leaf burns its part of a round (PART seconds of CPU per part), then yields with
`await asyncio.sleep(0)`, so the loop runs them in turn and their shares are 73, 18 and
9 %: far apart, so that their order holds with the few samples of a loaded machine (main is
asyncio.run's main task, Task-1, shown by its coroutine). Prints {"hot": ..., "paths": ...} and READY once
every leaf has run.
"""
import asyncio
import time

import _wl

PART = 0.001
SEEN = set()
LEAVES = {"parse": 8, "encode": 2, "tick": 1}


def parse():
    end = time.process_time() + LEAVES["parse"] * PART
    while time.process_time() < end: pass  # BUSY


def encode():
    end = time.process_time() + LEAVES["encode"] * PART
    while time.process_time() < end: pass  # BUSY


def tick():
    end = time.process_time() + LEAVES["tick"] * PART
    while time.process_time() < end: pass  # BUSY


async def run(leaf):
    while True:
        leaf()
        SEEN.add(leaf.__name__)
        if len(SEEN) == len(LEAVES) and "ready" not in SEEN:
            SEEN.add("ready")
            _wl.fact(hot="parse", paths=["main -> handler -> fetch: parse",
                                         "main -> handler -> render: encode",
                                         "main -> background: tick"])
            _wl.ready()
        await asyncio.sleep(0)


async def fetch_page():
    await run(parse)


async def render_page():
    await run(encode)


async def handler():
    loop = asyncio.get_running_loop()
    await asyncio.gather(loop.create_task(fetch_page(), name="fetch"),
                         loop.create_task(render_page(), name="render"))


async def main():
    loop = asyncio.get_running_loop()
    await asyncio.gather(loop.create_task(handler(), name="handler"),
                         loop.create_task(run(tick), name="background"))


asyncio.run(main())
