"""Awaiters that stop and start awaiting tasks at reused addresses. "outer" creates a
"parent" task per round k and awaits it through via_<k % 3>; each parent creates two
"child" tasks j = 0, 1 in turn and awaits each through await_<(2k + j) % 3>. A child
burns CPU in spin_<k % 3>_<(2k + j) % 3>, yielding now and then. A task is let go of
before the next of its kind is made, which then mostly takes its address (and its
coroutine's), though it is awaited through another function: a sample in spin_A_B has
via_A in outer's frames and await_B in parent's, whatever the round before left. Prints
{"reused": share} (the share of the first rounds' awaits of a task at the address of the
one the same awaiter awaited before) and READY, and runs on."""
import asyncio
import gc
import json

from _wl import burn  # noqa: F401 (the exec'd functions call it)

SLICE = 0.002
SLICES = 8
FIRST_ROUNDS = 30


# spin_A_B, via_A and await_B, functions of their own names
for a in range(3):
    exec("async def via_%d(task):\n    await task\n" % a)
    exec("async def await_%d(task):\n    await task\n" % a)
    for b in range(3):
        exec("async def spin_%d_%d():\n    for _ in range(SLICES):\n        burn(SLICE)\n"
             "        await asyncio.sleep(0)\n" % (a, b))

awaited = {}  # awaiter's address -> the address of the task it awaited last
reused = [0, 0]


def note(task, k):
    me = id(asyncio.current_task())
    if k < FIRST_ROUNDS:
        reused[0] += awaited.get(me) == id(task)
        reused[1] += 1
    awaited[me] = id(task)


async def child(a, b):
    await globals()["spin_%d_%d" % (a, b)]()


async def parent(k):
    for j in range(2):
        b = (2 * k + j) % 3
        c = asyncio.get_running_loop().create_task(child(k % 3, b), name="child")
        note(c, k)
        await globals()["await_%d" % b](c)
        # let go of: the loop's handle that woke this task holds c until it returns,
        # and 3.13 frees a finished task in the cycle collector
        del c
        await asyncio.sleep(0)
        gc.collect()


async def outer():
    k = 0
    while True:
        p = asyncio.get_running_loop().create_task(parent(k), name="parent")
        note(p, k)
        await globals()["via_%d" % (k % 3)](p)
        del p
        await asyncio.sleep(0)
        gc.collect()
        k += 1
        if k == FIRST_ROUNDS:
            print(json.dumps({"reused": reused[0] / reused[1]}))
            print("READY", flush=True)


if __name__ == "__main__":
    asyncio.run(outer())
