"""Four CPU-bound threads, each in its own chain (chain_X1 -> chain_X2 -> spin_X), a fifth
sleeping in time.sleep with the GIL released, and the main thread waiting.

Prints one {"thread": ...} fact per thread (name, the OS name it sets; pyname, the name
Python gives it; tid, ground-truth stack, whether the OS thread name could be set), then
READY; runs until killed.
"""
import threading
import time

import _wl

facts = []
lock = threading.Lock()
started = threading.Barrier(6)


def report(name, kind):
    named = _wl.set_thread_name(name)
    with lock:
        facts.append(dict(name=name, kind=kind, tid=_wl.native_id(), named=named,
                          pyname=threading.current_thread().name,
                          stack=_wl.stack_of_caller(1)))
    started.wait()


def spin_a():
    report("worker-a", "spin")
    n = 0
    while True: n += 1  # BUSY


def chain_a2():
    spin_a()


def chain_a1():
    chain_a2()


def spin_b():
    report("worker-b", "spin")
    n = 0
    while True: n += 1  # BUSY


def chain_b2():
    spin_b()


def chain_b1():
    chain_b2()


def spin_c():
    report("worker-c", "spin")
    n = 0
    while True: n += 1  # BUSY


def chain_c2():
    spin_c()


def chain_c1():
    chain_c2()


def spin_d():
    report("worker-d", "spin")
    n = 0
    while True: n += 1  # BUSY


def chain_d2():
    spin_d()


def chain_d1():
    chain_d2()


def sleeper():
    report("sleeper", "sleep")
    while True:
        time.sleep(3600)


def main():
    for target in (chain_a1, chain_b1, chain_c1, chain_d1, sleeper):
        threading.Thread(target=target, daemon=True).start()
    started.wait()
    for f in facts:
        _wl.fact(thread=f)
    _wl.ready()
    threading.Event().wait()


main()
