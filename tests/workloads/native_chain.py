"""The --native tests' workload: Python calls a C chain (tests/native/chain.c, through
ctypes) that spins in c_leaf. argv: the library, then the mode: plain (hot -> c_outer ->
c_mid -> c_leaf), callback (hot_cb -> cb_outer -> cb_mid -> py_callback -> c_outer -> ...),
task (an asyncio task chain whose running task calls the chain), thread (a native
thread, unknown to Python, spins in the chain while the main thread sleeps), and through
the C extension chainext: ext (hot_ext -> ext_outer -> ext_mid -> ext_leaf) and
ext-callback (hot_ext_cb -> ext_cb_outer -> ext_cb_mid -> py_ext_callback -> ext_outer
-> ...), and dlopen (hot_dlopen -> c_outer -> ...: every quarter second through a new copy
of the library, loaded then and unlinked at once, so that each is a module new to the
recorder and reachable only through /proc/PID/map_files), anon (hot_anon -> c_anon_outer
-> c_anon_mid -> a spin in anonymous executable memory, as a ctypes callback's
trampoline)."""
import asyncio
import ctypes
import json
import os
import sys

lib = ctypes.CDLL(sys.argv[1])
mode = sys.argv[2]
if mode.startswith("ext"):
    # the C extension (tests/native/chainext.c) sits beside the library
    sys.path.insert(0, os.path.dirname(sys.argv[1]))
    import chainext
lib.c_outer.argtypes = [ctypes.c_uint64]
CALLBACK = ctypes.CFUNCTYPE(None)
N = 20000000


def hot():
    while True:
        lib.c_outer(N)


def py_callback():
    lib.c_outer(N)


callback = CALLBACK(py_callback)


def hot_cb():
    while True:
        lib.cb_outer(callback)


def hot_anon():
    while True:
        assert lib.c_anon_outer(N) == 0, "no executable anonymous page"


def hot_ext():
    while True:
        chainext.ext_outer(N)


def py_ext_callback():
    chainext.ext_outer(N)


def hot_ext_cb():
    while True:
        chainext.ext_cb_outer(py_ext_callback)


def hot_dlopen():
    import shutil
    import tempfile
    import time
    while True:
        tmp = tempfile.mkdtemp(prefix="asyncbpf-dlopen-")
        path = os.path.join(tmp, "libchain.so")
        shutil.copy(sys.argv[1], path)
        fresh = ctypes.CDLL(path)
        os.unlink(path)
        os.rmdir(tmp)
        fresh.c_outer.argtypes = [ctypes.c_uint64]
        end = time.monotonic() + 0.25
        while time.monotonic() < end:
            fresh.c_outer(N // 10)


async def leaf_task():
    while True:
        lib.c_outer(N)
        await asyncio.sleep(0)


async def outer_task():
    await asyncio.create_task(leaf_task(), name="native-leaf")


async def main():
    await asyncio.create_task(outer_task(), name="native-outer")


if mode == "thread":
    assert lib.start_native_thread() == 0
print(json.dumps({"mode": mode}))
print("READY", flush=True)
if mode == "thread":
    import time
    while True:
        time.sleep(1)
elif mode == "plain":
    hot()
elif mode == "ext":
    hot_ext()
elif mode == "ext-callback":
    hot_ext_cb()
elif mode == "callback":
    hot_cb()
elif mode == "anon":
    hot_anon()
elif mode == "dlopen":
    hot_dlopen()
else:
    asyncio.run(main())
