"""Work a task hands to anyio's worker threads (anyio.to_thread.run_sync, as FastAPI and
Starlette run a `def` endpoint) is drawn under the task that awaits it: a CPU sample of
the worker reads

    PROCESS;[thread work];<task ROOT>;...;<task OWNER>;OWNER's coroutines down to anyio's
    run_sync_in_worker_thread;<thread AnyIO worker thread>;the submitted function;...

([thread work] in place of the thread frame, `<thread NAME>` the worker by its Python
name, the pool's own frames left out), and a sample that cannot be proven to belong to a
task is drawn as before, never under a task. tests/workloads/thread_work.py runs three
named tasks, each handing a function of its own (burn_X) to anyio's pool, whose threads
pass from task to task, and a plain thread (burn_plain) outside any task; it measures
each function's CPU time and notes the threads that ran it. One recording of every
interpreter that imports anyio (Debian 12's python3.11 with anyio 3.6, pyenv's with the
same pure-Python anyio, the sid tree's with anyio 4) until each function has burnt WORK_CPU seconds; the others are skipped
with the workload's reason."""
import contextlib
import json
import os
import select
import signal
import subprocess
import time

import pytest

from helpers import (INTERPRETERS, RECORD_TIMEOUT, TIMEOUT_SCALE, Frame, Recording,
                     TaskFrame, Workload, show, start_all, total, wait_for, wait_sampling)

FREQ = 199
# CPU time each function burns while sampled: about 80 samples at FREQ
WORK_CPU = 0.4
MIN_SAMPLES = 40
LINKED_SHARE = 0.95
WORKER_NAME = "AnyIO worker thread"
# the last of the awaiting task's frames: anyio's own, whatever class it is in
ANYIO_AWAIT = "run_sync_in_worker_thread"
# asyncbpf-record's arguments besides -p and -F
ARGS = ["--stats"]
# (task, function) of thread_work.py's TASKS, for the test ids
TASKS = [("req-alpha", "burn_alpha"), ("req-beta", "burn_beta"), ("req-gamma", "burn_gamma")]


def interp_params():
    return [pytest.param(i, id=i.id, marks=[pytest.mark.skip(reason=i.missing)]
                         if i.missing else []) for i in INTERPRETERS]


def ask(w):
    """thread_work.py's answer to a line: its functions' CPU time, calls and threads."""
    w.send("now")
    timeout = 30 * TIMEOUT_SCALE
    readable, _, _ = select.select([w.proc.stdout], [], [], timeout)
    assert readable, "workload %s (pid %d) did not answer within %gs" % (w.argv, w.pid, timeout)
    line = w.proc.stdout.readline().decode()
    assert line, "workload %s (pid %d) exited (rc %s): %s" % (
        w.argv, w.pid, w.proc.wait(), w.proc.stderr.read().decode(errors="replace")[-2000:])
    return json.loads(line)["now"]


def record_work(binary, loads):
    """Records loads (thread_work.py) until each function of each has burnt WORK_CPU
    seconds since sampling began (the functions' own measure); each load's answers when
    sampling began, when it was told to stop and after it stopped go to its .before,
    .stop and .after."""
    argv = [binary, "-p", ",".join(str(w.pid) for w in loads), "-F", str(FREQ)] + ARGS
    timeout = RECORD_TIMEOUT * TIMEOUT_SCALE
    t0 = time.monotonic()
    rec = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_sampling(rec, timeout)
        for w in loads:
            w.before = ask(w)
        now = {}

        def done():
            assert rec.poll() is None, "asyncbpf-record exited (rc %s) while sampling" % (
                rec.returncode)
            for w in loads:
                w.stop = ask(w)
                now[w.pid] = {fn: round(c - w.before["cpu"][fn], 3)
                              for fn, c in w.stop["cpu"].items()}
            return all(c >= WORK_CPU for cpu in now.values() for c in cpu.values())
        wait_for(done, timeout, lambda: "%gs of CPU in each function, sampled; have %s" % (
            WORK_CPU, now), 0.2)
        rec.send_signal(signal.SIGINT)
        out, err = rec.communicate(timeout=timeout)
        for w in loads:
            w.after = ask(w)
    finally:
        if rec.poll() is None:
            rec.kill()
            rec.wait()
    out, err = out.decode("utf-8", errors="replace"), err.decode("utf-8", errors="replace")
    return Recording(argv, rec.returncode, out, err, time.monotonic() - t0)


