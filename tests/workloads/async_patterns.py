"""Every common way asyncio relates tasks, at once, each pattern a separate tree of named
tasks ending in its own CPU-burning leaf (Python 3.8-3.13; optionally under uvloop).

    async_patterns.py [--uvloop] [--threads] [--ff-interval SECONDS]

Each leaf `leaf_<pattern>` burns ~4 ms on its `# BUSY` line, then `await asyncio.sleep(0)`,
forever, so the leaves of a loop take turns. --threads adds a second event loop in another
thread (new_event_loop + run_until_complete, no set_event_loop) with one more pattern.
The fire-and-forget pattern is respawned every --ff-interval seconds (a new creator task,
created from a plain loop callback, creates a child and returns; the previous child is
cancelled), so that a profiler attached later still sees children being created.

Once every leaf has run, prints one {"pattern": ...} line per pattern (keys: see truth()),
one {"asyncio": ...} summary line (version, patterns ran and skipped, live task names),
then READY. The truth is taken from the interpreter: the running part of each
leaf task from sys._getframe() in the leaf, the suspended parts by walking each awaiting
task's coroutine (cr_await, ag_await, gi_yieldfrom, async-generator send wrappers and
future iterators) from a loop callback while every task is suspended, and each declared
parent/child relation is checked to exist in memory (the child is the future the parent
awaits, or the child's done callbacks reach the parent or the future it awaits).
Nothing calls get_name() on an unnamed task: from 3.12 that would turn its lazily kept
number into a string.
"""
import argparse
import asyncio
import collections
import contextlib
import functools
import gc
import json
import os
import queue
import re
import sys
import threading
import time
import types

import _wl

V = sys.version_info[:2]
BURN = 0.004
FOREVER = 3600
perf = time.perf_counter

KEEP = set()  # fire-and-forget children, so that they are not collected
EDGES = []  # (parent task, child task, "await" | "origin"), as the code makes them
STARTED = {}  # pattern -> what the leaf saw on its first run
LOCK = threading.Lock()
ARGS = None


def edge(child, kind="await"):
    with LOCK:
        EDGES.append((asyncio.current_task(), child, kind))
    return child


def spawn(coro, name):
    return edge(asyncio.get_running_loop().create_task(coro, name=name))


def idle_future():
    return asyncio.get_running_loop().create_future()


def started(pattern):
    """Called by a leaf on its first run: its task, running frames and loop frames."""
    task = asyncio.current_task()
    code = task.get_coro().cr_code
    f = sys._getframe(1)
    running = []
    while f is not None:
        running.append(f)
        if f.f_code is code:
            break
        f = f.f_back
    else:
        raise RuntimeError("%s: task coroutine not on the stack" % pattern)
    outer = []
    f = f.f_back
    while f is not None:
        outer.append(f)
        f = f.f_back
    with LOCK:
        if pattern not in STARTED:
            STARTED[pattern] = dict(task=task, running=frames_of(reversed(running)),
                                    loop_stack=frames_of(reversed(outer)),
                                    thread=threading.current_thread().name)


def frames_of(frames):
    return [[_wl.qualname(f.f_code), f.f_code.co_name, f.f_code.co_filename] for f in frames]


# -- 1. direct `await task`, three levels under a handler ---------------------------------

async def leaf_direct():
    started("direct")
    while True:
        end = perf() + BURN
        while perf() < end: pass  # BUSY
        await asyncio.sleep(0)


async def direct_c():
    await leaf_direct()


async def direct_b():
    await spawn(direct_c(), "direct-c")


async def direct_a():
    await spawn(direct_b(), "direct-b")


async def direct_handler():
    await spawn(direct_a(), "direct-a")


# -- 2. gather of tasks --------------------------------------------------------------------

async def leaf_gather_tasks():
    started("gather_tasks")
    while True:
        end = perf() + BURN
        while perf() < end: pass  # BUSY
        await asyncio.sleep(0)


async def gather_tasks_child():
    await leaf_gather_tasks()


async def idle_gather_tasks():
    await idle_future()


async def gather_tasks_root():
    await asyncio.gather(spawn(gather_tasks_child(), "gather-tasks-child"),
                         spawn(idle_gather_tasks(), "gather-tasks-idle"))


