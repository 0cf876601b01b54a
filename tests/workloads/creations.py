"""Tasks made by other tasks that do not await them (Python 3.8+):

- a handler task that makes a short fire-and-forget job, "job-N", every 0.4 s through
  spawn_site(), and carries on;
- a chain of requests, each made by the request before it in the middle of its work,
  as a server makes its next keep-alive request in the previous one's send path.

A third task, deep-spawner, makes jobs "deep-N" DEPTH calls down (recurse()), a creation
site deeper than a profiler keeps whole: {"deep_site": [qualnames]} is it, root first.

Prints {"site": [qualnames]}: the handler's frames where it makes a job, root first, as a
profiler names them (the handler, spawn_site, and create_task's own frames where they are
Python), then READY, and runs until killed."""
import asyncio
import sys
import time
import types

from _wl import fact, qualname, ready


def burn(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


async def job():
    for _ in range(30):
        burn(0.004)
        await asyncio.sleep(0.001)


SITE = []
TOLD = set()


def tell(**kw):
    """A fact; READY once both spawners told theirs."""
    fact(**kw)
    TOLD.update(kw)
    if TOLD == {"site", "deep_site"}:
        ready()


def spawn_site(site, n):
    if not SITE:
        SITE[:] = [qualname(sys._getframe(0).f_code), qualname(asyncio.create_task.__code__)]
        fn = getattr(asyncio.get_running_loop().create_task, "__func__", None)
        if type(fn) is types.FunctionType:
            SITE.append(qualname(fn.__code__))
    if not site:
        site.append(qualname(sys._getframe(1).f_code))
        site.append(qualname(sys._getframe(0).f_code))
        site.append(qualname(asyncio.create_task.__code__))
        fn = getattr(asyncio.get_running_loop().create_task, "__func__", None)
        if type(fn) is types.FunctionType:
            site.append(qualname(fn.__code__))
    return asyncio.create_task(job(), name=n if isinstance(n, str) else "job-%d" % n)


async def handler():
    site = []
    n = 0
    while True:
        spawn_site(site, n)
        n += 1
        if len(site) and not getattr(handler, "told", False):
            handler.told = True
            tell(site=site)
        burn(0.002)
        await asyncio.sleep(0.4)


DEPTH = 40


def recurse(n, make):
    return make() if n == 0 else recurse(n - 1, make)


async def deep_spawner():
    """Makes its jobs DEPTH calls down: a creation site deeper than a profiler keeps."""
    n = 0
    while True:
        site = []

        def make():
            f = sys._getframe(0)
            while f.f_code is not deep_spawner.__code__:
                site.append(qualname(f.f_code))
                f = f.f_back
            return spawn_site([], "deep-%d" % n)

        recurse(DEPTH, make)
        if n == 0:
            # root first: deep_spawner's frame, the calls down to make() and spawn_site's
            tell(deep_site=["deep_spawner"] + site[::-1] + SITE)
        n += 1
        await asyncio.sleep(0.4)


async def request(n):
    burn(0.01)
    asyncio.create_task(request(n + 1))
    burn(0.01)
    await asyncio.sleep(0.002)


async def main():
    # 3.11+: calling request() runs its new frame's first instruction (RETURN_GENERATOR),
    # so a sample may catch request(n) :create line -> request(n + 1) :def line
    fact(request_def=request.__code__.co_firstlineno)
    asyncio.create_task(handler(), name="the-handler")
    asyncio.create_task(deep_spawner(), name="deep-spawner")
    asyncio.create_task(request(0))
    await asyncio.sleep(3600)


asyncio.run(main())