# Debian's anyio and what it imports: pure Python, so that pyenv's interpreters, which
# have no anyio, run it too
DEBIAN_PACKAGES = "/usr/lib/python3/dist-packages"
ANYIO_PACKAGES = ["anyio", "sniffio", "idna"]


def anyio_dir(tmp):
    """A directory holding only Debian's anyio and its imports (links), or None without
    them. In a tree the links lead to the tree's own copies, if any."""
    if not all(os.path.isdir(os.path.join(DEBIAN_PACKAGES, p)) for p in ANYIO_PACKAGES):
        return None
    for p in ANYIO_PACKAGES:
        os.symlink(os.path.join(DEBIAN_PACKAGES, p), os.path.join(tmp, p))
    return tmp


@pytest.fixture(scope="module")
def recorded(root_record_bin, tmp_path_factory):
    """{interpreter id: (Recording, workload)}: one recording of thread_work.py on every
    interpreter that imports anyio; the others' workloads say why not, and end."""
    interps = [i for i in INTERPRETERS if not i.missing]
    if not interps:
        pytest.skip("no supported interpreter installed")
    with contextlib.ExitStack() as stack:
        extra = anyio_dir(str(tmp_path_factory.mktemp("anyio")))
        loads = start_all(stack, [Workload(i.path, "thread_work.py", *([extra] if extra else []),
                                           timeout=60, stdin=True) for i in interps])
        by_id = dict(zip((i.id for i in interps), loads))
        for w in loads:
            assert w.fact("pid") == w.pid, "thread_work.py's pid %s is not its process's %d" % (
                w.fact("pid"), w.pid)
        busy = [w for w in loads if w.fact("anyio") is None]
        for w in loads:
            if w not in busy:
                w.__exit__(None, None, None)
        if not busy:
            yield None, by_id
            return
        r = record_work(root_record_bin, busy)
        assert r.rc == 0, "asyncbpf-record failed" + r.describe()
        yield r, by_id


class Run:
    """One interpreter's part of the recording, and what its workload saw."""

    def __init__(self, r, w, interp):
        self.r, self.w, self.interp = r, w, interp
        self.mine = r.of_pid(w.pid)
        self.tasks = {t["name"]: t for t in w.all("task")}
        # --stats' lines about threads (their names, and what else it may say of them)
        self.stats = "; ".join(l for l in r.err_lines() if l.startswith("thread")) or \
            "no 'thread' line in --stats"

    def of_fn(self, fn):
        """The samples with a frame of fn."""
        return [s for s in self.mine if fn in fn_names(s)]

    def tids(self, fn):
        return self.w.after["tids"][fn]

    def truth(self, fn):
        """What the workload saw of fn, for a failure message."""
        a, stop = self.w.after, self.w.stop
        others = {g: sorted(set(a["tids"][g]) & set(a["tids"][fn]))
                  for g in a["tids"] if g != fn}
        return ("%s burnt %.2fs of CPU while sampled in %d calls, in threads %s (%s); "
                "threads it shared with the others: %s" % (
                    fn, stop["cpu"][fn] - self.w.before["cpu"][fn],
                    stop["calls"][fn] - self.w.before["calls"][fn], a["tids"][fn],
                    sorted({a["names"][str(t)] for t in a["tids"][fn]}),
                    {g: t for g, t in others.items() if t}))


@pytest.fixture
def run(recorded, python):
    r, loads = recorded
    w = loads[python.id]
    if w.fact("anyio") is not None:
        pytest.skip("%s: %s" % (python.id, w.fact("anyio")))
    return Run(r, w, python)


