"""asyncbpf-tasks draws, under a task that awaits work running in a pool thread, that
thread (`thread NAME (tid N)`) and its current frames. tests/workloads/tasks_threads.py
runs named tasks that each loop awaiting a CPU-bound function of their own in a pool:
anyio.to_thread.run_sync (where anyio imports: Debian's python3.11, pyenv's through a
directory of links to Debian's pure-Python anyio, a tree's own), loop.run_in_executor
with the default executor and with an own one, and asyncio.to_thread (3.9+). Each of
SNAPSHOTS runs of asyncbpf-tasks must be clean; in at least MIN_SHOWN of them each task
has its worker under it, named as Python names it, with its function among the thread's
frames (a worker may be between two items at a snapshot), and in none is a thread with
a task's function drawn under any other task."""
import contextlib
import os

import pytest

from helpers import INTERPRETERS, Workload, interp_params, parse_pstree, run_tool, start_all

from test_async_tasks import root_tasks_bin  # noqa: F401
from workthreads import ask

SNAPSHOTS = 6
MIN_SHOWN = 4
DEBIAN_PKGS = "/usr/lib/python3/dist-packages"
ANYIO_PKGS = ("anyio", "sniffio", "idna")
# (task, function) of tasks_threads.py's TASKS
TASKS = [("req-anyio", "burn_anyio"), ("req-exec", "burn_exec"), ("req-own", "burn_own"),
         ("req-thread", "burn_thread")]



@pytest.fixture(scope="module")
def anyio_dir(tmp_path_factory):
    """A directory of links to Debian's pure-Python anyio and what it imports, for pyenv's
    interpreters; None when Debian's is not installed."""
    if not all(os.path.isdir(os.path.join(DEBIAN_PKGS, m)) for m in ANYIO_PKGS):
        return None
    d = tmp_path_factory.mktemp("anyio")
    for m in ANYIO_PKGS:
        os.symlink(os.path.join(DEBIAN_PKGS, m), str(d / m))
    return str(d)


@pytest.fixture(scope="module")
def snapshots(root_tasks_bin, anyio_dir):
    """{interpreter id: (workload, [(ToolRun, the workload's answer after it)])}."""
    interps = [i for i in INTERPRETERS if not i.missing]
    if not interps:
        pytest.skip("no supported interpreter installed")
    with contextlib.ExitStack() as stack:
        # a tree's interpreter runs in its own root: it has its own anyio or none
        loads = start_all(stack, [
            Workload(i.path, "tasks_threads.py", *([anyio_dir] if anyio_dir and not i.tree
                                                   else []), timeout=60, stdin=True)
            for i in interps])
        out = {}
        for i, w in zip(interps, loads):
            runs = []
            for _ in range(SNAPSHOTS):
                r = run_tool(root_tasks_bin, "--watch", 0, w.pid, timeout=60)
                runs.append((r, ask(w)))
            out[i.id] = (w, runs)
        yield out


def task_of(w, name, fn):
    """Skips, saying why, a task the workload does not run."""
    tasks = {t["name"]: t for t in w.all("task")}
    if name in tasks:
        assert tasks[name]["fn"] == fn
        return
    if name == "req-anyio":
        pytest.skip(w.fact("anyio") or "anyio not imported")
    pytest.skip("%s: asyncio.to_thread is 3.9+" % w.argv[0])


def threads(node):
    """The thread nodes under node that are its own: not under a task below it."""
    out = []
    for c in node.children:
        if c.kind == "thread":
            out.append(c)
        elif c.kind != "task":
            out += threads(c)
    return out


def frames(thread):
    return [n.name.rsplit(".", 1)[-1] for n in thread.walk() if n.kind == "coro"]


def tree_of(r):
    assert r.rc == 0 and not r.err.strip(), "asyncbpf-tasks failed" + r.describe()
    roots = parse_pstree(r.out)
    return [n for root in roots for n in root.walk()]


@pytest.mark.parametrize("pair", TASKS, ids=[t for t, _ in TASKS])
@pytest.mark.parametrize("python", interp_params())
def test_worker_under_its_task(snapshots, python, pair):
    """The task's worker, named as Python names it, with the task's function among its
    frames, is drawn under the task in at least MIN_SHOWN of SNAPSHOTS snapshots."""
    name, fn = pair
    w, runs = snapshots[python.id]
    task_of(w, name, fn)
    shown, seen = 0, []
    for r, now in runs:
        nodes = [n for n in tree_of(r) if n.kind == "task" and n.name == name]
        assert len(nodes) == 1, "task %s drawn %d times:\n%s" % (name, len(nodes), r.out)
        ok = False
        for th in threads(nodes[0]):
            seen.append(th.raw.strip())
            ok |= (fn in frames(th) and th.tid in now["tids"].get(fn, []) and
                   th.name == now["names"].get(str(th.tid)))
        shown += ok
    assert shown >= MIN_SHOWN, (
        "%s's worker running %s shown in %d of %d snapshots (threads under it: %s; the "
        "workload's threads that ran %s: %s)\nlast tree:\n%s" % (
            name, fn, shown, len(runs), seen or "none", fn,
            {t: runs[-1][1]["names"].get(str(t)) for t in runs[-1][1]["tids"].get(fn, [])},
            runs[-1][0].out))


@pytest.mark.parametrize("python", interp_params())
def test_no_worker_under_another_task(snapshots, python):
    """A thread drawn is drawn under the task whose function it runs, never another;
    threads running no task's work (the main thread, the workload's answering thread)
    are not drawn. A worker between its item's function and the pool's hand-over of the
    result (concurrent.futures' set_result and the like, or no frame yet) shows no
    function to tell its task by: it must be under a task, any."""
    w, runs = snapshots[python.id]
    fns = {t["fn"]: t["name"] for t in w.all("task")}
    wrong = []
    for r, _ in runs:
        for th in (n for n in tree_of(r) if n.kind == "thread"):
            task = th.parent_task()
            mine = [fn for fn in frames(th) if fn in fns]
            # the item's function has returned and the pool hands its result over (the
            # item is still the task's: it awaits it until the loop takes the result),
            # or it is about to be called: no function tells the task, any is allowed
            if not mine and task is not None and frames(th)[:1] in (
                    [], ["set_result"], ["set_exception"], ["set_running_or_notify_cancel"]):
                continue
            if len(mine) != 1 or task is None or fns[mine[0]] != task.name:
                wrong.append("%s under %s, frames %s" % (
                    th.raw.strip(), task.name if task else "no task", frames(th)))
    assert not wrong, "threads under the wrong task:\n  " + "\n  ".join(wrong)
