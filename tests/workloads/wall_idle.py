"""Wall-time workload: N tasks (default 5000) all awaiting one asyncio.Event in idle_wait,
gathered by the main task; nothing else runs.

usage: wall_idle.py [N]
"""
import asyncio
import sys

from _wl import fact, ready


async def idle_wait(event):
    await event.wait()


async def main(n):
    event = asyncio.Event()
    tasks = [asyncio.ensure_future(idle_wait(event)) for _ in range(n)]
    await asyncio.sleep(0.2)
    fact(tasks=n)
    ready()
    await asyncio.gather(*tasks)


asyncio.new_event_loop().run_until_complete(main(int(sys.argv[1]) if len(sys.argv) > 1 else 5000))
