"""Target process for tests/unit/test_pythreads.c: threads with names of every kind, idle,
and what Python says of each.

Output, one line per thread, "THREAD <kind> <tid> <ident> <name as UTF-8 hex>", kinds:
main, named, unicode, long (300 characters), dummy (started by _thread, then
threading.current_thread(): a _DummyThread); then READY. A line on stdin renames the
thread of kind named to "renamed-unit-thread" and prints RENAMED; closing stdin ends the
process.
"""
import _thread
import sys
import threading

lines = []
lock = threading.Lock()
idle = threading.Event()
started = threading.Semaphore(0)


def report(kind):
    t = threading.current_thread()
    with lock:
        lines.append("THREAD %s %d %d %s" % (kind, threading.get_native_id(), threading.get_ident(),
                                            t.name.encode().hex()))
    started.release()


def run(kind):
    report(kind)
    idle.wait()


def dummy():
    threading.current_thread()
    run("dummy")


named = threading.Thread(target=run, args=("named",), name="named-unit-thread", daemon=True)
threads = [named,
           threading.Thread(target=run, args=("unicode",), name="名前-Ünï-τ-😀", daemon=True),
           threading.Thread(target=run, args=("long",), name="x" * 300, daemon=True)]
for t in threads:
    t.start()
_thread.start_new_thread(dummy, ())
report("main")
for _ in range(len(threads) + 2):
    started.acquire()
for line in lines:
    print(line)
print("READY", flush=True)
if sys.stdin.readline():
    named.name = "renamed-unit-thread"
    print("RENAMED", flush=True)
sys.stdin.read()
