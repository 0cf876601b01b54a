"""Work asyncio tasks hand to concurrent.futures.ThreadPoolExecutor threads, for
tests/integration/test_pool_work.py.

Under asyncio.run, whose task is named "wl-main" and awaits them all:

- MECHS: one named task per way asyncio hands a function to a pool, each looping
  handler_X -> offload_X -> the await, with a function of its own (burn_X, CALL_CPU
  seconds of pure-Python CPU per call) then a pause of up to JITTER seconds:
  run-default awaits loop.run_in_executor(None, burn_default) (the loop's default
  executor: threads asyncio_N, on 3.8 ThreadPoolExecutor-N_M), run-own awaits
  loop.run_in_executor(OWN, burn_own) (OWN a ThreadPoolExecutor(max_workers=2,
  thread_name_prefix="own-pool")), to-thread awaits asyncio.to_thread(burn_to_thread)
  (3.9+; before, the task is not started and the "to_thread" fact says why).
- CHURN: four tasks churn-0..churn-3 share one ThreadPoolExecutor(max_workers=2,
  thread_name_prefix="churn-pool"), each awaiting loop.run_in_executor(CHURN,
  churn_work_K) over and over, items of CHURN_CPU seconds, so that items queue behind
  each other and a worker runs the items of every task in turn.
- ORPHANS: orphan-owner awaits asyncio.wait_for(loop.run_in_executor(None, burn_orphan),
  ORPHAN_TIMEOUT) and catches the timeout; cancel-victim awaits
  loop.run_in_executor(None, burn_cancelled) until the task "canceller" cancels it
  (CANCEL_AFTER seconds after the function began) and catches the CancelledError. Each
  function burns in its own frame until its task has caught the exception and said so
  (a threading.Event), then for the rest of its ORPHAN_CPU seconds in orphan_left
  (cancelled_left): no task awaits that work any more. The task meanwhile sleeps until
  the function returns (or, a call of burn_orphan still queued at the timeout being
  cancelled, NEVER_RAN seconds), then does it again.
- PLAIN: a threading.Thread "plain-submitter", started outside any loop, calls
  submit(burn_plain_submit).result() on a ThreadPoolExecutor(max_workers=1,
  thread_name_prefix="plain-pool") of its own, again and again.

The default executor's threads pass from run-default to to-thread, orphan-owner and
cancel-victim.

Facts, before READY: {"pid"}, {"to_thread": null or why not}, one {"task": {name, fn,
via, awaits, pool}} per MECHS task (via: its coroutines, outermost first; awaits: the
last frame of the task's, the one that awaits the executor's future), one {"churn":
{name, fn, via, pool}} per churn task, one {"orphan": {name, fn, left, how}} per orphan
task, {"plain": {thread, fn, pool}}. READY comes once each function has begun a call.
Then each line read on stdin is answered with one line {"now": {"cpu": {fn: seconds},
"calls": {fn: n}, "tids": {fn: [tid...]}, "names": {tid: Python thread name},
"submitters": {fn: [task names, or "thread NAME" outside a task]}, "orphans": {fn:
{"abandoned": n, "stuck": n, "never_ran": n}}}}: the CPU time (time.thread_time,
measured by the function itself, a long call every 10 ms) each function has burnt so
far (orphan_left and cancelled_left: the part of burn_orphan's and burn_cancelled's
after their task let go), how many calls have begun, the native ids of the threads
that ran it (read inside it), who submitted it, and how many orphan calls reached their
left phase, gave up waiting for it, or (burn_orphan) were still queued at the timeout
and so never ran.
"""
import asyncio
import concurrent.futures
import os
import random
import sys
import threading
import time

import _wl
import _work

CALL_CPU = 0.06  # seconds of CPU per call of a burn_X
JITTER = 0.02  # a MECHS task sleeps up to this long between its calls
CHURN_CPU = (0.002, 0.005)  # seconds of CPU per churn item: short, many of them
ORPHAN_CPU = 0.5  # seconds of CPU per call of burn_orphan, burn_cancelled
ORPHAN_TIMEOUT = 0.05  # wait_for's timeout on burn_orphan
CANCEL_AFTER = 0.05  # the canceller cancels cancel-victim this long after burn_cancelled began
STUCK = 30  # an orphan function stops waiting for its task to let go after this long
NEVER_RAN = 1  # orphan-owner stops waiting for a call that has not begun after this long

HAS_TO_THREAD = hasattr(asyncio, "to_thread")
TO_THREAD_WHY = None if HAS_TO_THREAD else (
    "asyncio.to_thread does not exist before 3.9 (%s is %d.%d.%d)" % (
        sys.executable, *sys.version_info[:3]))

OWN = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="own-pool")
CHURN = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="churn-pool")
PLAIN = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="plain-pool")

