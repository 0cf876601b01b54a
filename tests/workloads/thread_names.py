"""Threads that Python names, each burning CPU in a function of its own: threading.Thread
threads named at creation (plain, non-ASCII, 300 characters long, with a ';'), a Thread
subclass that names itself as AnyIO's worker threads do, a ThreadPoolExecutor with a
thread_name_prefix and one without, asyncio's default executor through run_in_executor
and (3.9+) asyncio.to_thread, AnyIO's own worker thread (anyio.to_thread.run_sync) where
the interpreter can import anyio, and a thread started by _thread.start_new_thread, which
Python does not name (it calls threading.current_thread(), which enters a _DummyThread
"Dummy-N" in threading._active: not a name of the thread's, its OS name is).

Prints one {"thread": {kind, name, tid, comm, fn}} fact per thread, with the name Python
gives it (threading.current_thread().name, read by the thread itself) and its OS name,
{"anyio": null or why not}; once all have, they start burning and READY follows. One thread, kind "renamed", spins in spin_old
until a line arrives on stdin; then the others stop burning, and it waits PAUSE
seconds (its samples under the old name are all recorded by then), renames itself
(Thread.name = NEW_NAME), prints {"renamed": ...} and burns in spin_renamed_early for
EARLY seconds, then in spin_renamed_late until killed.
"""
import _thread
import asyncio
import concurrent.futures
import sys
import threading
import time

import _wl

NEW_NAME = "after-rename-worker-thread"
PAUSE = 1.0  # between the last sample under the old name and the rename
EARLY = 1.25
LONG = "long-name-" + "L" * 290

try:  # before any thread burns: an import under GIL contention crawls
    import anyio
    import anyio.to_thread
    ANYIO_WHY = None
except ImportError as e:
    ANYIO_WHY = "%s cannot import anyio: %s" % (sys.executable, e)

facts = []
lock = threading.Lock()
burn = threading.Event()  # set once every thread has reported
rename = threading.Event()


def comm():
    try:
        with open("/proc/self/task/%d/comm" % _wl.native_id()) as f:
            return f.read().rstrip("\n")
    except OSError as e:
        return "unreadable: %s" % e


def report(kind, fn):
    t = dict(kind=kind, name=threading.current_thread().name, tid=_wl.native_id(),
             comm=comm(), fn=fn)
    with lock:
        facts.append(t)
    burn.wait()


def burn_until_rename():
    """Burns until the rename, then idles: the renamed thread then has a CPU of its own."""
    n = 0
    while not rename.is_set(): n += 1  # BURN
    threading.Event().wait()


# each kind's own function, so that a sample's leaf says which thread it is too

def spin_plain():
    report("plain", "spin_plain")
    burn_until_rename()


def spin_unicode():
    report("unicode", "spin_unicode")
    burn_until_rename()


def spin_long():
    report("long", "spin_long")
    burn_until_rename()


def spin_semicolon():
    report("semicolon", "spin_semicolon")
    burn_until_rename()


class SelfNamedThread(threading.Thread):
    """Names itself in __init__, as anyio's WorkerThread ("AnyIO worker thread") does."""

    def __init__(self):
        super().__init__(name="Self-named worker thread", daemon=True)

    def run(self):
        spin_subclass()


def spin_subclass():
    report("subclass", "spin_subclass")
    burn_until_rename()


def spin_pool_prefixed():
    report("pool-prefixed", "spin_pool_prefixed")
    burn_until_rename()


def spin_pool_default():
    report("pool-default", "spin_pool_default")
    burn_until_rename()


def spin_executor():
    report("run_in_executor", "spin_executor")
    burn_until_rename()


def spin_to_thread():
    report("to_thread", "spin_to_thread")
    burn_until_rename()


def spin_anyio():
    report("anyio", "spin_anyio")
    burn_until_rename()


def spin_raw():
    _wl.set_thread_name("raw-os-named")
    threading.current_thread()  # a _DummyThread, Dummy-N, enters threading._active
    report("raw", "spin_raw")
    burn_until_rename()


def spin_old():
    report("renamed", "spin_old")
    n = 0
    while not rename.is_set(): n += 1  # BURN


def spin_renamed_early(until):
    n = 0
    while time.monotonic() < until: n += 1  # BURN


def spin_renamed_late():
    n = 0
    while True: n += 1  # BURN


def renamed():
    spin_old()
    time.sleep(PAUSE)
    threading.current_thread().name = NEW_NAME
    t0 = time.monotonic()
    _wl.fact(renamed=dict(name=threading.current_thread().name, tid=_wl.native_id(),
                          comm=comm()))
    spin_renamed_early(t0 + EARLY)
    spin_renamed_late()


async def in_loop():
    loop = asyncio.get_running_loop()
    loop.run_in_executor(None, spin_executor)
    if hasattr(asyncio, "to_thread"):
        asyncio.ensure_future(asyncio.to_thread(spin_to_thread))
    await asyncio.sleep(3600)


def anyio_thread(anyio):
    async def main():
        await anyio.to_thread.run_sync(spin_anyio)

    anyio.run(main)


def start():
    """Starts every thread; returns how many report."""
    n = 0
    for name, fn in (("plain-named-worker-thread", spin_plain),
                     ("名前-Ünïcødé-worker-τ", spin_unicode),
                     (LONG, spin_long),
                     ("semi;colon worker", spin_semicolon),
                     ("before-rename-worker-thread", renamed)):
        threading.Thread(target=fn, name=name, daemon=True).start()
        n += 1
    SelfNamedThread().start()
    n += 1
    concurrent.futures.ThreadPoolExecutor(thread_name_prefix="pool-with-prefix").submit(
        spin_pool_prefixed)
    concurrent.futures.ThreadPoolExecutor().submit(spin_pool_default)
    n += 2
    threading.Thread(target=asyncio.run, args=(in_loop(),), name="loop-thread",
                     daemon=True).start()
    n += 2 if hasattr(asyncio, "to_thread") else 1
    _wl.fact(anyio=ANYIO_WHY)
    if ANYIO_WHY is None:
        threading.Thread(target=anyio_thread, args=(anyio,), name="anyio-loop",
                         daemon=True).start()
        n += 1
    _thread.start_new_thread(spin_raw, ())
    return n + 1


def main():
    n = start()
    deadline = time.monotonic() + 60
    while True:
        with lock:
            if len(facts) >= n:
                break
        if time.monotonic() > deadline:
            raise SystemExit("only %d of %d threads reported: %s" % (len(facts), n, facts))
        time.sleep(0.01)
    for t in facts:
        _wl.fact(thread=t)
    burn.set()
    _wl.ready()
    sys.stdin.readline()
    rename.set()
    threading.Event().wait()


main()
