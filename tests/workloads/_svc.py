"""What the service workloads (svc_fastapi.py, svc_aiohttp.py) share: the truth they
record about themselves, the tasks they name, the background tasks both run, and the
commands they read on stdin.

The truth is kept by the workload itself, never guessed from a profile:

- each CPU helper (a pure-Python loop with a distinctive name, no Python calls inside
  but the ledger's at its end) charges its own CPU time (time.thread_time() deltas) to
  its name, with the route it served, the function it ran under (the endpoint, or the
  coroutine a background or fire-and-forget task runs: the function that called
  serve_as() last in the helper's context) and the thread it ran on (the event loop's,
  or a worker);
- every task the workload names records its names (set_name included, with the time)
  and its lifetime; tasks of one role share one name, and are counted per name;
- a monitor task on the loop notes, every 0.2 s, each thread's Python name and id, and
  each task's name as the task holds it (read without get_name(), which would turn
  3.12+'s lazy number into a string): names that are neither Task-N nor
  `module.qualname` of one of the task's coroutines (anyio's and Starlette's automatic
  names) are kept as names some library gave; and the highest N of a Task-N name;
- per route, the requests served.

stdin, one command a line: `mark NAME` stores the helpers' CPU so far under NAME (the
test marks where its recording starts and ends); `stop` (or the end of input, SIGINT,
SIGTERM) stops the server, then the workload writes its truth to the file given by
--truth (JSON, written whole under a temporary name) and exits 0.
"""
import argparse
import asyncio
import contextlib
import contextvars
import gc
import json
import os
import re
import signal
import sys
import threading
import time

V = sys.version_info[:2]
T0 = time.monotonic()

# The function a helper runs under, and the route: (route, qualname), set by serve_as().
ANCHOR = contextvars.ContextVar("anchor", default=None)

# -- explicit task names: long ones, one of exactly 255 characters (shown whole), one of
#    300 (longer than a profiler keeps: shown cut, ending in "…"), non-ASCII ones (Latin-1,
#    CJK, emoji), and a task that renames itself between two names while it runs


def _pad(head, length, fill):
    out = head
    while len(out) < length:
        out += fill
    return out[:length]


NAME_255 = _pad("cache-warmer/refreshes-the-hot-product-and-price-cache-every-50ms/", 255,
                "abcdefghijklmnopqrstuvwxyz0123456789-")
NAME_300_LATIN1 = _pad("compacteur-de-statistiques/réduit-les-séries-âgées/", 300,
                       "àéîõü-çñ-ÀÉÎÕÜ-ÇÑ-åøæ-")
NAME_CJK_LONG = _pad("checksum-part · チェックサム計算 · 校验和汇总 · 체크섬 보고서 · ", 120,
                     "数据汇总-")
NAME_LATIN1_100 = _pad("tâche-de-comptage/agrège-les-compteurs-Ñandú-Æsir-Øresund-", 100,
                       "ÿéè-")
NAME_EMOJI = "🔄 refresh-cache 🚀 キャッシュ更新 ✨🔥"
RENAMES = ("sweeper/phase-a", "sweeper/phase-b ✓ Ünïcødé 清理")
RENAME_EVERY = 10.0  # seconds

assert len(NAME_255) == 255 and len(NAME_300_LATIN1) == 300, "name lengths"


def qualname_of(code):
    return getattr(code, "co_qualname", code.co_name)


def serve_as(route):
    """Called by an endpoint (or a background coroutine) at its start: the helpers its
    context runs from now on serve route, under the caller."""
    ANCHOR.set((route, qualname_of(sys._getframe(1).f_code)))