# (task, function, its coroutines, the frame that awaits the future, pool)
MECHS = [("run-default", "burn_default", ["handler_default", "offload_default"],
          "offload_default", "default"),
         ("run-own", "burn_own", ["handler_own", "offload_own"], "offload_own", "own-pool"),
         ("to-thread", "burn_to_thread", ["handler_to_thread", "offload_to_thread"],
          "to_thread", "default")]
if not HAS_TO_THREAD:
    MECHS = MECHS[:2]
CHURN_TASKS = [("churn-%d" % k, "churn_work_%d" % k) for k in range(4)]
ORPHANS = [("orphan-owner", "burn_orphan", "orphan_left", "wait_for"),
           ("cancel-victim", "burn_cancelled", "cancelled_left", "cancel")]
PLAIN_THREAD = "plain-submitter"
FUNCS = ([fn for _, fn, _, _, _ in MECHS] + [fn for _, fn in CHURN_TASKS] +
         [fn for _, fn, _, _ in ORPHANS] + [left for _, _, left, _ in ORPHANS] +
         ["burn_plain_submit"])

_work.track(FUNCS)
submitters = {fn: set() for fn in FUNCS}
orphans = {fn: dict(abandoned=0, stuck=0, never_ran=0) for _, fn, _, _ in ORPHANS}

# burn_orphan (burn_cancelled) has begun; orphan-owner has caught the timeout
# (cancel-victim the CancelledError); burn_orphan (burn_cancelled) has returned
began = {fn: threading.Event() for _, fn, _, _ in ORPHANS}
let_go = {fn: threading.Event() for _, fn, _, _ in ORPHANS}
returned = {fn: threading.Event() for _, fn, _, _ in ORPHANS}


def submitted(fn):
    """Notes who submits fn: the current task's name (or the thread's, outside a loop)."""
    try:
        who = asyncio.current_task().get_name()
        _work.owned_by(fn)
    except RuntimeError:
        who = "thread " + threading.current_thread().name
    with _work.lock:
        submitters[fn].add(who)


def progress(fn, last):
    """Accounts fn's CPU time since last every 10 ms of it (a long call is seen while it
    runs); returns the new last."""
    now = time.thread_time()
    if now - last < 0.01:
        return last
    with _work.lock:
        _work.cpu[fn] += now - last
    return now


# each function its own frame, right above the shared burn loop

def burn_default():
    return _work.burn("burn_default", CALL_CPU)


def burn_own():
    return _work.burn("burn_own", CALL_CPU)


def burn_to_thread():
    return _work.burn("burn_to_thread", CALL_CPU)


def burn_plain_submit():
    return _work.burn("burn_plain_submit", CALL_CPU)


def churn(fn):
    return _work.burn(fn, random.uniform(*CHURN_CPU), step=100)


def churn_work_0():
    return churn("churn_work_0")


def churn_work_1():
    return churn("churn_work_1")


def churn_work_2():
    return churn("churn_work_2")


def churn_work_3():
    return churn("churn_work_3")


def burn_left(left, start):
    """The part of an orphan function after its task let go, in the frame left
    (orphan_left, cancelled_left): burns until the call has had ORPHAN_CPU seconds since
    start, accounting left's CPU every 10 ms."""
    n, last = 0, time.thread_time()
    while last - start < ORPHAN_CPU:
        for _ in range(1000): n += 1  # BURN
        last = progress(left, last)
    return n


def orphan_left(start):
    """burn_orphan's CPU once orphan-owner stopped waiting for it."""
    return burn_left("orphan_left", start)


def cancelled_left(start):
    """burn_cancelled's CPU once cancel-victim's await was cancelled."""
    return burn_left("cancelled_left", start)


def orphaned(fn, left):
    """One call of an orphan function fn (burn_orphan, burn_cancelled): burns until its
    task lets go of it (orphan-owner's wait_for times out, cancel-victim's await is
    cancelled), then the rest in left (orphan_left, cancelled_left); gives up waiting
    after STUCK seconds. Counts which happened; sets fn's events."""
    start = _work.begin(fn)
    began[fn].set()
    try:
        n, deadline = 0, time.monotonic() + STUCK
        while not let_go[fn].is_set():  # its task still awaits it
            if time.monotonic() > deadline:
                break
            for _ in range(1000): n += 1  # BURN
        if let_go[fn].is_set():
            with _work.lock:
                _work.calls[left.__name__] += 1
                _work.tids[left.__name__].add(_wl.native_id())
                orphans[fn]["abandoned"] += 1
            n += left(start)
        else:
            with _work.lock:
                orphans[fn]["stuck"] += 1
        _work.account(fn, start)
        return n
    finally:
        returned[fn].set()


def burn_orphan():
    return orphaned("burn_orphan", orphan_left)


def burn_cancelled():
    return orphaned("burn_cancelled", cancelled_left)


def plain_submitter():
    """The plain thread: no loop, no task; its own pool runs burn_plain_submit."""
    while True:
        fut = PLAIN.submit(burn_plain_submit)
        submitted("burn_plain_submit")
        fut.result()