# -- 3. gather of bare coroutines (asyncio wraps them in tasks named Task-N) ---------------

async def leaf_gather_coros():
    started("gather_coros")
    while True:
        end = perf() + BURN
        while perf() < end: pass  # BUSY
        await asyncio.sleep(0)


async def gather_coros_child():
    await leaf_gather_coros()


async def idle_gather_coros():
    await idle_future()


async def gather_coros_root():
    before = asyncio.all_tasks()
    fut = asyncio.gather(gather_coros_child(), idle_gather_coros())
    for t in asyncio.all_tasks() - before:
        edge(t)
    await fut


# -- 4. TaskGroup (3.11+) -------------------------------------------------------------------

async def leaf_taskgroup():
    started("taskgroup")
    while True:
        end = perf() + BURN
        while perf() < end: pass  # BUSY
        await asyncio.sleep(0)


async def taskgroup_child():
    await leaf_taskgroup()


async def idle_taskgroup():
    await idle_future()


async def taskgroup_root():
    async with asyncio.TaskGroup() as tg:
        edge(tg.create_task(taskgroup_child(), name="taskgroup-child"))
        edge(tg.create_task(idle_taskgroup(), name="taskgroup-idle"))


# -- 5. wait_for (an inner waiter future before 3.12, asyncio.timeout from 3.12) ----------

async def leaf_wait_for():
    started("wait_for")
    while True:
        end = perf() + BURN
        while perf() < end: pass  # BUSY
        await asyncio.sleep(0)


async def wait_for_child():
    await leaf_wait_for()


async def wait_for_root():
    await asyncio.wait_for(spawn(wait_for_child(), "wait-for-child"), FOREVER)


# -- 6. shield ------------------------------------------------------------------------------

async def leaf_shield():
    started("shield")
    while True:
        end = perf() + BURN
        while perf() < end: pass  # BUSY
        await asyncio.sleep(0)


async def shield_child():
    await leaf_shield()


async def shield_root():
    await asyncio.shield(spawn(shield_child(), "shield-child"))


# -- 7. asyncio.wait ------------------------------------------------------------------------

async def leaf_wait():
    started("wait")
    while True:
        end = perf() + BURN
        while perf() < end: pass  # BUSY
        await asyncio.sleep(0)


async def wait_child():
    await leaf_wait()


async def idle_wait():
    await idle_future()


async def wait_root():
    await asyncio.wait([spawn(wait_child(), "wait-child"), spawn(idle_wait(), "wait-idle")])


# -- 8. as_completed ------------------------------------------------------------------------

async def leaf_as_completed():
    started("as_completed")
    while True:
        end = perf() + BURN
        while perf() < end: pass  # BUSY
        await asyncio.sleep(0)


async def as_completed_child():
    await leaf_as_completed()


async def idle_as_completed():
    await idle_future()


AS_COMPLETED = {}  # "awaited_by": whether the tasks as_completed waits for name their waiter


async def as_completed_root():
    fs = [spawn(as_completed_child(), "as-completed-child"),
          spawn(idle_as_completed(), "as-completed-idle")]
    it = asyncio.as_completed(fs)
    # 3.14+ keep who awaits a future in fut_awaited_by (early 3.14 micros left it empty
    # for as_completed); a remote reader sees the link only if it is there
    me = asyncio.current_task()
    AS_COMPLETED["awaited_by"] = (all(me in (getattr(f, "_asyncio_awaited_by", None) or ())
                                      for f in fs)
                                  if hasattr(fs[0], "_asyncio_awaited_by") else None)
    for f in it:
        await f


# -- 9. asyncio.timeout (3.11+; creates no task) --------------------------------------------

async def leaf_timeout():
    started("timeout")
    while True:
        end = perf() + BURN
        while perf() < end: pass  # BUSY
        await asyncio.sleep(0)


async def timeout_child():
    await leaf_timeout()


async def timeout_root():
    async with asyncio.timeout(FOREVER):
        await spawn(timeout_child(), "timeout-child")


# -- 10. async generator consumed with async for ------------------------------------------

