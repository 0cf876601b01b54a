"""Shared parts of the thread-work workloads (thread_work.py, pool_work.py): functions
handed to worker threads burn CPU, measure it themselves and note the threads that ran
them; once all have begun, each line read on stdin is answered with what they saw.

The state below is the workload's, guarded by lock: cpu {fn: seconds burnt}, calls {fn:
calls begun}, tids {fn: native ids of the threads that ran it}, names {tid: Python thread
name}. A workload calls track() with its functions before any runs.
"""
import asyncio
import json
import random
import sys
import threading
import time

import _wl

lock = threading.Lock()
owners = {}  # fn: the task that submits it, where one does (owned_by)
cpu = {}
calls = {}
tids = {}
names = {}


def track(funcs):
    """Starts the count of each of funcs (function names) at zero."""
    for fn in funcs:
        cpu[fn], calls[fn], tids[fn] = 0.0, 0, set()


def owned_by(fn):
    """Notes that the current task submits fn: called by the task right before it does."""
    owners[fn] = asyncio.current_task()


def await_owner(fn, limit=1.0):
    """Waits, burning nothing, until the task that submits fn has suspended on its item
    (within limit seconds). A worker may start an item before its task has awaited it (the
    loop's thread preempted between the submit and the await, as on a loaded machine):
    until then the item is no task's, and a profiler rightly shows it as a thread's. The
    functions' CPU is counted from here, so the truth the tests compare against is the
    CPU burnt while a task awaits."""
    task = owners.get(fn)
    deadline = time.monotonic() + limit
    while task is not None and task._fut_waiter is None and time.monotonic() < deadline:
        time.sleep(0.0002)


def begin(fn):
    """A burn function's first step: notes its thread; returns its start CPU time."""
    tid = _wl.native_id()
    with lock:
        calls[fn] += 1
        tids[fn].add(tid)
        names[tid] = threading.current_thread().name
    return time.thread_time()


def account(fn, start):
    """Adds the CPU time the calling thread burnt since start to fn's."""
    with lock:
        cpu[fn] += time.thread_time() - start


def burn(fn, seconds, step=1000):
    """One call of fn: begins it, burns seconds of pure-Python CPU in the calling thread
    (a loop of step additions at a time), accounts for it; returns the count."""
    await_owner(fn)
    start = begin(fn)
    n = 0
    while time.thread_time() - start < seconds:
        for _ in range(step): n += 1  # BURN
    account(fn, start)
    return n


async def pause(jitter):
    """Sleeps a random time up to jitter seconds."""
    await asyncio.sleep(random.uniform(0, jitter))


def snapshot(extra=dict):
    """What the functions did so far, taken under the lock: {cpu, calls, tids, names} and
    the items of extra() (called under the lock too)."""
    with lock:
        out = dict(cpu=dict(cpu), calls=dict(calls),
                   tids={fn: sorted(t) for fn, t in tids.items()},
                   names={str(t): n for t, n in names.items()})
        out.update(extra())
        return out


def answer(snap):
    """Answers each line of stdin with {"now": snap()}, until stdin closes."""
    for _ in sys.stdin:
        print(json.dumps(dict(now=snap())), flush=True)


async def announce(ready, snap):
    """READY once ready() holds under the lock (every function it asks for has begun a
    call, all threads are up), within 60 s; then answers stdin with snap() in a thread."""
    deadline = time.monotonic() + 60
    while True:
        with lock:
            if ready():
                break
        if time.monotonic() > deadline:
            raise SystemExit("not every function ran within 60 s: %s" % snap())
        await asyncio.sleep(0.01)
    threading.Thread(target=answer, args=(snap,), name="answer", daemon=True).start()
    _wl.ready()