def fn_names(s, frames=None):
    """The function names of a sample's (or frames') Python frames: qualnames without
    their class (before 3.11 only co_name exists)."""
    return [f.qualname.rsplit(".", 1)[-1] for f in (s.frames if frames is None else frames)
            if isinstance(f, Frame)]


def linked_to(s, task, fn):
    """Whether s is fn's work drawn under task: [thread work], task the last task frame
    before the <thread NAME> frame, fn after it."""
    m = s.thread_mark()
    if not s.thread_work or m is None:
        return False
    before = [f.name for f in s.frames[:m] if isinstance(f, TaskFrame)]
    return bool(before) and before[-1] == task and fn in fn_names(s, s.frames[m + 1:])


def how_drawn(s, task, fn):
    """What a sample of fn shows, in a few words."""
    if linked_to(s, task, fn):
        return "linked"
    if not s.thread_work:
        return "under tasks %s" % s.tasks() if s.tasks() else "under its thread frame"
    return "[thread work] under tasks %s" % s.tasks()


def tally(samples, task, fn):
    out = {}
    for s in samples:
        k = how_drawn(s, task, fn)
        out[k] = out.get(k, 0) + s.count
    return ", ".join("%d %s" % (n, k) for k, n in sorted(out.items(), key=lambda kv: -kv[1]))


@pytest.mark.parametrize("pair", TASKS, ids=[t for t, _ in TASKS])
@pytest.mark.parametrize("python", interp_params())
def test_work_under_owner(run, pair):
    """At least 95% of the samples of a task's function run by a worker are drawn under
    that task: [thread work], <task OWNER> the last task before <thread ...>, the
    function after it."""
    task, fn = pair
    assert run.tasks[task]["fn"] == fn, run.tasks
    mine = run.of_fn(fn)
    n = total(mine)
    assert n >= MIN_SAMPLES, "only %d samples of %s (%s); %s" % (
        n, fn, run.truth(fn), run.stats) + run.r.describe()
    linked = [s for s in mine if linked_to(s, task, fn)]
    k = total(linked)
    assert k >= LINKED_SHARE * n, (
        "%s on %s: %d of %d samples of %s (%.1f%%, need %d%%) linked under <task %s> "
        "([thread work], <task %s> the last task before <thread ...>, %s after it); "
        "drawn: %s.\n%s; %s" % (
            task, run.interp.id, k, n, fn, 100.0 * k / n, 100 * LINKED_SHARE, task, task, fn,
            tally(mine, task, fn), run.truth(fn), run.stats)
        + show([s for s in mine if s not in linked], n=6, header="samples not linked"))


@pytest.mark.parametrize("pair", TASKS, ids=[t for t, _ in TASKS])
@pytest.mark.parametrize("python", interp_params())
def test_work_frames(run, pair):
    """A linked sample shows the owner's own coroutines (handler_X, then offload_X, first
    after <task OWNER>) down to anyio's run_sync_in_worker_thread, then <thread NAME> with
    the Python name of the threads that ran the function (AnyIO worker thread), then the
    function first: the pool's own frames (WorkerThread.run, threading's _bootstrap*)
    left out."""
    task, fn = pair
    via = run.tasks[task]["via"]
    mine = run.of_fn(fn)
    linked = [s for s in mine if linked_to(s, task, fn)]
    assert linked, "%s on %s: none of %d samples of %s is linked under <task %s>, nothing " \
        "to check; drawn: %s" % (task, run.interp.id, total(mine), fn, task,
                                  tally(mine, task, fn))
    names = {run.w.after["names"][str(t)] for t in run.tids(fn)}
    assert names == {WORKER_NAME}, "workload: %s ran in threads named %s" % (fn, names)
    bad = {}
    for s in linked:
        m = s.thread_mark()
        at = max(k for k, f in enumerate(s.frames[:m]) if isinstance(f, TaskFrame))
        owner, worker = fn_names(s, s.frames[at + 1:m]), fn_names(s, s.frames[m + 1:])
        why = []
        if s.frames[m].name != WORKER_NAME:
            why.append("<thread %s>, not <thread %s>" % (s.frames[m].name, WORKER_NAME))
        if not owner or owner[0] != via[0]:
            why.append("%s not first after <task %s>" % (via[0], task))
        it = iter(owner)
        if not all(v in it for v in via):
            why.append("not %s in this order after <task %s>" % (" then ".join(via), task))
        if not owner or owner[-1] != ANYIO_AWAIT:
            why.append("%s not last before <thread>" % ANYIO_AWAIT)
        if not isinstance(s.frames[m + 1] if m + 1 < len(s.frames) else None, Frame) or \
                worker[0] != fn:
            why.append("%s not first after <thread>" % fn)
        if any(isinstance(f, TaskFrame) for f in s.frames[m + 1:]):
            why.append("a task frame after <thread>")
        for w in why:
            bad.setdefault(w, []).append(s)
    assert not bad, "%s on %s: of %d linked samples of %s:\n%s" % (
        task, run.interp.id, total(linked), fn, "\n".join(
            "  %d %s" % (total(v), w) + show(v, n=3, header="    e.g.")
            for w, v in bad.items()))