async def leaf_asyncgen():
    started("asyncgen")
    while True:
        end = perf() + BURN
        while perf() < end: pass  # BUSY
        await asyncio.sleep(0)


async def asyncgen_child():
    await leaf_asyncgen()


async def asyncgen_source():
    await spawn(asyncgen_child(), "asyncgen-child")
    yield 1


async def asyncgen_root():
    async for _ in asyncgen_source():
        pass


# -- 11. async with (contextlib.asynccontextmanager) -----------------------------------------

async def leaf_asyncwith():
    started("asyncwith")
    while True:
        end = perf() + BURN
        while perf() < end: pass  # BUSY
        await asyncio.sleep(0)


async def asyncwith_child():
    await leaf_asyncwith()


@contextlib.asynccontextmanager
async def asyncwith_cm():
    await spawn(asyncwith_child(), "asyncwith-child")
    yield


async def asyncwith_root():
    async with asyncwith_cm():
        pass


# -- 12. fire and forget: the creator returns at once -------------------------------------

async def leaf_fire_and_forget():
    started("fire_and_forget")
    while True:
        end = perf() + BURN
        while perf() < end: pass  # BUSY
        await asyncio.sleep(0)


async def ff_child():
    await leaf_fire_and_forget()


FF_SITE = []  # the creator's frames where it creates its child, root first


async def ff_creator(n):
    loop = asyncio.get_running_loop()
    t = loop.create_task(ff_child(), name="ff-child-%d" % n)
    if n == 1:  # the truth is taken from the first generation
        edge(t, "origin")
        # create_task's own frame, where it is Python (not uvloop's Cython, which has a
        # __code__ of its own)
        fn = getattr(loop.create_task, "__func__", None)
        inner = [_wl.qualname(fn.__code__)] if type(fn) is types.FunctionType else []
        FF_SITE[:] = [_wl.qualname(sys._getframe(0).f_code)] + inner
    # The previous generation ends only now: cancelled at the spawn, it was done for the
    # whole loop iteration before this creator ran (the busy leaves' 4 ms each), and a
    # snapshot then held no child at all.
    for old in list(KEEP):
        old.cancel()
    KEEP.add(t)
    t.add_done_callback(KEEP.discard)


def ff_spawn(loop, n, interval):
    loop.create_task(ff_creator(n), name="ff-creator-%d" % n)
    loop.call_later(interval, ff_spawn, loop, n + 1, interval)


# -- 13. a second event loop in another thread (--threads) --------------------------------

async def leaf_thread_loop():
    started("thread_loop")
    while True:
        end = perf() + BURN / 2
        while perf() < end: pass  # BUSY
        # Not sleep(0): alone on its loop, this leaf would take half of the GIL.
        await asyncio.sleep(0.02)


async def thread_child():
    await leaf_thread_loop()


async def thread_root():
    await spawn(thread_child(), "thread-child")


# -- the patterns -----------------------------------------------------------------------------

P = collections.namedtuple("P", "name root root_name min_version functions")

PATTERNS = [
    P("direct", direct_handler, "direct-handler", None,
      [direct_handler, direct_a, direct_b, direct_c, leaf_direct]),
    P("gather_tasks", gather_tasks_root, "gather-tasks-root", None,
      [gather_tasks_root, gather_tasks_child, idle_gather_tasks, leaf_gather_tasks]),
    P("gather_coros", gather_coros_root, "gather-coros-root", None,
      [gather_coros_root, gather_coros_child, idle_gather_coros, leaf_gather_coros]),
    P("taskgroup", taskgroup_root, "taskgroup-root", (3, 11),
      [taskgroup_root, taskgroup_child, idle_taskgroup, leaf_taskgroup]),
    P("wait_for", wait_for_root, "wait-for-root", None,
      [wait_for_root, wait_for_child, leaf_wait_for]),
    P("shield", shield_root, "shield-root", None, [shield_root, shield_child, leaf_shield]),
    P("wait", wait_root, "wait-root", None, [wait_root, wait_child, idle_wait, leaf_wait]),
    P("as_completed", as_completed_root, "as-completed-root", None,
      [as_completed_root, as_completed_child, idle_as_completed, leaf_as_completed]),
    P("timeout", timeout_root, "timeout-root", (3, 11),
      [timeout_root, timeout_child, leaf_timeout]),
    P("asyncgen", asyncgen_root, "asyncgen-root", None,
      [asyncgen_root, asyncgen_source, asyncgen_child, leaf_asyncgen]),
    P("asyncwith", asyncwith_root, "asyncwith-root", None,
      [asyncwith_root, asyncwith_cm, asyncwith_child, leaf_asyncwith]),
    P("fire_and_forget", None, None, None, [ff_creator, ff_child, leaf_fire_and_forget]),
]
THREAD_PATTERN = P("thread_loop", thread_root, "thread-root", None,
                   [thread_root, thread_child, leaf_thread_loop])