class Ledger:
    """CPU time of each helper, per route, per function run under, per thread kind."""

    def __init__(self):
        self.lock = threading.Lock()
        self.helpers = {}
        self.marks = {}
        self.threads = {}  # native id -> Python name (every thread a helper or the monitor saw)
        self.loop_thread = threading.main_thread()

    def charge(self, t0):
        """Charges the CPU time since t0 (time.thread_time()) to the calling helper."""
        spent = time.thread_time() - t0
        name = sys._getframe(1).f_code.co_name
        route, under = ANCHOR.get() or (None, None)
        cur = threading.current_thread()
        kind = "loop" if cur is self.loop_thread else "worker"
        with self.lock:
            h = self.helpers.get(name)
            if h is None:
                h = self.helpers[name] = {"cpu": 0.0, "calls": 0, "routes": {}, "under": {},
                                          "threads": {}}
            h["cpu"] += spent
            h["calls"] += 1
            h["routes"][route] = h["routes"].get(route, 0) + 1
            h["under"][under] = h["under"].get(under, 0) + 1
            h["threads"][kind] = h["threads"].get(kind, 0.0) + spent
            self.threads[cur.native_id] = cur.name

    def mark(self, name):
        with self.lock:
            self.marks[name] = {"t": time.monotonic() - T0,
                                "cpu": {k: h["cpu"] for k, h in self.helpers.items()}}


LEDGER = Ledger()


class Names:
    """The tasks the workload names: per name, its kind, how many tasks had it, when the
    first started and the last ended, the longest lifetime, how many still ran at exit;
    and each rename (set_name) with its time."""

    def __init__(self):
        self.by_name = {}
        self.renames = []
        self.live = {}  # task -> name it was registered with

    def _entry(self, name, kind):
        e = self.by_name.get(name)
        if e is None:
            e = self.by_name[name] = {"name": name, "kind": kind, "count": 0, "first": None,
                                      "last_end": None, "longest": 0.0, "live_at_exit": 0}
        return e

    def adopt(self, kind, task=None):
        """Registers a task that already has its name (the running one by default)."""
        task = task or asyncio.current_task()
        name = task.get_name()  # an explicit name is a str already: this changes nothing
        now = time.monotonic() - T0
        e = self._entry(name, kind)
        e["count"] += 1
        if e["first"] is None:
            e["first"] = now
        self.live[task] = (name, now)
        task.add_done_callback(self._ended)
        return task

    def create(self, coro, name, kind):
        task = asyncio.get_running_loop().create_task(coro, name=name)
        return self.adopt(kind, task)

    def rename(self, task, name, kind):
        old = task.get_name()
        task.set_name(name)
        self._entry(name, kind)
        self.renames.append({"from": old, "to": name, "t": time.monotonic() - T0})

    def _ended(self, task):
        name, start = self.live.pop(task, (None, None))
        if name is None:
            return
        now = time.monotonic() - T0
        e = self.by_name[name]
        e["last_end"] = now
        e["longest"] = max(e["longest"], now - start)

    def summary(self):
        for name, _ in self.live.values():
            self.by_name[name]["live_at_exit"] += 1
        return sorted(self.by_name.values(), key=lambda e: e["name"])


NAMES = Names()

# -- the monitor: threads, and task names no code of this workload gave

AUTO_TASK_RE = re.compile(r"^Task-\d+$")
SEEN = {"auto_names": {}, "library_names": {}, "task_coroutines": {}, "max_task_number": 0}


def held_name(task):
    """The name task holds, without get_name(): (str, False), or (Task-N, True) for a
    3.12+ number not yet turned into a string."""
    for r in gc.get_referents(task):
        if type(r) is str:
            return r, False
        if type(r) is int:
            return "Task-%d" % r, True
    return None, False


QUALNAME_RE = re.compile(r"^[A-Za-z_]\w*(\.(<locals>|[A-Za-z_]\w*))*$")


def module_qualname(name):
    """The qualname part of name if it is `module.qualname` of a loaded module, else None:
    anyio's names when the coroutine named is not (or no longer, or not yet) in the
    task's chain (anyio 4.14+ runs it under TaskHandle._run_coro)."""
    if name not in _MODULE_QUALNAMES:
        _MODULE_QUALNAMES[name] = next(
            (name[len(mod) + 1:] for mod in sorted(sys.modules, key=len, reverse=True)
             if mod and name.startswith(mod + ".") and QUALNAME_RE.match(name[len(mod) + 1:])),
            None)
    return _MODULE_QUALNAMES[name]


