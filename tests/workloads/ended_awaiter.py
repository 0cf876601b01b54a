"""A task that outlives its awaiter: "awaiter" waits for "orphan" through a shield until,
SECONDS (argument, default 4) after a line arrives on stdin, it is cancelled and returns,
while "orphan" goes on burning CPU. Prints READY once both run; the awaiter waits for the
orphan from then on. "orphan-2" and an awaiter with a long, non-ASCII name (LONG_AWAITER)
do the same, and "orphan-3" with an awaiter given no name (asyncio's Task-N)."""
import asyncio
import sys
import threading
import time


def burn(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end: pass  # BURN


async def orphan_leaf():
    while True:
        burn(0.005)
        await asyncio.sleep(0)


async def orphan():
    await orphan_leaf()


async def awaiter(child):
    try:
        await asyncio.shield(child)
    except asyncio.CancelledError:
        pass


LONG_AWAITER = "awaiter-long-" + "\u00e9" * 50 + "-" + "\u6570" * 30


def end_after_line(loop, tasks, seconds):
    sys.stdin.readline()
    for task in tasks:
        loop.call_soon_threadsafe(loop.call_later, seconds, task.cancel)


async def main(seconds):
    loop = asyncio.get_running_loop()
    child = loop.create_task(orphan(), name="orphan")
    waiter = loop.create_task(awaiter(child), name="awaiter")
    # the same with an awaiter whose name is too long for a link to carry
    child2 = loop.create_task(orphan(), name="orphan-2")
    waiter2 = loop.create_task(awaiter(child2), name=LONG_AWAITER)
    child3 = loop.create_task(orphan(), name="orphan-3")
    waiter3 = loop.create_task(awaiter(child3))
    await asyncio.sleep(0)
    threading.Thread(target=end_after_line, args=(loop, (waiter, waiter2, waiter3), seconds),
                     daemon=True).start()
    print("READY", flush=True)
    await asyncio.sleep(3600)


if __name__ == "__main__":
    asyncio.run(main(float(sys.argv[1]) if len(sys.argv) > 1 else 4.0))
