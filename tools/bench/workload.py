"""asyncbpf-bench's workload: a fixed amount of asyncio work, the same on every run.

Requests run in batches; each is a gather of branches, each branch a gather (or, on
3.11+, a TaskGroup for every other branch) of leaf tasks, each leaf a chain of 30-60
awaiting coroutines whose innermost alternates CPU work and `await sleep(0)`.

argv: requests work [depth [mode]]. depth fixes every chain's depth (for cost against
depth). mode (thread work, for the cost of linking a pool worker's sample to its task):
"linked": `requests` tasks one after another, each a chain of AWAIT_DEPTH + 1
coroutines that awaits `asyncio.to_thread(fn)` (`loop.run_in_executor(None, fn)` before
3.9); "thread": fn run `requests` times by one plain thread while the loop waits idle
for it. fn recurses `depth` calls deep and burns `work` rounds there;
both modes give the worker the same number of Python frames (threading's, two of the
pool's or two stand-ins for them, fn's), and both run one item in a pool before READY.
"chain" (the async walk's cost on its own): three tasks, each awaiting the next from the
bottom of a chain of `depth` coroutines (CHAIN_DEPTH if 0), the last one spinning
`requests` rounds of CPU work and `await sleep(0)` at the bottom of its own: every
sample walks the running chain and two suspended ones, which stay in place.
Prints READY, waits for a line on stdin, runs, and prints one JSON line:
{"result": ..., "expected": ..., "wall": seconds, "cpu": seconds}.
"""
import asyncio
import functools
import json
import sys
import threading
import time

ROUNDS = 3
BRANCHES = 4
FANOUT = 3
BATCH = 8
AWAIT_DEPTH = 3  # thread work: the awaiting task's coroutines above its await
CHAIN_DEPTH = 40


def cpu(n):
    s = 0
    for i in range(n):
        s += i * i % 7
    return s


async def descend(d, work):
    if d > 0:
        return await descend(d - 1, work)
    total = 0
    for _ in range(ROUNDS):
        total += cpu(work)
        await asyncio.sleep(0)
    return total


async def leaf(i, work, depth):
    return await descend(depth if depth else 30 + (i * 7) % 31, work)


async def branch(i, work, depth):
    leaves = [leaf(i * FANOUT + k, work, depth) for k in range(FANOUT)]
    if hasattr(asyncio, "TaskGroup") and i % 2:
        async with asyncio.TaskGroup() as tg:
            tasks = [tg.create_task(c) for c in leaves]
        return sum(t.result() for t in tasks)
    return sum(await asyncio.gather(*leaves))


async def request(r, work, depth):
    return sum(await asyncio.gather(*(branch(r * BRANCHES + b, work, depth)
                                      for b in range(BRANCHES))))


async def main(requests, work, depth):
    total = 0
    for first in range(0, requests, BATCH):
        reqs = range(first, min(requests, first + BATCH))
        total += sum(await asyncio.gather(*(request(r, work, depth) for r in reqs)))
    return total


def burn(d, work):
    if d > 0:
        return burn(d - 1, work)
    return cpu(work)


async def await_work(d, fn):
    if d > 0:
        return await await_work(d - 1, fn)
    if hasattr(asyncio, "to_thread"):
        return await asyncio.to_thread(fn)
    return await asyncio.get_running_loop().run_in_executor(None, fn)


async def linked(requests, work, depth):
    fn = functools.partial(burn, depth, work)
    total = 0
    for _ in range(requests):
        total += await asyncio.create_task(await_work(AWAIT_DEPTH, fn))
    return total


def item_run(fn):  # stands for concurrent.futures' _WorkItem.run
    return fn()


async def unlinked(requests, work, depth):
    fn = functools.partial(burn, depth, work)
    loop = asyncio.get_running_loop()
    done = loop.create_future()

    def worker():  # stands for concurrent.futures' _worker
        total = 0
        for _ in range(requests):
            total += item_run(fn)
        loop.call_soon_threadsafe(done.set_result, total)

    thread = threading.Thread(target=worker)
    thread.start()
    total = await done
    thread.join()
    return total


async def spin(d, requests, work):
    if d > 0:
        return await spin(d - 1, requests, work)
    total = 0
    for _ in range(requests):
        total += cpu(work)
        await asyncio.sleep(0)
    return total


async def hold(d, inner):
    if d > 0:
        return await hold(d - 1, inner)
    return await asyncio.create_task(inner)


async def chain(requests, work, depth):
    d = depth or CHAIN_DEPTH
    return await asyncio.create_task(hold(d, hold(d, spin(d, requests, work))))


if __name__ == "__main__":
    requests, work = int(sys.argv[1]), int(sys.argv[2])
    depth = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    mode = sys.argv[4] if len(sys.argv) > 4 else "asyncio"
    run = {"asyncio": main, "linked": linked, "thread": unlinked, "chain": chain}[mode]
    if mode in ("linked", "thread"):
        # a pool that has run an item, as in a process that has been up a while: the
        # recorder finds the pool's code and its item's attributes at its first snapshot
        asyncio.run(await_work(0, int))
    print("READY", flush=True)
    sys.stdin.readline()
    wall, cpu0 = time.perf_counter(), time.process_time()
    result = asyncio.run(run(requests, work, depth))
    wall, cpu1 = time.perf_counter() - wall, time.process_time() - cpu0
    if mode == "asyncio":
        expected = requests * BRANCHES * FANOUT * ROUNDS * cpu(work)
    else:
        expected = requests * cpu(work)
    print(json.dumps({"result": result, "expected": expected, "wall": wall, "cpu": cpu1}),
          flush=True)
