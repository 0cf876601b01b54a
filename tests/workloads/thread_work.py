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
import os
import sys
import threading

import _wl
import _work

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

_work.track(FUNCS)


# each function its own frame, right above the shared burn loop

def burn_alpha():
    return _work.burn("burn_alpha", CALL_CPU)


def burn_beta():
    return _work.burn("burn_beta", CALL_CPU)


def burn_gamma():
    return _work.burn("burn_gamma", CALL_CPU)


def burn_plain():
    """The plain thread's: burns CALL_CPU like the others, called again and again."""
    return _work.burn("burn_plain", CALL_CPU)


def plain_thread():
    while True:
        burn_plain()


async def offload_alpha():
    _work.owned_by("burn_alpha")
    return await anyio.to_thread.run_sync(burn_alpha)


async def handler_alpha():
    while True:
        await offload_alpha()
        await _work.pause(JITTER)


async def offload_beta():
    _work.owned_by("burn_beta")
    return await anyio.to_thread.run_sync(burn_beta)


async def handler_beta():
    while True:
        await offload_beta()
        await _work.pause(JITTER)


async def offload_gamma():
    _work.owned_by("burn_gamma")
    return await anyio.to_thread.run_sync(burn_gamma)


async def handler_gamma():
    while True:
        await offload_gamma()
        await _work.pause(JITTER)


async def main():
    asyncio.current_task().set_name("wl-main")
    handlers = {"req-alpha": handler_alpha, "req-beta": handler_beta,
                "req-gamma": handler_gamma}
    tasks = [asyncio.get_running_loop().create_task(handlers[name](), name=name)
             for name, _, _ in TASKS]
    ready = asyncio.get_running_loop().create_task(
        _work.announce(lambda: all(_work.calls.values()), _work.snapshot), name="announce")
    await asyncio.gather(*tasks, ready)


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
