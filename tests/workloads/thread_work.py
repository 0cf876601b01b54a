"""Work an asyncio task hands to anyio's worker threads (anyio.to_thread.run_sync, as
FastAPI and Starlette run a `def` endpoint), for tests/integration/test_thread_work.py.

Under asyncio.run, whose task is named "wl-main" and awaits them all, three named tasks
(TASKS: req-alpha, req-beta, req-gamma) each loop: their coroutine handler_X awaits
offload_X, which awaits anyio.to_thread.run_sync(burn_X), a function of its own that burns
CALL_CPU seconds of pure-Python CPU in the worker thread, then sleeps up to JITTER seconds
(so that anyio's pool, which hands out its most recently idle worker, moves its threads
between the tasks: one thread runs the work of several tasks in turn). One plain
threading.Thread, "plain-burner", started before the loop and outside any task, burns in
burn_plain the whole time.

Facts, before READY: {"pid"}, {"anyio": null or why not}, one {"task": {name, fn, via}}
per task (via: the task's coroutines, outermost first, down to the anyio call) and
{"plain": {name, fn}}. Without anyio, READY follows the anyio fact at once and nothing
runs. Otherwise READY comes once each function has run once. Then each line read on
stdin is answered with one line {"now": {"cpu": {fn: seconds}, "calls": {fn: n}, "tids":
{fn: [tid...]}, "names": {tid: Python thread name}}}: the CPU time (thread_time, measured
by the function itself) each function has burnt so far, how many calls have begun, and
the native ids of the threads that ran it (threading.get_native_id(), read inside it).
An interpreter without anyio of its own takes it from the directory given as argv[1]
(Debian's pure-Python anyio, sniffio and idna; see test_thread_work.py), if any.
"""
import asyncio
import json
import os
import random
import sys
import threading
import time

import _wl

try:  # before any thread burns: an import under GIL contention crawls
    try:
        import anyio
    except ImportError:
        if len(sys.argv) < 2:
            raise
        # argv[1]: a directory of Debian's pure-Python anyio, sniffio and idna alone, for an
        # interpreter that has no anyio of its own (pyenv's)
        sys.path.append(sys.argv[1])
        import anyio
    import anyio.to_thread
    ANYIO_WHY = None
except ImportError as e:
    ANYIO_WHY = "%s (%d.%d) cannot import anyio: %s" % (
        sys.executable, sys.version_info[0], sys.version_info[1], e)

CALL_CPU = 0.07  # seconds of CPU per call of a burn_X
JITTER = 0.02  # a task sleeps up to this long between its calls
PLAIN_NAME = "plain-burner"
TASKS = [("req-alpha", "burn_alpha", ["handler_alpha", "offload_alpha"]),
         ("req-beta", "burn_beta", ["handler_beta", "offload_beta"]),
         ("req-gamma", "burn_gamma", ["handler_gamma", "offload_gamma"])]
FUNCS = [fn for _, fn, _ in TASKS] + ["burn_plain"]

lock = threading.Lock()
cpu = {fn: 0.0 for fn in FUNCS}
calls = {fn: 0 for fn in FUNCS}
tids = {fn: set() for fn in FUNCS}
names = {}


def begin(fn):
    """A burn function's first step: notes its thread; returns its start CPU time."""
    tid = _wl.native_id()
    with lock:
        calls[fn] += 1
        tids[fn].add(tid)
        names[tid] = threading.current_thread().name
    return time.thread_time()


def account(fn, start):
    with lock:
        cpu[fn] += time.thread_time() - start


# each function its own loop, so that its frame is the sample's leaf

def burn_alpha():
    start = begin("burn_alpha")
    n = 0
    while time.thread_time() - start < CALL_CPU:
        for _ in range(1000): n += 1  # BURN
    account("burn_alpha", start)
    return n


def burn_beta():
    start = begin("burn_beta")
    n = 0
    while time.thread_time() - start < CALL_CPU:
        for _ in range(1000): n += 1  # BURN
    account("burn_beta", start)
    return n


def burn_gamma():
    start = begin("burn_gamma")
    n = 0
    while time.thread_time() - start < CALL_CPU:
        for _ in range(1000): n += 1  # BURN
    account("burn_gamma", start)
    return n


def burn_plain():
    """The plain thread's: burns CALL_CPU like the others, called again and again."""
    start = begin("burn_plain")
    n = 0
    while time.thread_time() - start < CALL_CPU:
        for _ in range(1000): n += 1  # BURN
    account("burn_plain", start)
    return n


def plain_thread():
    while True:
        burn_plain()


async def pause():
    await asyncio.sleep(random.uniform(0, JITTER))


async def offload_alpha():
    return await anyio.to_thread.run_sync(burn_alpha)


async def handler_alpha():
    while True:
        await offload_alpha()
        await pause()


async def offload_beta():
    return await anyio.to_thread.run_sync(burn_beta)


async def handler_beta():
    while True:
        await offload_beta()
        await pause()


async def offload_gamma():
    return await anyio.to_thread.run_sync(burn_gamma)


async def handler_gamma():
    while True:
        await offload_gamma()
        await pause()


def snapshot():
    with lock:
        return dict(cpu=dict(cpu), calls=dict(calls),
                    tids={fn: sorted(t) for fn, t in tids.items()},
                    names={str(t): n for t, n in names.items()})


def answer():
    """Answers each line of stdin with a snapshot, until stdin closes."""
    for _ in sys.stdin:
        print(json.dumps(dict(now=snapshot())), flush=True)


async def main():
    asyncio.current_task().set_name("wl-main")
    handlers = {"req-alpha": handler_alpha, "req-beta": handler_beta,
                "req-gamma": handler_gamma}
    tasks = [asyncio.get_running_loop().create_task(handlers[name](), name=name)
             for name, _, _ in TASKS]
    ready = asyncio.get_running_loop().create_task(announce(), name="announce")
    await asyncio.gather(*tasks, ready)


async def announce():
    """READY once every function has begun a call (all threads are up)."""
    deadline = time.monotonic() + 60
    while True:
        with lock:
            if all(calls.values()):
                break
        if time.monotonic() > deadline:
            raise SystemExit("not every function ran within 60 s: %s" % snapshot())
        await asyncio.sleep(0.01)
    threading.Thread(target=answer, name="answer", daemon=True).start()
    _wl.ready()


if __name__ == "__main__":
    _wl.fact(pid=os.getpid())
    _wl.fact(anyio=ANYIO_WHY)
    if ANYIO_WHY:
        _wl.ready()
        sys.stdin.read()  # until the test closes it or kills us
        sys.exit(0)
    for name, fn, via in TASKS:
        _wl.fact(task=dict(name=name, fn=fn, via=via))
    _wl.fact(plain=dict(name=PLAIN_NAME, fn="burn_plain"))
    threading.Thread(target=plain_thread, name=PLAIN_NAME, daemon=True).start()
    asyncio.run(main())
