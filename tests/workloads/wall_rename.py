"""Wall-time workload: one task, named name-before, awaits an event in renamed_wait;
SIGUSR1 renames it name-after (Task.set_name) while it stays suspended.

usage: wall_rename.py
"""
import asyncio
import signal

from _wl import ready


async def renamed_wait(event):
    await event.wait()


async def main():
    event = asyncio.Event()
    task = asyncio.ensure_future(renamed_wait(event))
    task.set_name("name-before")
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGUSR1, task.set_name, "name-after")
    await asyncio.sleep(0.2)
    ready()
    await task


asyncio.run(main())
