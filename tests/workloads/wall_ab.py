"""Wall-time workload: task A awaits asyncio.sleep in wait_a 70% of the time and computes
in work_a 30%; task B the reverse (work_b 70%, wait_b 30%). Both run on one loop; each
task measures the time it really spends in each function (a wait that ends while the other
task computes lasts longer than asked), printed on request as a JSON fact. A periodic loop
callback computes in cb_work outside any task.

usage: wall_ab.py  (prints READY; then each line on stdin prints the measured times)
"""
import asyncio
import sys
import threading
import time

from _wl import fact, ready

PERIOD = 0.05
spent = {"wait_a": 0.0, "work_a": 0.0, "wait_b": 0.0, "work_b": 0.0, "cb_work": 0.0}


def spin(seconds):
    end = time.monotonic() + seconds
    x = 0
    while time.monotonic() < end:
        x += 1
    return x


def work_a(seconds):
    t = time.monotonic()
    spin(seconds)
    spent["work_a"] += time.monotonic() - t


def work_b(seconds):
    t = time.monotonic()
    spin(seconds)
    spent["work_b"] += time.monotonic() - t


async def wait_a(seconds):
    t = time.monotonic()
    await asyncio.sleep(seconds)
    spent["wait_a"] += time.monotonic() - t


async def wait_b(seconds):
    t = time.monotonic()
    await asyncio.sleep(seconds)
    spent["wait_b"] += time.monotonic() - t


async def task_a():
    while True:
        work_a(0.3 * PERIOD)
        await wait_a(0.7 * PERIOD)


async def task_b():
    while True:
        work_b(0.7 * PERIOD)
        await wait_b(0.3 * PERIOD)


def cb_work(loop):
    t = time.monotonic()
    spin(0.002)
    spent["cb_work"] += time.monotonic() - t
    loop.call_later(0.1, cb_work, loop)


def report(loop):
    def on_line():
        while sys.stdin.readline():
            loop.call_soon_threadsafe(lambda: fact(spent=dict(spent)))

    threading.Thread(target=on_line, daemon=True).start()


async def main():
    loop = asyncio.get_event_loop()
    a = loop.create_task(task_a())
    b = loop.create_task(task_b())
    loop.call_later(0.1, cb_work, loop)
    report(loop)
    ready()
    await asyncio.gather(a, b)


asyncio.get_event_loop().run_until_complete(main())