_MODULE_QUALNAMES = {}


def coroutine_chain(task):
    """The coroutines a task runs, outermost first (following cr_await)."""
    out = []
    c = task.get_coro()
    while c is not None and len(out) < 64:
        frame = getattr(c, "cr_frame", None) or getattr(c, "gi_frame", None)
        if frame is None or not hasattr(c, "__qualname__"):
            break
        out.append((frame.f_globals.get("__name__"), c.__qualname__))
        c = getattr(c, "cr_await", None) or getattr(c, "gi_yieldfrom", None)
    return out


def scan(assigned):
    """One look at the threads and the tasks (see the module's docstring)."""
    for t in threading.enumerate():
        if t.native_id is not None:
            with LEDGER.lock:
                LEDGER.threads[t.native_id] = t.name
    for task in asyncio.all_tasks():
        chain = coroutine_chain(task)
        if chain:
            SEEN["task_coroutines"][chain[0][1]] = True
        name, lazy = held_name(task)
        m = AUTO_TASK_RE.match(name or "")
        if m:
            SEEN["max_task_number"] = max(SEEN["max_task_number"], int(name[5:]))
        if name is None or lazy or m or name in assigned:
            continue
        auto = next((q for mod, q in chain if "%s.%s" % (mod, q) == name), None)
        if auto or module_qualname(name):
            SEEN["auto_names"][name] = auto or module_qualname(name)
        else:
            SEEN["library_names"][name] = chain[0][1] if chain else None


async def monitor(assigned):
    while True:
        scan(assigned)
        await asyncio.sleep(0.2)


def assigned_names():
    return {NAME_255, NAME_300_LATIN1, NAME_CJK_LONG, NAME_LATIN1_100, NAME_EMOJI} | set(RENAMES)

# -- background tasks both workloads run, each under an explicit name


def warm_cache(keys):
    t0 = time.thread_time()
    table = {}
    for k in keys:
        h = 0
        for ch in k:
            h = (h * 131 + ord(ch)) & 0xFFFFFFFF
        table[k] = h
    LEDGER.charge(t0)
    return table


def compact_stats(series):
    t0 = time.thread_time()
    out = []
    acc = 0.0
    for i, v in enumerate(series):
        acc = acc * 0.9 + v * 0.1
        if i % 8 == 0:
            out.append(round(acc, 3))
    LEDGER.charge(t0)
    return out


def sweep_sessions(sessions, now):
    t0 = time.thread_time()
    kept = 0
    for sid, (seen, hits) in sessions.items():
        if now - seen < 300 or hits % 7:
            kept += 1
    LEDGER.charge(t0)
    return kept


async def cache_warmer():
    serve_as(None)
    keys = ["product:%05d:price:eur" % i for i in range(700)]
    while True:
        warm_cache(keys)
        await asyncio.sleep(0.05)


async def stats_compactor():
    serve_as(None)
    series = [float((i * 7919) % 1000) for i in range(8000)]
    while True:
        compact_stats(series)
        await asyncio.sleep(0.1)


async def session_sweeper():
    serve_as(None)
    task = asyncio.current_task()
    sessions = {"s%05d" % i: (float(i % 600), i) for i in range(20000)}
    flip = time.monotonic() + RENAME_EVERY
    n = 0
    while True:
        sweep_sessions(sessions, 450.0)
        if time.monotonic() >= flip:
            n += 1
            NAMES.rename(task, RENAMES[n % 2], "renamed")
            flip += RENAME_EVERY
        await asyncio.sleep(0.08)


def start_background():
    """The named background tasks and the monitor; returns them (keep the references)."""
    return [
        NAMES.create(cache_warmer(), NAME_255, "long-255"),
        NAMES.create(stats_compactor(), NAME_300_LATIN1, "overlong-latin1"),
        NAMES.create(session_sweeper(), RENAMES[0], "renamed"),
        asyncio.get_running_loop().create_task(monitor(assigned_names())),
    ]

# -- requests counted per route, the command line, stdin, stopping, the truth


