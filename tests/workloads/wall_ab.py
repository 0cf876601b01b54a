"""Wall-time workload: task A awaits asyncio.sleep in wait_a 70% of the time and computes
in work_a 30%; task B the reverse (work_b 70%, wait_b 30%). Both run on one loop; each
task measures the time it really spends in each function (a wait that ends while the other
task computes lasts longer than asked), printed on request as a JSON fact. A periodic loop
callback computes in cb_work outside any task.

usage: wall_ab.py TRUTH_FILE  (the measured times, as JSON, rewritten every 0.2 s)
"""
import asyncio
import json
import os
import random
import sys
import time

from _wl import ready

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


def period():
    # irregular, so that no sampler stays in phase with the cycle
    return PERIOD * random.uniform(0.5, 1.5)


async def task_a():
    while True:
        p = period()
        work_a(0.3 * p)
        await wait_a(0.7 * p)


async def task_b():
    while True:
        p = period()
        work_b(0.7 * p)
        await wait_b(0.3 * p)


def cb_work(loop):
    t = time.monotonic()
    spin(0.002)
    spent["cb_work"] += time.monotonic() - t
    loop.call_later(0.1, cb_work, loop)


def report(loop, path):
    with open(path + ".tmp", "w") as f:
        json.dump(spent, f)
    os.rename(path + ".tmp", path)
    loop.call_later(0.2, report, loop, path)


async def main():
    loop = asyncio.get_running_loop()
    a = loop.create_task(task_a())
    b = loop.create_task(task_b())
    loop.call_later(0.1, cb_work, loop)
    report(loop, sys.argv[1])
    ready()
    await asyncio.gather(a, b)


asyncio.new_event_loop().run_until_complete(main())