async def offload_default():
    submitted("burn_default")
    return await asyncio.get_running_loop().run_in_executor(None, burn_default)


async def handler_default():
    while True:
        await offload_default()
        await _work.pause(JITTER)


async def offload_own():
    submitted("burn_own")
    return await asyncio.get_running_loop().run_in_executor(OWN, burn_own)


async def handler_own():
    while True:
        await offload_own()
        await _work.pause(JITTER)


async def offload_to_thread():
    submitted("burn_to_thread")
    return await asyncio.to_thread(burn_to_thread)


async def handler_to_thread():
    while True:
        await offload_to_thread()
        await _work.pause(JITTER)


async def churn_task(k):
    fn = globals()["churn_work_%d" % k]
    loop = asyncio.get_running_loop()
    while True:
        submitted(fn.__name__)
        await loop.run_in_executor(CHURN, fn)


async def until(event):
    """Sleeps until a threading.Event is set (the task does something else meanwhile)."""
    while not event.is_set():
        await asyncio.sleep(0.01)


async def offload_orphan():
    submitted("burn_orphan")
    loop = asyncio.get_running_loop()
    try:
        await asyncio.wait_for(loop.run_in_executor(None, burn_orphan), ORPHAN_TIMEOUT)
    except asyncio.TimeoutError:
        pass
    let_go["burn_orphan"].set()  # no longer awaited by anything


async def handler_orphan():
    while True:
        for e in began, let_go, returned:
            e["burn_orphan"].clear()
        await offload_orphan()
        # a call still queued at the timeout is cancelled and never runs (a loaded
        # machine may start the thread that late): then no wait for it to return
        deadline = time.monotonic() + NEVER_RAN
        while not returned["burn_orphan"].is_set():
            if not began["burn_orphan"].is_set() and time.monotonic() > deadline:
                with _work.lock:
                    orphans["burn_orphan"]["never_ran"] += 1
                break
            await asyncio.sleep(0.01)


async def offload_cancelled():
    submitted("burn_cancelled")
    return await asyncio.get_running_loop().run_in_executor(None, burn_cancelled)


async def handler_cancelled():
    while True:
        let_go["burn_cancelled"].clear()
        returned["burn_cancelled"].clear()
        try:
            await offload_cancelled()
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if hasattr(task, "uncancel"):
                task.uncancel()
        let_go["burn_cancelled"].set()  # no longer awaited by anything
        await until(returned["burn_cancelled"])


async def canceller(victim):
    """Cancels victim CANCEL_AFTER seconds after each call of burn_cancelled began."""
    while True:
        await until(began["burn_cancelled"])
        began["burn_cancelled"].clear()
        await asyncio.sleep(CANCEL_AFTER)
        victim.cancel()


def more():
    """pool_work.py's part of a snapshot, under the lock: submitters and orphans."""
    return dict(submitters={fn: sorted(s) for fn, s in submitters.items()},
                orphans={fn: dict(o) for fn, o in orphans.items()})


def snapshot():
    return _work.snapshot(more)


def started():
    """Whether every function but the orphans' left parts has begun a call."""
    return all(n for fn, n in _work.calls.items() if not fn.endswith("_left"))


async def main():
    asyncio.current_task().set_name("wl-main")
    loop = asyncio.get_running_loop()
    handlers = {"run-default": handler_default, "run-own": handler_own,
                "to-thread": handler_to_thread}
    tasks = [loop.create_task(handlers[name](), name=name) for name, _, _, _, _ in MECHS]
    tasks += [loop.create_task(churn_task(k), name=name)
              for k, (name, _) in enumerate(CHURN_TASKS)]
    tasks.append(loop.create_task(handler_orphan(), name="orphan-owner"))
    victim = loop.create_task(handler_cancelled(), name="cancel-victim")
    tasks += [victim, loop.create_task(canceller(victim), name="canceller")]
    tasks.append(loop.create_task(_work.announce(started, snapshot), name="announce"))
    await asyncio.gather(*tasks)


if __name__ == "__main__":
    _wl.fact(pid=os.getpid())
    _wl.fact(to_thread=TO_THREAD_WHY)
    for name, fn, via, awaits, pool in MECHS:
        _wl.fact(task=dict(name=name, fn=fn, via=via, awaits=awaits, pool=pool))
    for name, fn in CHURN_TASKS:
        _wl.fact(churn=dict(name=name, fn=fn, via=["churn_task"], pool="churn-pool"))
    for name, fn, left, how in ORPHANS:
        _wl.fact(orphan=dict(name=name, fn=fn, left=left, how=how))
    _wl.fact(plain=dict(thread=PLAIN_THREAD, fn="burn_plain_submit", pool="plain-pool"))
    threading.Thread(target=plain_submitter, name=PLAIN_THREAD, daemon=True).start()
    asyncio.run(main())
