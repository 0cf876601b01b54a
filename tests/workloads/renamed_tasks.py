"""Tasks that rename themselves every round, the new name most often at the address of a
name they held before. Round k of the "short" task names it job-<k> and burns CPU in
short_job_<k % 3>; the "long" task's name is long-job-<k>- and 40 x's (longer than a
sample's name field) and it burns in long_job_<k % 3>. A sample in short_job_J shows a
name job-K with K % 3 == J, whichever name the address held before. Prints {"reused":
{kind: share}} (the share of the first rounds' names at the address of an earlier name
of the same task) and READY, and runs on."""
import asyncio
import json

from _wl import burn  # noqa: F401 (the exec'd functions call it)

SLICE = 0.002
SLICES = 6
FIRST_ROUNDS = 40


for kind in ("short", "long"):
    for j in range(3):
        exec("async def %s_job_%d():\n    for _ in range(SLICES):\n        burn(SLICE)\n"
             "        await asyncio.sleep(0)\n" % (kind, j))

reused = {"short": [0, 0], "long": [0, 0]}
ready = None


def name_of(kind, k):
    return "job-%d" % k if kind == "short" else "long-job-%d-%s" % (k, "x" * 40)


async def worker(kind):
    held = set()
    me = asyncio.current_task()
    k = 0
    while True:
        me.set_name(name_of(kind, k))
        if k < FIRST_ROUNDS:
            # a name at the address of one held before (that one freed by the rename)
            reused[kind][0] += id(me.get_name()) in held
            reused[kind][1] += 1
            held.add(id(me.get_name()))
        elif k == FIRST_ROUNDS:
            ready.set()
        await globals()["%s_job_%d" % (kind, k % 3)]()
        k += 1


async def main():
    global ready
    ready = asyncio.Event()
    tasks = [asyncio.create_task(worker(kind), name="start") for kind in reused]
    await ready.wait()
    await asyncio.sleep(0.5)
    print(json.dumps({"reused": {k: v[0] / v[1] for k, v in reused.items()}}))
    print("READY", flush=True)
    await asyncio.gather(*tasks)


if __name__ == "__main__":
    asyncio.run(main())
