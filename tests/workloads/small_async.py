"""A small asyncio service: a main task gathering WORKERS tasks (argument, default 3)
that each burn about BURN_MS of CPU (default 2) in leaf() every PERIOD_MS (default 200)
and sleep otherwise; runs for SECONDS (default 0: forever, main awaiting the gather
directly). Prints READY once running."""
import asyncio
import sys
import time


def leaf(burn):
    # CPU time, so that the work is the same however busy the machine is
    end = time.process_time() + burn
    while time.process_time() < end: pass  # BURN


async def worker(burn, period):
    while True:
        leaf(burn)
        await asyncio.sleep(period)


async def main(workers, burn, period, seconds):
    print("READY", flush=True)
    tasks = [asyncio.ensure_future(worker(burn, period)) for _ in range(workers)]
    if seconds <= 0:
        await asyncio.gather(*tasks)
    try:
        await asyncio.wait_for(asyncio.gather(*tasks), seconds)
    except asyncio.TimeoutError:
        pass


if __name__ == "__main__":
    args = [float(a) for a in sys.argv[1:]]
    workers, burn, period, seconds = (args + [3, 2, 200, 0][len(args):])[:4]
    asyncio.run(main(int(workers), burn / 1000, period / 1000, seconds))
