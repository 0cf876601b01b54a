"""Shared helpers for the integration-test workloads (Python 3.6+, stdlib only).

A workload prints facts as JSON lines, then READY, then runs until killed. The stacks
it reports are ground truth taken from the interpreter itself (sys._getframe).
"""
import ctypes
import json
import sys
import threading
import time

PR_SET_NAME = 15


def qualname(code):
    # co_qualname exists from 3.11; before that a profiler can only show co_name.
    return getattr(code, "co_qualname", code.co_name)


def stack_of_caller(up=0):
    """The caller's stack (skipping up more frames), root first, as
    [qualname, filename, line] lists."""
    out = []
    f = sys._getframe(1 + up)
    while f is not None:
        out.append([qualname(f.f_code), f.f_code.co_filename, f.f_lineno])
        f = f.f_back
    out.reverse()
    return out


def burn(seconds):
    """Spins on the CPU for seconds."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def set_thread_name(name):
    """Sets the OS name of the calling thread; returns False if that is not possible."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_NAME, name.encode()[:15], 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def native_id():
    if hasattr(threading, "get_native_id"):
        return threading.get_native_id()
    # 3.6/3.7: gettid via syscall 186 (x86-64) / 178 (arm64).
    import platform

    nr = {"x86_64": 186, "aarch64": 178}.get(platform.machine())
    return ctypes.CDLL(None).syscall(nr) if nr else None


def fact(**kw):
    print(json.dumps(kw), flush=True)


def ready():
    print("READY", flush=True)