@pytest.mark.parametrize("pair", TASKS, ids=[t for t, _ in TASKS])
@pytest.mark.parametrize("python", interp_params())
def test_work_under_no_other_task(run, pair):
    """No sample of a task's function is drawn under any other task: every one that has
    task frames has its owner last before <thread ...>, and no other request task."""
    task, fn = pair
    others = set(run.tasks) - {task}
    mine = run.of_fn(fn)
    assert total(mine) >= MIN_SAMPLES, "only %d samples of %s (%s)" % (
        total(mine), fn, run.truth(fn))
    wrong = [s for s in mine if others & set(s.tasks()) or
             ((s.thread_work or s.tasks()) and not linked_to(s, task, fn))]
    assert not wrong, "%s on %s: %d of %d samples of %s under a task other than %s; drawn: " \
        "%s.\n%s" % (task, run.interp.id, total(wrong), total(mine), fn, task,
                     tally(mine, task, fn), run.truth(fn)) + show(
                         wrong, n=6, header="samples under another task")


@pytest.mark.parametrize("pair", TASKS, ids=[t for t, _ in TASKS])
@pytest.mark.parametrize("python", interp_params())
def test_unlinked_drawn_as_before(run, pair):
    """A sample of a task's function not linked is drawn as before: the frame of one of
    the threads that ran it (the workload's tids), with their Python name, and no task."""
    task, fn = pair
    mine = [s for s in run.of_fn(fn) if not s.thread_work]
    tids = set(run.tids(fn))
    bad = [s for s in mine if s.tid not in tids or s.tname != WORKER_NAME or s.tasks()]
    assert not bad, "%s on %s: %d of %d samples of %s drawn without [thread work] are not " \
        "of a thread %s (%s) or show a task.\n%s" % (
            task, run.interp.id, total(bad), total(mine), fn, sorted(tids), WORKER_NAME,
            run.truth(fn)) + show(bad, n=6, header="offending samples")


@pytest.mark.parametrize("python", interp_params())
def test_plain_thread_alone(run):
    """The plain thread, started outside any task, is never drawn under one: each sample
    of burn_plain has its own thread frame (its name and tid), no [thread work], no task."""
    plain = run.w.fact("plain")
    fn = plain["fn"]
    mine = run.of_fn(fn)
    assert total(mine) >= MIN_SAMPLES, "only %d samples of %s (%s)" % (
        total(mine), fn, run.truth(fn)) + run.r.describe()
    tids = run.tids(fn)
    assert len(tids) == 1, "workload: %s ran in threads %s" % (fn, tids)
    bad = [s for s in mine if s.thread_work or s.tasks() or s.tid != tids[0] or
           s.tname != plain["name"]]
    assert not bad, "%s on %s: %d of %d samples of %s not drawn under its own thread %r " \
        "(tid %d) alone" % (fn, run.interp.id, total(bad), total(mine), fn, plain["name"],
                            tids[0]) + show(bad, n=6, header="offending samples")