def leaf_of(p):
    return "leaf_" + p.name


def busy_line(fn):
    code = fn.__code__
    with open(code.co_filename) as f:
        lines = f.read().splitlines()
    for i in range(code.co_firstlineno, len(lines)):
        if "# BUSY" in lines[i]:
            return i + 1
    raise RuntimeError("no # BUSY line in %s" % code.co_name)


# -- reading the interpreter's own state --------------------------------------------------------

def task_name(task):
    """The task's name without get_name(), which on 3.12+ turns the lazily kept number of
    an unnamed task into a string (and so would change what a profiler reads)."""
    if V < (3, 12):
        return task.get_name()
    for r in gc.get_referents(task):
        if type(r) is str:
            return r
        if type(r) is int:
            return "Task-%d" % r
    raise RuntimeError("no name among the referents of %r" % (task,))


def shown_name(task, name):
    """A task's name as a profiler shows it by default: asyncio's automatic Task-N as
    the qualname of the task's coroutine."""
    if re.fullmatch(r"Task-\d+", task_name(task)):
        return _wl.qualname(task.get_coro().cr_code)
    return name


def auto_named(task):
    return V >= (3, 12) and any(type(r) is int for r in gc.get_referents(task))


def coro_walk(obj):
    """The coroutine frames a suspended object awaits, outermost first, and the object
    the chain ends at (a future, or None)."""
    frames = []
    for _ in range(256):
        if isinstance(obj, types.CoroutineType):
            f, nxt = obj.cr_frame, obj.cr_await
        elif isinstance(obj, types.GeneratorType):
            f, nxt = obj.gi_frame, obj.gi_yieldfrom
        elif isinstance(obj, types.AsyncGeneratorType):
            f, nxt = obj.ag_frame, obj.ag_await
        elif isinstance(obj, asyncio.Future) or obj is None:
            return frames, obj
        elif type(obj).__name__ in ("async_generator_asend", "async_generator_athrow"):
            (obj,) = [r for r in gc.get_referents(obj)
                      if isinstance(r, types.AsyncGeneratorType)]
            continue
        elif type(obj).__name__ == "FutureIter":
            (obj,) = [r for r in gc.get_referents(obj) if isinstance(r, asyncio.Future)]
            continue
        else:
            raise RuntimeError("cannot walk through %r" % type(obj))
        if f is None:
            return frames, None
        frames.append(f)
        obj = nxt
    raise RuntimeError("coroutine chain too long")


def label(o):
    if isinstance(o, (types.MethodType, types.BuiltinMethodType)):
        return getattr(o, "__qualname__", o.__name__)
    if isinstance(o, types.FunctionType):
        return o.__qualname__
    return type(o).__name__


def successors(o):
    """What a done callback can lead to, without going through loops, modules, code,
    coroutines or other tasks."""
    if isinstance(o, (asyncio.AbstractEventLoop, asyncio.Task, types.ModuleType, type,
                      types.CoroutineType, types.FrameType, types.CodeType)):
        return []
    if isinstance(o, (types.MethodType, types.BuiltinMethodType)):
        return [("__self__", o.__self__)]
    if isinstance(o, types.FunctionType):
        return [(n, c.cell_contents) for n, c in zip(o.__code__.co_freevars,
                                                     o.__closure__ or ())]
    if isinstance(o, functools.partial):
        return [("args", a) for a in o.args] + list(o.keywords.items())
    if isinstance(o, dict):
        return list(o.items())
    if isinstance(o, (list, tuple, set, frozenset, collections.deque)):
        return [("[]", x) for x in o]
    if isinstance(o, asyncio.Future):  # only a subclass's own attributes (_children)
        return list(getattr(o, "__dict__", {}).items())
    if hasattr(o, "__dict__"):
        return list(vars(o).items())
    return [("", r) for r in gc.get_referents(o) if not isinstance(r, (type, dict))]


