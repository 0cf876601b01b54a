"""Tasks created without a name, in every way asyncio makes them (Python 3.8+), idle,
and one more that burns CPU, so that a profiler's names can be checked against
CPython's.

    task_names.py

Each task of kind K runs the coroutine function idle_K (busy: busy_unnamed, the main
task: main). Prints {"names": {kind: name}}, the name get_name() gives each task, read
without calling get_name() on them (from 3.12 an unnamed task keeps only its number and
get_name() makes "Task-N" of it, storing the string: the profiler must find the number),
{"lazy": [kinds still holding a number]}, then READY, and runs until killed.
"""
import asyncio
import gc
import json
import sys
import time

V = sys.version_info[:2]
FOREVER = 3600


def held_name(task):
    """What get_name() would return, without calling it."""
    for r in gc.get_referents(task):
        if type(r) is str:
            return r, False
        if type(r) is int:
            return "Task-%d" % r, True
    raise RuntimeError("no name among the referents of %r" % (task,))


async def idle_create_task():
    await asyncio.sleep(FOREVER)


async def idle_loop_create_task():
    await asyncio.sleep(FOREVER)


async def idle_task_class():
    await asyncio.sleep(FOREVER)


async def idle_ensure_future():
    await asyncio.sleep(FOREVER)


async def idle_gather():
    await asyncio.sleep(FOREVER)


async def idle_taskgroup():
    await asyncio.sleep(FOREVER)


async def idle_eager():
    await asyncio.sleep(FOREVER)


async def idle_got_name():
    await asyncio.sleep(FOREVER)


async def busy_unnamed():
    while True:
        end = time.perf_counter() + 0.004
        while time.perf_counter() < end: pass  # BUSY
        await asyncio.sleep(0.001)


async def taskgroup_holder(made):
    async with asyncio.TaskGroup() as tg:
        made["taskgroup"] = tg.create_task(idle_taskgroup())
        await asyncio.sleep(FOREVER)


async def main():
    loop = asyncio.get_running_loop()
    made = {"main": asyncio.current_task()}
    made["create_task"] = asyncio.create_task(idle_create_task())
    made["loop_create_task"] = loop.create_task(idle_loop_create_task())
    made["task_class"] = asyncio.Task(idle_task_class())
    made["ensure_future"] = asyncio.ensure_future(idle_ensure_future())
    gathered = asyncio.gather(idle_gather())
    made["got_name"] = asyncio.create_task(idle_got_name())
    made["got_name"].get_name()  # now a string
    made["busy"] = asyncio.create_task(busy_unnamed())
    holders = []
    if V >= (3, 11):
        holders.append(asyncio.create_task(taskgroup_holder(made), name="taskgroup-holder"))
    if V >= (3, 12):
        loop.set_task_factory(asyncio.eager_task_factory)
        made["eager"] = asyncio.create_task(idle_eager())
        loop.set_task_factory(None)
    await asyncio.sleep(0.2)
    for t in asyncio.all_tasks():
        if t.get_coro().__name__ == "idle_gather":
            made["gather"] = t
    held = {k: held_name(t) for k, t in made.items()}
    print(json.dumps({"names": {k: n for k, (n, _) in held.items()}}))
    print(json.dumps({"lazy": sorted(k for k, (_, lazy) in held.items() if lazy)}))
    print("READY", flush=True)
    await asyncio.gather(gathered, *holders)


asyncio.run(main())
