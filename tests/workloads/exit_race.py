"""Creates asyncio tasks for a random 20-300 ms, then ends as MODE says, so that it
exits or execs while a profiler is attaching its task-creation probe:

  exit_race.py exit         returns: the interpreter finalizes, tearing its modules down
  exit_race.py exec-true    execs into /bin/true
  exit_race.py exec-python  execs into the same interpreter running nothing
"""
import asyncio
import os
import random
import sys


async def child():
    await asyncio.sleep(0)


async def main(seconds):
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds
    while loop.time() < end:
        await asyncio.gather(*[child() for _ in range(10)])


mode = sys.argv[1]
asyncio.run(main(random.uniform(0.02, 0.3)))
if mode == "exec-true":
    os.execv("/bin/true", ["true"])
elif mode == "exec-python":
    os.execv(sys.executable, [sys.executable, "-S", "-c", "pass"])
