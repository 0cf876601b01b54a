"""The --native tests' workload: Python calls a C chain (tests/native/chain.c, through
ctypes) that spins in c_leaf. argv: the library, then the mode: plain (hot -> c_outer ->
c_mid -> c_leaf), callback (hot_cb -> cb_outer -> cb_mid -> py_callback -> c_outer -> ...),
task (an asyncio task chain whose running task calls the chain) or thread (a native
thread, unknown to Python, spins in the chain while the main thread sleeps)."""
import asyncio
import ctypes
import json
import sys

lib = ctypes.CDLL(sys.argv[1])
mode = sys.argv[2]
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
elif mode == "callback":
    hot_cb()
else:
    asyncio.run(main())
