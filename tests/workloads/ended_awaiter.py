"""A task that outlives its awaiter: "awaiter" waits for "orphan" through a shield with a
timeout of SECONDS (argument, default 4) from READY, then stops waiting and returns,
while "orphan" goes on burning CPU. Prints READY once both run."""
import asyncio
import sys
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


async def awaiter(child, seconds):
    try:
        await asyncio.wait_for(asyncio.shield(child), seconds)
    except asyncio.TimeoutError:
        pass


async def main(seconds):
    loop = asyncio.get_running_loop()
    child = loop.create_task(orphan(), name="orphan")
    loop.create_task(awaiter(child, seconds), name="awaiter")
    await asyncio.sleep(0)
    print("READY", flush=True)
    await asyncio.sleep(3600)


if __name__ == "__main__":
    asyncio.run(main(float(sys.argv[1]) if len(sys.argv) > 1 else 4.0))
