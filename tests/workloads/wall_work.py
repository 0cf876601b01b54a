"""Tasks that spend their time awaiting work in a thread, for
tests/integration/test_wall_work.py (wall mode).

Under asyncio.run, whose task is named "wl-main" and awaits them all, one named task per
way to hand a function to a thread (MECHS), each looping: wait_X awaits the function
job_X, which sleeps JOB seconds in the worker thread (time.sleep, in job_X's own frame),
then at once the next call. run-default awaits loop.run_in_executor(None, job_default);
to-thread awaits asyncio.to_thread(job_to_thread) (3.9+); via-anyio awaits
anyio.to_thread.run_sync(job_anyio) where anyio imports (from argv[1] as in
thread_work.py for an interpreter without anyio of its own). A mechanism that does not
exist here is not run, and its fact says why. Two more tasks, pool-a and pool-b, share
a ThreadPoolExecutor of one thread ("queue-pool"), each awaiting
loop.run_in_executor(QUEUE, job_pool_X) (0.1-0.3 s at random, 0.2 s on average), so that
each one's job waits in the pool's queue while the other's runs: about half their waiting
is queued. Their lengths vary so that the queue's turns do not keep step with the
profiler's ticks: with a fixed 0.2 s the turns came every 0.4 s, a whole number of tick
periods, the ticks kept falling at the same point of each turn, and one task's share of
the queued ticks came out 7-11% above its measure and the other's as much below.

Each task measures its own waiting: from right before its await to right after it, with
time.monotonic(), and how long its jobs were queued: from right before the submit to
the job's first line in the worker. Facts, before READY: {"pid"}, one {"mech": {name, task, fn, why}} per
mechanism (why null when it runs). READY once each running task has awaited a call.
Then each line read on stdin is answered with one line {"now": {"t": monotonic now,
"wait": {task: seconds awaited so far, the current await included}, "queued": {task:
seconds its jobs were queued so far, likewise}, "calls": {task: n},
"tids": {fn: [native ids of the threads that ran it]}, "names": {tid: Python name}}}.
"""
import asyncio
import concurrent.futures
import json
import os
import random
import sys
import threading
import time

import _wl

JOB = 0.2  # seconds each job sleeps in its worker

try:
    try:
        import anyio
    except ImportError:
        if len(sys.argv) < 2:
            raise
        sys.path.append(sys.argv[1])
        import anyio
    import anyio.to_thread
    ANYIO_WHY = None
except ImportError as e:
    ANYIO_WHY = "%s (%d.%d) cannot import anyio: %s" % (
        sys.executable, sys.version_info[0], sys.version_info[1], e)

TO_THREAD_WHY = None if hasattr(asyncio, "to_thread") else (
    "asyncio.to_thread does not exist before 3.9 (%s is %d.%d)" % (
        sys.executable, *sys.version_info[:2]))

# (mechanism, task, function, why not)
MECHS = [("default", "run-default", "job_default", None),
         ("to_thread", "to-thread", "job_to_thread", TO_THREAD_WHY),
         ("anyio", "via-anyio", "job_anyio", ANYIO_WHY),
         ("queue_a", "pool-a", "job_pool_a", None),
         ("queue_b", "pool-b", "job_pool_b", None)]
QUEUE = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="queue-pool")

lock = threading.Lock()
done = {task: 0.0 for _, task, _, _ in MECHS}  # seconds of finished awaits
since = {task: None for _, task, _, _ in MECHS}  # monotonic start of the current await
calls = {task: 0 for _, task, _, _ in MECHS}
queued = {task: 0.0 for _, task, _, _ in MECHS}  # seconds of jobs queued, started
submit = {task: None for _, task, _, _ in MECHS}  # monotonic submit of a job not started
task_of = {fn: task for _, task, fn, _ in MECHS}
tids = {fn: set() for _, _, fn, _ in MECHS}
names = {}


def noted(fn):
    tid = _wl.native_id()
    now = time.monotonic()
    with lock:
        task = task_of[fn]
        if submit[task] is not None:
            queued[task] += now - submit[task]
            submit[task] = None
        tids[fn].add(tid)
        names[tid] = threading.current_thread().name


def job_default():
    noted("job_default")
    time.sleep(JOB)


def job_to_thread():
    noted("job_to_thread")
    time.sleep(JOB)


def job_anyio():
    noted("job_anyio")
    time.sleep(JOB)


async def wait_default():
    return await asyncio.get_running_loop().run_in_executor(None, job_default)


async def wait_to_thread():
    return await asyncio.to_thread(job_to_thread)


async def wait_anyio():
    return await anyio.to_thread.run_sync(job_anyio)


def job_pool_a():
    noted("job_pool_a")
    time.sleep(random.uniform(JOB / 2, JOB * 1.5))


def job_pool_b():
    noted("job_pool_b")
    time.sleep(random.uniform(JOB / 2, JOB * 1.5))


async def wait_pool_a():
    return await asyncio.get_running_loop().run_in_executor(QUEUE, job_pool_a)


async def wait_pool_b():
    return await asyncio.get_running_loop().run_in_executor(QUEUE, job_pool_b)


async def waiter(task, coro_fn):
    while True:
        with lock:
            since[task] = submit[task] = time.monotonic()
        await coro_fn()
        with lock:
            done[task] += time.monotonic() - since[task]
            since[task] = None
            calls[task] += 1


def snapshot():
    with lock:
        now = time.monotonic()
        return dict(t=now, wait={k: done[k] + (now - since[k] if since[k] is not None else 0)
                                 for k in done},
                    queued={k: queued[k] + (now - submit[k] if submit[k] is not None else 0)
                            for k in queued},
                    calls=dict(calls), tids={fn: sorted(t) for fn, t in tids.items()},
                    names={str(t): n for t, n in names.items()})


def answer():
    for _ in sys.stdin:
        print(json.dumps(dict(now=snapshot())), flush=True)


async def main():
    asyncio.current_task().set_name("wl-main")
    loop = asyncio.get_running_loop()
    coros = {"default": wait_default, "to_thread": wait_to_thread, "anyio": wait_anyio,
             "queue_a": wait_pool_a, "queue_b": wait_pool_b}
    run = [(task, coros[m]) for m, task, _, why in MECHS if why is None]
    tasks = [loop.create_task(waiter(task, fn), name=task) for task, fn in run]
    while True:
        with lock:
            if all(calls[task] for task, _ in run):
                break
        await asyncio.sleep(0.01)
    threading.Thread(target=answer, name="answer", daemon=True).start()
    _wl.ready()
    await asyncio.gather(*tasks)


if __name__ == "__main__":
    _wl.fact(pid=os.getpid())
    for m, task, fn, why in MECHS:
        _wl.fact(mech=dict(name=m, task=task, fn=fn, why=why))
    asyncio.run(main())
