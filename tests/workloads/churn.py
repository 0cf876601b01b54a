"""Changes its stacks as fast as it can, for the torn-read stress test.

  churn.py recurse COUNTFILE  recursion up and down, 1 to 400 deep (deeper than the
                              sampler keeps), through four functions that call each
                              other in a cycle; and functions compiled afresh each time
                              (file "<dyn>"), so that code objects are freed and their
                              memory reused by others while samples still name them:
                              dyn_L<N> is defined at line N and calls only itself
  churn.py tasks COUNTFILE    asyncio tasks created and finished as fast as possible,
                              each calling a few levels down and sometimes suspending;
                              8 task names

Every second it writes the number of calls or tasks finished so far to COUNTFILE.
Prints READY, then runs until killed.
"""
import asyncio
import os
import sys
import time

import _wl

sys.setrecursionlimit(2000)
TOP = 400


class Counter:
    def __init__(self, path):
        self.path, self.n, self.next = path, 0, time.monotonic() + 1

    def add(self, k):
        self.n += k
        if time.monotonic() >= self.next:
            self.next += 1
            with open(self.path + ".tmp", "w") as f:
                f.write("%d\n" % self.n)
            os.replace(self.path + ".tmp", self.path)


def r0(n, top):
    return r1(n + 1, top) if n < top else leaf(n)


def r1(n, top):
    return r2(n + 1, top) if n < top else leaf(n)


def r2(n, top):
    return r3(n + 1, top) if n < top else leaf(n)


def r3(n, top):
    return r0(n + 1, top) if n < top else leaf(n)


def leaf(n):
    x = 0
    for i in range(20):
        x += i
    return x + n


def dynamic(line):
    name = "dyn_L%d" % line
    src = "\n" * (line - 1) + "def %s(n):\n    return %s(n - 1) if n else leaf(n)\n" % (name, name)
    ns = {"leaf": leaf}
    exec(compile(src, "<dyn>", "exec"), ns)
    return ns[name]


def recurse(counter):
    top = 1
    while True:
        r0(0, top)
        dynamic(top)(top % 50)
        top = (top * 7 + 13) % TOP + 1
        counter.add(1)


def down(n):
    return down(n - 1) if n else leaf(n)


async def short(i):
    if i % 3 == 0:
        await asyncio.sleep(0)
    return down(i % 8)


async def spawner(counter):
    i = 0
    while True:
        # named by role, as a service would: default names (Task-N) are unique, and
        # every sampled task would make a stack of its own
        batch = [asyncio.create_task(short(i + k), name="short-%d" % (k % 8))
                 for k in range(200)]
        await asyncio.gather(*batch)
        i += len(batch)
        counter.add(len(batch))


def main():
    mode, path = sys.argv[1], sys.argv[2]
    counter = Counter(path)
    _wl.ready()
    if mode == "recurse":
        recurse(counter)
    else:
        asyncio.run(spawner(counter))


if __name__ == "__main__":
    main()