def link_path(parent, child, awaited):
    """How the child's done callbacks reach the parent task or the future it awaits, as
    a list of steps (breadth first, at most 6 deep); None if they do not."""
    targets = {id(parent): "<parent task>", id(awaited): "<awaited %s>" % label(awaited)}
    todo = collections.deque()
    for cb, _ in child._callbacks or ():
        todo.append((cb, ["callback " + label(cb)]))
    seen = set()
    while todo:
        o, path = todo.popleft()
        if id(o) in targets:
            return path + [targets[id(o)]]
        if id(o) in seen or len(path) > 6:
            continue
        seen.add(id(o))
        for how, nxt in successors(o):
            todo.append((nxt, path + ["%s %s" % (how, label(nxt))]))
    return None


def qualnames(frames):
    return [_wl.qualname(f.f_code) for f in frames]


def truth(patterns, loop):
    """One record per pattern, and the names of the loop's live tasks. Keys:
    pattern, leaf (leaf_<pattern>), busy_line (its # BUSY line), thread (its thread's
    name), functions (co_name of every function of the pattern, task-unique),
    tasks (task names from the root to the leaf's task), links ("await", or "origin"
    for a creator that returned), chain / chain_q (co_name / qualname as a profiler shows
    it: co_qualname from 3.11, co_name before; of every coroutine frame from the root
    task's coroutine to the leaf), stacked (the stacked stack below the loop: "<task
    NAME>" then that task's frames, per task), loop_stack ([qualname, file] of the loop
    thread's frames above the root task's coroutine), via (per await link: what the
    parent awaits and how the child's done callbacks reach it), tree (pstree-like:
    {task, frames: suspended coroutine chain or None if finished, children, and for the
    leaf task leaf: true, running: frames from its coroutine to the leaf}), auto_named
    (tasks asyncio named Task-N). Fire-and-forget names carry {n} for the generation."""
    out = []
    with LOCK:
        edges = [e for e in EDGES if e[1].get_loop() is loop]
    parent_of = {id(c): (p, kind) for p, c, kind in edges}
    children = collections.defaultdict(list)
    for p, c, kind in edges:
        children[id(p)].append(c)
    alive = asyncio.all_tasks(loop)
    walked = {id(t): coro_walk(t.get_coro()) for t in alive}
    names = {}

    def name(t):
        if id(t) not in names:
            names[id(t)] = task_name(t)
        return names[id(t)]

    for p in patterns:
        s = STARTED[p.name]
        leaf_task = s["task"]
        path = [leaf_task]
        links = []
        while id(path[0]) in parent_of:
            parent, kind = parent_of[id(path[0])]
            path.insert(0, parent)
            links.insert(0, kind)
        rec = dict(pattern=p.name, leaf=leaf_of(p), thread=s["thread"],
                   busy_line=busy_line(globals()[leaf_of(p)]),
                   functions=[getattr(fn, "__wrapped__", fn).__code__.co_name
                              for fn in p.functions])
        ff = p.name == "fire_and_forget"

        def show(t):
            n = name(t)
            return n.rsplit("-", 1)[0] + "-{n}" if ff else n

        chain, chain_q, stacked, shown, via = [], [], [], [], []
        for i, t in enumerate(path):
            stacked.append("<task %s>" % show(t))
            shown.append("<task %s>" % shown_name(t, show(t)))
            if t is leaf_task:
                own = s["running"]
            elif links[i] == "origin":
                own = []  # the creator has returned
                shown += FF_SITE + ["[created by]"]
            else:
                frames, awaited = walked[id(t)]
                own = frames_of(frames)
                child = path[i + 1]
                if awaited is child:
                    via.append(dict(parent=show(t), child=show(child), awaits="the child"))
                else:
                    how = link_path(t, child, awaited)
                    if how is None:
                        raise RuntimeError("%s: no link from %s to %s in memory (awaits %r)"
                                           % (p.name, name(child), name(t), awaited))
                    via.append(dict(parent=show(t), child=show(child),
                                    awaits=label(awaited), path=how))
            chain += [f[1] for f in own]
            chain_q += [f[0] for f in own]
            stacked += [f[0] for f in own]
            shown += [f[0] for f in own]

        def node(t):
            kids = children.get(id(t), [])
            if id(t) in walked:
                frames = qualnames(walked[id(t)][0])
            else:
                frames = None  # finished (the fire-and-forget creator), or a later one
            n = dict(task=show(t), frames=frames, children=[node(k) for k in kids])
            if t is leaf_task:
                n["leaf"] = True
                n["running"] = [f[0] for f in s["running"]]
            if auto_named(t):
                n["auto_named"] = True
            return n

        rec.update(tasks=[show(t) for t in path], links=links, chain=chain, chain_q=chain_q,
                   stacked=stacked, shown=shown, loop_stack=[f[:1] + f[2:] for f in s["loop_stack"]],
                   via=via, tree=node(path[0]),
                   auto_named=[show(t) for t in path if auto_named(t)])
        out.append(rec)
    return out, sorted(name(t) for t in alive if not name(t).startswith("ff-"))