REQUESTS = {}
# per timed route (and "request": each request task's life), the [start, end] of each call
# (seconds since T0): the truth of wall mode's task-seconds
SPANS = {}


def count_request(route):
    REQUESTS[route] = REQUESTS.get(route, 0) + 1


STARTS = {}  # id(task) -> when time_tasks saw it created


def time_tasks(loop, qualname):
    """Notes when each task whose coroutine is qualname (a request's task) is created, just
    before: a task factory on the loop. Libraries that make their tasks with
    asyncio.Task(..., eager_start=True) (aiohttp on 3.12+) bypass it; those run from their
    creation into the request's first code, whose entry stands for it."""

    def factory(loop, coro, **kw):
        t0 = time.monotonic() - T0
        task = asyncio.Task(coro, loop=loop, **kw)
        if getattr(coro, "__qualname__", None) == qualname:
            STARTS[id(task)] = t0
            task.add_done_callback(lambda t: STARTS.pop(id(t), None))
        return task

    loop.set_task_factory(factory)


@contextlib.contextmanager
def request_span():
    """Around the outermost code a request runs in its task (an ASGI wrapper, a
    middleware): SPANS["request"] gets the task's life from its creation to the end of
    that code. The end is taken in the task: a done callback runs when the loop gets to
    it, later the busier the loop is."""
    entry = time.monotonic() - T0
    try:
        yield
    finally:
        task = asyncio.current_task()
        t0 = STARTS.pop(id(task), entry) if task is not None else entry
        SPANS.setdefault("request", []).append((round(t0, 6),
                                                round(time.monotonic() - T0, 6)))


class timed:
    """`with timed(route):` around an endpoint's body: how long each call ran."""

    def __init__(self, route):
        self.route = route

    def __enter__(self):
        self.t0 = time.monotonic() - T0

    def __exit__(self, *exc):
        SPANS.setdefault(self.route, []).append((round(self.t0, 6),
                                                 round(time.monotonic() - T0, 6)))


def arguments(description, extra):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--truth", required=True, help="where to write the truth at exit (JSON)")
    for args, kw in extra:
        p.add_argument(*args, **kw)
    return p.parse_args()


def watch_stop(loop, stop):
    """Calls stop() on the loop at SIGINT, SIGTERM, a `stop` line or the end of stdin;
    `mark NAME` lines mark the ledger."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop)

    def read():
        for line in sys.stdin:
            words = line.split()
            if words[:1] == ["mark"] and len(words) == 2:
                LEDGER.mark(words[1])
                print(json.dumps({"marked": words[1]}), flush=True)
            elif words[:1] == ["stop"]:
                break
        loop.call_soon_threadsafe(stop)

    threading.Thread(target=read, name="stdin-reader", daemon=True).start()


def write_truth(path, **extra):
    """Writes the truth (call it on the loop, once the server stopped)."""
    scan(assigned_names())
    truth = {
        "pid": os.getpid(),
        "version": list(sys.version_info[:3]),
        "helpers": LEDGER.helpers,
        "marks": LEDGER.marks,
        "threads": {str(k): v for k, v in LEDGER.threads.items()},
        "named": NAMES.summary(),
        "renames": NAMES.renames,
        "assigned_names": sorted(assigned_names()),
        "auto_names": SEEN["auto_names"],
        "library_names": {k: v for k, v in SEEN["library_names"].items()
                          if k not in SEEN["auto_names"]},
        "task_coroutines": sorted(SEEN["task_coroutines"]),
        "max_task_number": SEEN["max_task_number"],
        "requests": REQUESTS,
        "spans": SPANS,
        "uptime": time.monotonic() - T0,
    }
    truth.update(extra)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(truth, f, ensure_ascii=False, indent=1)
    os.rename(tmp, path)


def versions(*modules):
    out = {}
    for m in modules:
        mod = sys.modules.get(m)
        v = getattr(mod, "__version__", None)
        if v is None:
            try:
                from importlib.metadata import version
                v = version(m)
            except Exception:
                v = None
        out[m] = v
    return out
