"""Named asyncio tasks awaiting work in pool threads, for
tests/integration/test_tasks_threads.py: each task loops handing a CPU-bound function of
its own to a pool and awaiting it, so that its worker is nearly always running it.

  req-anyio   anyio.to_thread.run_sync(burn_anyio)  (where anyio imports)
  req-exec    loop.run_in_executor(None, burn_exec)
  req-own     loop.run_in_executor(an own ThreadPoolExecutor, burn_own)
  req-thread  asyncio.to_thread(burn_thread)        (3.9+)

Usage: tasks_threads.py [ANYIO_DIR] (a directory prepended to sys.path, to import a
pure-Python anyio installed for another interpreter). Facts, before READY: {"pid"},
{"anyio": null or why not}, one {"task": {name, fn}} per task that runs. READY once every
function has begun a call. Each line read on stdin is answered with {"now": {"tids": {fn:
[tid...]}, "names": {tid: Python thread name}}}: the native ids of the threads that ran
each function (threading.get_native_id(), read inside it) and their names.
"""
import asyncio
import concurrent.futures
import json
import os
import sys
import threading
import time

import _wl

if len(sys.argv) > 1:
    sys.path.insert(0, sys.argv[1])
try:  # before any thread burns: an import under GIL contention crawls
    import anyio
    import anyio.to_thread
    ANYIO_WHY = None
except ImportError as e:
    ANYIO_WHY = "%s (%d.%d) cannot import anyio: %s" % (
        sys.executable, sys.version_info[0], sys.version_info[1], e)

CALL_CPU = 0.2  # seconds of CPU per call
lock = threading.Lock()
tids = {}
names = {}


def burn(fn):
    tid = _wl.native_id()
    with lock:
        tids.setdefault(fn, set()).add(tid)
        names[tid] = threading.current_thread().name
    start, n = time.thread_time(), 0
    while time.thread_time() - start < CALL_CPU:
        for _ in range(1000): n += 1  # BURN
    return n


# each function its own, so that its frame names the task's work

def burn_anyio():
    return burn("burn_anyio")


def burn_exec():
    return burn("burn_exec")


def burn_own():
    return burn("burn_own")


def burn_thread():
    return burn("burn_thread")


async def handler_anyio():
    while True:
        await anyio.to_thread.run_sync(burn_anyio)


async def handler_exec():
    while True:
        await asyncio.get_running_loop().run_in_executor(None, burn_exec)


OWN_POOL = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="own-pool")


async def handler_own():
    while True:
        await asyncio.get_running_loop().run_in_executor(OWN_POOL, burn_own)


async def handler_thread():
    while True:
        await asyncio.to_thread(burn_thread)


TASKS = [("req-anyio", "burn_anyio", handler_anyio, ANYIO_WHY is None),
         ("req-exec", "burn_exec", handler_exec, True),
         ("req-own", "burn_own", handler_own, True),
         ("req-thread", "burn_thread", handler_thread, hasattr(asyncio, "to_thread"))]


def answer():
    for _ in sys.stdin:
        with lock:
            now = dict(tids={fn: sorted(t) for fn, t in tids.items()},
                       names={str(t): n for t, n in names.items()})
        print(json.dumps(dict(now=now)), flush=True)


async def main():
    asyncio.current_task().set_name("wl-main")
    loop = asyncio.get_running_loop()
    running = [(name, fn, h) for name, fn, h, ok in TASKS if ok]
    tasks = [loop.create_task(h(), name=name) for name, _, h in running]
    deadline = time.monotonic() + 60
    while True:
        with lock:
            if all(fn in tids for _, fn, _ in running):
                break
        if time.monotonic() > deadline:
            raise SystemExit("not every function ran within 60 s: %s" % tids)
        await asyncio.sleep(0.01)
    threading.Thread(target=answer, name="answer", daemon=True).start()
    _wl.ready()
    await asyncio.gather(*tasks)


if __name__ == "__main__":
    _wl.fact(pid=os.getpid())
    _wl.fact(anyio=ANYIO_WHY)
    for name, fn, _, ok in TASKS:
        if ok:
            _wl.fact(task=dict(name=name, fn=fn))
    asyncio.run(main())
