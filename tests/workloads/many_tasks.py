"""Many live tasks, as a websocket-style server holds its connections, for wall mode at
scale (tests/integration/test_wall_short.py, and docs/wall.md's measures): N tasks
(default 1000), each named "conn-K", in handle_conn awaiting read_message, which awaits
a future of its own that nothing ever sets (a connection with no message yet); beside
them BUSY tasks named "busy-K", each looping in serve_busy: compute about 0.5 ms in
busy_work, then await asyncio.sleep(0.01) (a few connections that do talk).

Facts, before READY: {"pid"}, {"tasks": N, "busy": BUSY, "start_s": seconds taken to
create the N tasks and have each reach its await}. READY then; it runs until killed.

usage: many_tasks.py [N]
"""
import asyncio
import os
import sys
import time

import _wl

BUSY = 4


async def read_message(fut):
    return await fut  # never set


async def handle_conn(fut):
    await read_message(fut)


def busy_work(seconds):
    end = time.monotonic() + seconds
    x = 0
    while time.monotonic() < end:
        x += 1
    return x


async def serve_busy():
    while True:
        busy_work(0.0005)
        await asyncio.sleep(0.01)


async def main(n):
    asyncio.current_task().set_name("wl-main")
    loop = asyncio.get_running_loop()
    t0 = time.monotonic()
    conns = [loop.create_task(handle_conn(loop.create_future()), name="conn-%d" % k)
             for k in range(n)]
    busy = [loop.create_task(serve_busy(), name="busy-%d" % k) for k in range(BUSY)]
    await asyncio.sleep(0)  # each task runs to its first await
    _wl.fact(tasks=n, busy=BUSY, start_s=round(time.monotonic() - t0, 3))
    _wl.ready()
    await asyncio.gather(*conns, *busy)


if __name__ == "__main__":
    _wl.fact(pid=os.getpid())
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000))
