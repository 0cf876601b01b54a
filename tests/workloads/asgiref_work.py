"""Work asyncio tasks hand to threads through asgiref's sync_to_async (as Django and
Channels run sync code from async views), for tests/integration/test_asgiref_work.py.

sync_to_async(fn) awaits asyncio.wait_for(loop.run_in_executor(executor, partial(
thread_handler, ..., Context.run, fn))): a concurrent.futures.ThreadPoolExecutor item whose
function is asgiref's thread_handler, which runs fn inside a copy of the task's Context.
thread_sensitive=True (asgiref's default) takes its one-thread executor, shared by every
such call of the process (outside async_to_sync); thread_sensitive=False the loop's
default executor.

Under asyncio.run, whose task is named "wl-main" and awaits them all, four named tasks
(TASKS) each loop: handler_X awaits offload_X, which awaits sync_to_async(burn_X,
thread_sensitive=...)(), a function of its own burning CALL_CPU seconds of pure-Python CPU
in the worker, then sleeps up to JITTER seconds. s2a-alpha and s2a-beta are thread
sensitive: their items queue behind each other on the one thread; s2a-gamma and s2a-delta
are not, and share the default executor's threads.

Facts, before READY: {"pid"}, {"asgiref": null or why not}, one {"task": {name, fn, via,
awaits, sensitive}} per task (via: its coroutines, outermost first; awaits: the last frame
of the task's, the one awaiting the executor's future). Without asgiref, READY follows its
fact at once and nothing runs. Otherwise READY comes once each function has begun a call;
then each line read on stdin is answered as tests/workloads/_work.py says. An interpreter
without asgiref of its own takes it from the directory given as argv[1] (Debian's
pure-Python asgiref alone; see test_asgiref_work.py), if any.
"""
import asyncio
import os
import sys

import _wl
import _work

try:  # before any thread burns: an import under GIL contention crawls
    try:
        import asgiref.sync
    except ImportError:
        if len(sys.argv) < 2:
            raise
        sys.path.append(sys.argv[1])
        import asgiref.sync
    from asgiref.sync import sync_to_async
    ASGIREF_WHY = None
except ImportError as e:
    # in a Debian tree, argv[1]'s link leads to the tree's own python3-asgiref, if any
    ASGIREF_WHY = "%s (%d.%d) cannot import asgiref: %s (no python3-asgiref of its own%s)" % (
        sys.executable, sys.version_info[0], sys.version_info[1], e,
        " nor at %s, as its root sees it" % sys.argv[1] if len(sys.argv) > 1 else "")

CALL_CPU = 0.05  # seconds of CPU per call of a burn_X
JITTER = 0.02  # a task sleeps up to this long between its calls
# (task, function, its coroutines, thread_sensitive)
TASKS = [("s2a-alpha", "burn_alpha", ["handler_alpha", "offload_alpha"], True),
         ("s2a-beta", "burn_beta", ["handler_beta", "offload_beta"], True),
         ("s2a-gamma", "burn_gamma", ["handler_gamma", "offload_gamma"], False),
         ("s2a-delta", "burn_delta", ["handler_delta", "offload_delta"], False)]
# the last of a task's frames: asyncio's, awaiting the executor's future
AWAITS = "wait_for"

_work.track([fn for _, fn, _, _ in TASKS])


# each function its own frame, right above the shared burn loop

def burn_alpha():
    return _work.burn("burn_alpha", CALL_CPU)


def burn_beta():
    return _work.burn("burn_beta", CALL_CPU)


def burn_gamma():
    return _work.burn("burn_gamma", CALL_CPU)


def burn_delta():
    return _work.burn("burn_delta", CALL_CPU)


async def offload_alpha():
    _work.owned_by("burn_alpha")
    return await sync_to_async(burn_alpha, thread_sensitive=True)()


async def handler_alpha():
    while True:
        await offload_alpha()
        await _work.pause(JITTER)


async def offload_beta():
    _work.owned_by("burn_beta")
    return await sync_to_async(burn_beta, thread_sensitive=True)()


async def handler_beta():
    while True:
        await offload_beta()
        await _work.pause(JITTER)


async def offload_gamma():
    _work.owned_by("burn_gamma")
    return await sync_to_async(burn_gamma, thread_sensitive=False)()


async def handler_gamma():
    while True:
        await offload_gamma()
        await _work.pause(JITTER)


async def offload_delta():
    _work.owned_by("burn_delta")
    return await sync_to_async(burn_delta, thread_sensitive=False)()


async def handler_delta():
    while True:
        await offload_delta()
        await _work.pause(JITTER)


async def main():
    asyncio.current_task().set_name("wl-main")
    loop = asyncio.get_running_loop()
    tasks = [loop.create_task(globals()[via[0]](), name=name) for name, _, via, _ in TASKS]
    tasks.append(loop.create_task(
        _work.announce(lambda: all(_work.calls.values()), _work.snapshot), name="announce"))
    await asyncio.gather(*tasks)


if __name__ == "__main__":
    _wl.fact(pid=os.getpid())
    _wl.fact(asgiref=ASGIREF_WHY)
    if ASGIREF_WHY:
        _wl.ready()
        sys.stdin.read()  # until the test closes it or kills us
        sys.exit(0)
    for name, fn, via, sensitive in TASKS:
        _wl.fact(task=dict(name=name, fn=fn, via=via + ["__call__"], awaits=AWAITS,
                           sensitive=sensitive))
    asyncio.run(main())
