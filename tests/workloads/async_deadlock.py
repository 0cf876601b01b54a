"""Tasks that await each other and so never finish: deadlock-a awaits the task object
deadlock-b and deadlock-b awaits deadlock-a; cycle-x -> cycle-y -> cycle-z -> cycle-x; and,
beside them, a healthy pair (healthy-parent awaits healthy-child, which sleeps).

Checks from a loop callback that each task of a cycle is suspended on the next one
(its _fut_waiter is that task object), then prints {"cycles": [[names...], ...]} (each
cycle once, in await order) and READY; idles until killed. Python 3.8+.
"""
import asyncio
import sys

import _wl

CYCLES = [["deadlock-a", "deadlock-b"], ["cycle-x", "cycle-y", "cycle-z"]]
TASKS = {}


async def await_next(name):
    await TASKS[name]


async def healthy_child():
    await asyncio.sleep(3600)


async def healthy_parent():
    await TASKS["healthy-child"]


def check(loop):
    for cycle in CYCLES:
        for i, name in enumerate(cycle):
            t, nxt = TASKS[name], TASKS[cycle[(i + 1) % len(cycle)]]
            if t.done() or t._fut_waiter is not nxt:
                print("async_deadlock: %s does not wait for %s" % (name, nxt.get_name()),
                      file=sys.stderr, flush=True)
                loop.stop()
                return
    _wl.fact(cycles=CYCLES, healthy=["healthy-parent", "healthy-child"])
    _wl.ready()


def main():
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    for cycle in CYCLES:
        for i, name in enumerate(cycle):
            nxt = cycle[(i + 1) % len(cycle)]
            TASKS[name] = loop.create_task(await_next(nxt), name=name)
    TASKS["healthy-child"] = loop.create_task(healthy_child(), name="healthy-child")
    TASKS["healthy-parent"] = loop.create_task(healthy_parent(), name="healthy-parent")
    loop.call_later(0.2, check, loop)
    loop.run_forever()
    sys.exit(1)  # only check() stops the loop


if __name__ == "__main__":
    main()
