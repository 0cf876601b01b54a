"""Short-lived tasks, for tests/integration/test_wall_short.py (wall mode): the main task
(named "wl-main", in spawn) creates tasks of three groups, about 200 per second in all,
each group's task running its own coroutine function that awaits once and returns:

  group  function    awaits                                      tasks per second  name
  5ms    short_5ms   asyncio.sleep(0.005)                        100               g5-N
  20ms   short_20ms  a future set by loop.call_later(0.02, ...)   60                g20-N
  50ms   short_50ms  asyncio.sleep(0.05)                          40                g50-N

in a random order (so that no group follows another in phase), at times spread over
each second. A task is referenced only until it is done: its memory is freed then, and
the next task created (of any group) is likely to take its address; the workload counts
the tasks whose address (id()) had been held by an ended task of another group, so that
a profiler that counts a task after its end, or reads one task's stack under another's
name, is caught at it.

Each task's life is measured with time.monotonic(), from right before create_task (the
task exists from then: a loaded loop may run its first line much later, and that wait is
part of a request's latency too) to its own last line.
Facts, before READY: {"pid"}, one {"group": {name, fn, prefix, seconds, rate}} per group.
READY once a task of each group has ended. Then each line read on stdin is answered
with one line {"now": {"t": monotonic now, "life": {group: task-seconds lived so far,
the tasks alive now counted up to now}, "started": {group: tasks started}, "ended":
{group: tasks ended}, "reused": {group: tasks created at an address an ended task of
another group had held}, "lives": {task name: its life} (the tasks ended since the
previous answer), "alive": [names of the tasks alive now]}}.
"""
import asyncio
import json
import os
import random
import sys
import threading
import time

import _wl

# (group, function, task name prefix, seconds awaited, tasks per second)
GROUPS = [("5ms", "short_5ms", "g5-", 0.005, 100),
          ("20ms", "short_20ms", "g20-", 0.020, 60),
          ("50ms", "short_50ms", "g50-", 0.050, 40)]
RATE = sum(g[4] for g in GROUPS)

lock = threading.Lock()
done = {g[0]: 0.0 for g in GROUPS}  # seconds lived by ended tasks
alive = {}  # task name -> (group, monotonic right before its create_task)
started = {g[0]: 0 for g in GROUPS}
ended = {g[0]: 0 for g in GROUPS}
reused = {g[0]: 0 for g in GROUPS}
lives = {}  # task name -> life, since the previous answer
owner = {}  # id() of an ended task -> its group


def end():
    name = asyncio.current_task().get_name()
    t = time.monotonic()
    with lock:
        group, t0 = alive.pop(name)
        done[group] += t - t0
        ended[group] += 1
        lives[name] = t - t0


async def short_5ms():
    await asyncio.sleep(0.005)
    end()


async def short_20ms():
    fut = asyncio.get_running_loop().create_future()
    asyncio.get_running_loop().call_later(0.020, fut.set_result, None)
    await fut
    end()


async def short_50ms():
    await asyncio.sleep(0.050)
    end()


COROS = {"5ms": short_5ms, "20ms": short_20ms, "50ms": short_50ms}


def snapshot():
    with lock:
        now = time.monotonic()
        life = dict(done)
        ls = dict(lives)
        lives.clear()
        for name, (group, t0) in alive.items():
            life[group] += now - t0
        return dict(t=now, life=life, started=dict(started), ended=dict(ended),
                    reused=dict(reused), lives=ls, alive=sorted(alive))


def answer():
    for _ in sys.stdin:
        print(json.dumps(dict(now=snapshot())), flush=True)


def spawn_one(loop, keep, serial):
    group, _, prefix, _, _ = random.choices(GROUPS, weights=[g[4] for g in GROUPS])[0]
    name = "%s%d" % (prefix, serial)
    with lock:
        alive[name] = (group, time.monotonic())
        started[group] += 1
    task = loop.create_task(COROS[group](), name=name)
    with lock:
        was = owner.pop(id(task), None)
        if was is not None and was != group:
            reused[group] += 1
    keep.add(task)

    def ended_task(t):
        keep.discard(t)
        with lock:
            owner[id(t)] = group
    task.add_done_callback(ended_task)


async def spawn():
    loop = asyncio.get_running_loop()
    keep = set()
    t0 = time.monotonic()
    made = 0
    ready = False
    while True:
        # as many as are due by now: the rate holds however late the loop wakes
        due = int((time.monotonic() - t0) * RATE)
        while made < due:
            made += 1
            spawn_one(loop, keep, made)
        if not ready:
            with lock:
                ready = all(ended.values())
            if ready:
                threading.Thread(target=answer, name="answer", daemon=True).start()
                _wl.ready()
        await asyncio.sleep(random.uniform(0.001, 0.009))


async def main():
    asyncio.current_task().set_name("wl-main")
    await spawn()


if __name__ == "__main__":
    _wl.fact(pid=os.getpid())
    for group, fn, prefix, seconds, rate in GROUPS:
        _wl.fact(group=dict(name=group, fn=fn, prefix=prefix, seconds=seconds, rate=rate))
    asyncio.run(main())
