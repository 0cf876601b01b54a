"""Fire and forget: every INTERVAL seconds (argument, default 1) a task creator-N starts
a task child-N and returns at once; child-N computes in burn() until the next generation
cancels it. Only the creation probe links a child to its creator: nothing in memory
relates them once the creator has returned. Prints READY once the first child runs."""
import asyncio
import sys
import time

from _wl import ready

KEEP = set()


def burn():
    end = time.process_time() + 0.005
    while time.process_time() < end: pass  # BUSY


async def child():
    while True:
        burn()
        await asyncio.sleep(0)


async def creator(n):
    t = asyncio.get_running_loop().create_task(child(), name="child-%d" % n)
    KEEP.add(t)
    t.add_done_callback(KEEP.discard)


def spawn(loop, n, interval):
    for t in list(KEEP):
        t.cancel()
    loop.create_task(creator(n), name="creator-%d" % n)
    if n == 1:
        loop.call_later(0.1, ready)
    loop.call_later(interval, spawn, loop, n + 1, interval)


if __name__ == "__main__":
    loop = asyncio.new_event_loop()
    loop.call_soon(spawn, loop, 1, float(sys.argv[1]) if len(sys.argv) > 1 else 1.0)
    loop.run_forever()