def snapshot_when_started(loop, patterns, done):
    """Calls done(records, task names) from a loop callback once every leaf has run."""
    def check():
        with LOCK:
            ready = all(p.name in STARTED for p in patterns)
        if not ready:
            loop.call_later(0.05, check)
            return
        try:
            done(*truth(patterns, loop))
        except Exception as e:  # noqa: BLE001 - reported to the main thread
            done(None, e)
    loop.call_later(0.1, check)


def new_loop():
    if ARGS.uvloop:
        import uvloop
        return uvloop.new_event_loop()
    return asyncio.new_event_loop()


def thread_main(results):
    loop = new_loop()
    root = loop.create_task(THREAD_PATTERN.root(), name=THREAD_PATTERN.root_name)
    snapshot_when_started(loop, [THREAD_PATTERN], lambda r, n: results.put((r, n)))
    loop.run_until_complete(root)


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--uvloop", action="store_true")
    ap.add_argument("--threads", action="store_true")
    ap.add_argument("--ff-interval", type=float, default=1.0)
    ARGS = ap.parse_args()
    loop = new_loop()
    asyncio.set_event_loop(loop)
    ran, skipped = [], {}
    for p in PATTERNS:
        if p.min_version and V < p.min_version:
            skipped[p.name] = "needs Python %d.%d" % p.min_version
            continue
        ran.append(p)
        if p.root:
            loop.create_task(p.root(), name=p.root_name)
    loop.call_soon(ff_spawn, loop, 1, ARGS.ff_interval)
    results = queue.Queue()
    if ARGS.threads:
        threading.Thread(target=thread_main, args=(results,), name="loop2",
                         daemon=True).start()

    def report(records, names):
        if records is None:
            raise names
        if ARGS.threads:
            more, more_names = results.get(timeout=30)
            if more is None:
                raise more_names
            records, names = records + more, names + more_names
        for r in records:
            print(json.dumps(r))
        _wl.fact(asyncio=dict(version=list(V), uvloop=ARGS.uvloop, threads=ARGS.threads,
                              ff_interval=ARGS.ff_interval, ran=[r["pattern"] for r in records],
                              skipped=skipped, tasks=sorted(names),
                              as_completed_awaited_by=AS_COMPLETED.get("awaited_by")))
        _wl.ready()

    def report_or_die(records, names):
        try:
            report(records, names)
        except BaseException as e:
            print("async_patterns: %s: %s" % (type(e).__name__, e), file=sys.stderr,
                  flush=True)
            os._exit(1)

    snapshot_when_started(loop, ran, report_or_die)
    try:
        loop.run_forever()
    finally:
        sys.stdout.flush()


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        pass
