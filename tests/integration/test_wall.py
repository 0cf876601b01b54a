"""Wall-clock mode (--mode wall): every thread and every suspended asyncio task sampled at
each tick, weighted by the time it stands for (collapsed values in microseconds).

Concurrent recordings serve every test: (1) one wall and one CPU recording of wall_ab.py
(task A waits 70% / computes 30%, task B the reverse) on the oldest and the newest
interpreter, with wall_block.py (a thread blocked in a socket read) and a small
wall_idle.py on every interpreter; wall_ab.py on the others two at a time, when their
tests first need it; (2) two wall recordings of wall_idle.py (5,000 tasks awaiting one
event) on one interpreter, without and with --max-tasks 50. The truth of wall_ab.py is
what each task measured of itself."""
import contextlib
import json
import os
import re
import signal
import subprocess
import tempfile
import threading
import time

import pytest

from helpers import (INTERPRETERS, RECORD_TIMEOUT, WORKLOADS, Workload, assert_one_error_line,
                     marker_line, record, start_all, wait_for)

TOLERANCE = 0.07  # share points, wall mode against the measured truth
TOTALS = 0.05  # relative, wall time totals against elapsed time
IDLE_TASKS = 5000
RENAME_AT, RENAME_RECORD = 1.5, 4  # s into the recording, its length
SMALL_IDLE = 20
CPU_WAIT = 0.10  # most of a waiting function's share of its task's CPU samples
PROC_RE = re.compile(r"^(.*) \(pid (\d+)\)$")
THREAD_RE = re.compile(r"^(.*) \(tid (\d+)\)$")
SUSPENDED = "[suspended tasks]"


class Stack:
    def __init__(self, raw):
        stack, _, value = raw.rpartition(" ")
        assert value.isdigit(), "bad value in line: %.300r" % raw
        self.raw, self.value = raw, int(value)
        self.frames = stack.split(";")
        m = PROC_RE.match(self.frames[0])
        assert m, "bad process frame in line: %.300r" % raw
        self.pid = int(m.group(2))
        self.suspended = self.frames[1] == SUSPENDED
        m = THREAD_RE.match(self.frames[1])
        assert self.suspended or m, "bad second frame in line: %.300r" % raw
        self.tid = int(m.group(2)) if m else None

    def funcs(self):
        """Function names (the last part of each Python frame's qualname)."""
        return [f.split(" (")[0].rsplit(".", 1)[-1] for f in self.frames[2:]
                if not f.startswith("<task ")]

    def tasks(self):
        return [f[6:-1] for f in self.frames if f.startswith("<task ")]


def stacks(rec, pid):
    return [s for s in (Stack(l) for l in rec.out.splitlines() if l.strip()) if s.pid == pid]


def stat(rec, pattern):
    m = re.search(pattern, rec.err, re.M)
    assert m, "no %r in --stats:%s" % (pattern, rec.describe())
    return m


def value_of(sts, func):
    return sum(s.value for s in sts if func in s.funcs())


def show(sts, n=6):
    top = sorted(sts, key=lambda s: -s.value)[:n]
    return "\n".join("  %.400s" % s.raw for s in top)


class Rec:
    """asyncbpf-record's output: collapsed lines with a [suspended tasks] root, which
    helpers.Sample does not parse."""

    def __init__(self, argv, rc, out, err):
        self.argv, self.rc, self.out, self.err = argv, rc, out, err

    def describe(self):
        return "\n$ %s\nexit %s; stderr:\n%s" % (" ".join(self.argv), self.rc,
                                                 self.err.rstrip() or "  (empty)")


def ticking(p):
    """Whether wall-mode asyncbpf-record p ticks: its ticker thread runs (started once
    every target is examined, after the "profiling pid" lines)."""
    try:
        return len(os.listdir("/proc/%d/task" % p.pid)) > 1
    except OSError:
        return False


def run_record(binary, *args, timeout=240, on_start=None):
    """Runs asyncbpf-record; with -v, on_start(p) is called when it starts profiling (its
    first "profiling pid" line; p is its Popen)."""
    argv = [binary] + [str(a) for a in args]
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True, errors="replace")
    err, seen = [], []

    def read_err():
        for line in p.stderr:
            # -v says other things first (the walker variant, libbpf): the first
            # "profiling pid" line is the start, wherever it comes
            if on_start and "profiling pid" in line and not seen:
                seen.append(line)
                on_start(p)
            if "profiling pid" in line:
                err.append("")
            else:
                err.append(line)

    t = threading.Thread(target=read_err)
    t.start()
    timer = threading.Timer(timeout, p.kill)
    timer.start()
    out = p.stdout.read()
    p.wait()
    timer.cancel()
    t.join()
    return Rec(argv, p.returncode, out, "".join(err))


def run_all(jobs):
    """Runs asyncbpf-record concurrently; returns the recordings in order."""
    out = [None] * len(jobs)

    def one(i, args, kw):
        out[i] = run_record(*args, **kw)

    threads = [threading.Thread(target=one, args=(i, a, k)) for i, (a, k) in enumerate(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def ab_batches():
    """wall_ab.py keeps a CPU busy: too many at once on a shared machine starve one another,
    so it runs two interpreters at a time, the oldest and the newest first."""
    interps = sorted((i for i in INTERPRETERS if not i.missing), key=lambda i: i.version)
    first = interps[:1] + interps[-1:] if len(interps) > 1 else interps
    rest = [i for i in interps if i not in first]
    return [first] + [rest[k:k + 2] for k in range(0, len(rest), 2)]


def run_ab(stack, root_record_bin, ab_interps, others=()):
    """Starts wall_ab.py on ab_interps (and the workloads others), records them 8 s in wall
    mode (everything) and in CPU mode (wall_ab.py only), concurrently."""
    tmp = stack.enter_context(tempfile.TemporaryDirectory())
    truth = {i.id: os.path.join(tmp, "%s.json" % i.id) for i in ab_interps}
    loads = [Workload(i.path, "wall_ab.py", truth[i.id], timeout=60) for i in ab_interps]
    start_all(stack, loads + list(others))
    pids = ",".join(str(w.pid) for w in loads + list(others))
    started = threading.Event()
    before = {}

    def on_start(_):
        # loading BPF takes long on a busy machine: the truth starts with the ticks
        before.update({k: json.load(open(f)) for k, f in truth.items()})
        started.set()

    wall, cpu = run_all([
        ((root_record_bin, "--mode", "wall", "-p", pids, "-d", 8, "--stats", "-v", "--task-ids"),
         dict(timeout=240, on_start=on_start)),
        ((root_record_bin, "-p", ",".join(str(w.pid) for w in loads), "-F", 199, "-d", 8),
         dict(timeout=240)),
    ])
    after = {k: json.load(open(f)) for k, f in truth.items()}
    assert started.is_set(), "wall recording never started" + wall.describe()
    assert wall.rc == 0, "wall recording failed" + wall.describe()
    assert cpu.rc == 0, "cpu recording failed" + cpu.describe()
    spent = {k: {f: after[k][f] - before[k][f] for f in after[k]} for k in after}
    return dict(wall=wall, cpu=cpu, spent=spent,
                ab={i.id: w for i, w in zip(ab_interps, loads)})


@pytest.fixture(scope="module")
def ab(root_record_bin):
    interps = [i for i in INTERPRETERS if not i.missing]
    if not interps:
        pytest.skip("no supported interpreter installed")
    with contextlib.ExitStack() as stack:
        blocks = [Workload(i.path, "wall_block.py", timeout=60) for i in interps]
        idles = [Workload(i.path, "wall_idle.py", SMALL_IDLE, timeout=60) for i in interps]
        res = run_ab(stack, root_record_bin, ab_batches()[0], blocks + idles)
        res.update(block={i.id: w for i, w in zip(interps, blocks)},
                   idle={i.id: w for i, w in zip(interps, idles)})
        yield res


@pytest.fixture(scope="module")
def ab_more(root_record_bin):
    """The other batches of wall_ab.py, each run when a test first needs it."""
    done = {}

    def get(interp):
        batch = next(b for b in ab_batches()[1:] if interp in b)
        key = tuple(i.id for i in batch)
        if key not in done:
            with contextlib.ExitStack() as stack:
                done[key] = run_ab(stack, root_record_bin, batch)
        return done[key]
    return get


def ab_run(ab, ab_more, interp):
    """The recordings holding interp's wall_ab.py, and that workload."""
    res = ab if interp.id in ab["ab"] else ab_more(interp)
    return res, res["ab"][interp.id]


def test_wall_shares(ab, ab_more, interp):
    """Each task's wall time splits between waiting and computing as the task measured."""
    res, w = ab_run(ab, ab_more, interp)
    rec, spent = res["wall"], res["spent"][interp.id]
    sts = stacks(rec, w.pid)
    for wait, work in (("wait_a", "work_a"), ("wait_b", "work_b")):
        w, c = value_of(sts, wait), value_of(sts, work)
        assert w + c > 0, "no %s or %s in wall mode:\n%s%s" % (wait, work, show(sts),
                                                                rec.describe())
        want = spent[wait] / (spent[wait] + spent[work])
        got = w / (w + c)
        assert abs(got - want) <= TOLERANCE, (
            "%s share %.3f in wall mode, measured %.3f (%s):\n%s" % (
                wait, got, want, spent, show(sts)))
    # a task that awaits another is counted inside the awaited task's stack, not alone
    sus = [s for s in sts if s.suspended]
    for s in sus:
        assert "main" not in s.funcs() or len(s.tasks()) >= 2, (
            "the main task (awaiting A and B) sampled on its own: %.400s" % s.raw)
    # a suspended task ends at its wait; one that resumes while it is read may not
    odd = [s for s in sus if not {"wait_a", "wait_b"} & set(s.funcs())]
    assert sum(s.value for s in odd) <= 0.05 * sum(s.value for s in sus), (
        "suspended stacks of neither wait_a nor wait_b:\n%s" % show(odd))


def test_cpu_mode_excludes_waiting(ab, ab_more, interp):
    """CPU mode: the waiting functions are (next to) absent, and CPU spent in a loop
    callback outside any task is never charged to a task."""
    res, w = ab_run(ab, ab_more, interp)
    rec = res["cpu"]
    sts = stacks(rec, w.pid)
    in_a = sum(s.value for s in sts if {"work_a", "wait_a"} & set(s.funcs()))
    in_b = sum(s.value for s in sts if {"work_b", "wait_b"} & set(s.funcs()))
    assert in_a >= 10 and in_b >= 10, "too few samples in tasks A and B:\n%s%s" % (
        show(sts), rec.describe())
    # the lines around the await (asyncio.sleep's setup) do run on the CPU, and weigh
    # more on a busy machine: a few samples, far below the 70% and 30% of wall time
    for wait, total in (("wait_a", in_a), ("wait_b", in_b)):
        n = value_of(sts, wait)
        assert n <= max(2, CPU_WAIT * total), "%s in %d of %d CPU samples:\n%s" % (
            wait, n, total, show([s for s in sts if wait in s.funcs()]))
    cb = [s for s in sts if "cb_work" in s.funcs()]
    assert sum(s.value for s in cb) >= 3, "loop callback cb_work not sampled:\n%s" % show(sts)
    for s in cb:
        assert not s.tasks(), "callback CPU charged to a task: %.400s" % s.raw


def test_blocked_thread(ab, interp):
    """A thread blocked in a socket read shows its Python stack for the time it blocks."""
    rec, w = ab["wall"], ab["block"][interp.id]
    main = [s for s in stacks(rec, w.pid) if s.tid == w.pid]
    total = sum(s.value for s in main)
    blocked = sum(s.value for s in main if s.funcs() and s.funcs()[-1] == "blocked_read")
    elapsed_us = float(stat(rec, r"^wall elapsed: ([\d.]+) s").group(1)) * 1e6
    assert abs(total - elapsed_us) <= TOTALS * elapsed_us, (
        "main thread has %d us of %d:\n%s%s" % (total, elapsed_us, show(main),
                                                rec.describe()))
    assert blocked >= 0.95 * total, "blocked_read has %d of %d us:\n%s" % (
        blocked, total, show(main))


def test_suspended_tasks(ab, interp):
    """Every interpreter: each idle task's stack is <task main>, main's frames at its
    await, <task N>, idle_wait at its await line, then Event.wait; main alone never."""
    rec, w = ab["wall"], ab["idle"][interp.id]
    sts = stacks(rec, w.pid)
    sus = [s for s in sts if s.suspended]
    names = set()
    for s in sus:
        funcs = s.funcs()
        assert len(s.tasks()) == 2 and funcs[0] == "main" and funcs[1:3] == ["idle_wait",
                                                                              "wait"], (
            "unexpected suspended stack: %.400s" % s.raw)
        assert s.frames[-2].startswith("idle_wait (") and s.frames[-2].endswith(
            ":%d)" % marker_line(os.path.join(WORKLOADS, "wall_idle.py"), "await event")), (
            "idle_wait not at its await line: %.400s" % s.raw)
        names.add(s.tasks()[1])
    assert len(names) == SMALL_IDLE, "%d distinct idle tasks sampled, want %d:\n%s%s" % (
        len(names), SMALL_IDLE, show(sts), rec.describe())
    thread = sum(s.value for s in sts if s.tid == w.pid)
    tasks = sum(s.value for s in sus)
    assert abs(tasks - SMALL_IDLE * thread) <= TOTALS * SMALL_IDLE * thread, (
        "suspended tasks %d us for %d tasks over %d us" % (tasks, SMALL_IDLE, thread))


def test_renamed_task(root_record_bin):
    """A suspended task renamed during the recording shows under its new name from then on:
    a name is copied once and reused only while the task keeps the same name object."""
    interps = [i for i in INTERPRETERS if not i.missing]
    if not interps:
        pytest.skip("no supported interpreter installed")
    with contextlib.ExitStack() as stack:
        loads = [Workload(i.path, "wall_rename.py", timeout=60) for i in interps]
        start_all(stack, loads)
        timers, failed = [], []

        def rename(p):
            # RENAME_AT into the ticks, which start once every target has been examined
            # (seconds after the first "profiling pid" line on a loaded machine)
            try:
                wait_for(lambda: p.poll() is not None or ticking(p), RECORD_TIMEOUT,
                         "wall-mode asyncbpf-record to start ticking")
            except AssertionError as e:
                failed.append(e)
                return
            time.sleep(RENAME_AT)
            for w in loads:
                os.kill(w.pid, signal.SIGUSR1)

        def on_start(p):
            t = threading.Thread(target=rename, args=(p,))
            t.start()
            timers.append(t)

        rec = run_record(root_record_bin, "--mode", "wall", "-p",
                         ",".join(str(w.pid) for w in loads), "-d", RENAME_RECORD, "--stats",
                         "-v", on_start=on_start)
        for t in timers:
            t.join()
    assert rec.rc == 0, "wall recording failed" + rec.describe()
    assert timers, "wall recording never started" + rec.describe()
    assert not failed, "%s" % failed[0] + rec.describe()
    stat(rec, r"^wall task names from cache: [1-9]")
    for i, w in zip(interps, loads):
        sus = [s for s in stacks(rec, w.pid) if s.suspended and "renamed_wait" in s.funcs()]
        total = sum(s.value for s in sus)
        named = {n: sum(s.value for s in sus if n in s.tasks())
                 for n in ("name-before", "name-after")}
        assert total > 0, "%s: no suspended renamed_wait%s" % (i.id, rec.describe())
        # renamed 1.5 s into 4 s: about 0.37 before and 0.63 after
        assert named["name-after"] >= 0.3 * total and named["name-before"] >= 0.1 * total, (
            "%s: %s of %d us:\n%s" % (i.id, named, total, show(sus)))


def idle_interp():
    interps = [i for i in INTERPRETERS if not i.missing]
    return interps[-2] if len(interps) > 1 else (interps[0] if interps else None)


@pytest.fixture(scope="module")
def idle(root_record_bin):
    interp = idle_interp()
    if not interp:
        pytest.skip("no supported interpreter installed")
    with Workload(interp.path, "wall_idle.py", IDLE_TASKS, timeout=120) as w:
        full, capped = run_all([
            ((root_record_bin, "--mode", "wall", "-p", w.pid, "-d", 10, "--stats"),
             dict(timeout=240)),
            ((root_record_bin, "--mode", "wall", "-p", w.pid, "-d", 10, "--stats",
              "--max-tasks", 50), dict(timeout=240)),
        ])
        for r in (full, capped):
            assert r.rc == 0, "wall recording failed" + r.describe()
        yield dict(pid=w.pid, full=full, capped=capped)


def check_totals(rec, pid, capped):
    sts = stacks(rec, pid)
    elapsed = float(stat(rec, r"^wall elapsed: ([\d.]+) s").group(1)) * 1e6
    thread = sum(s.value for s in sts if s.tid == pid)
    tasks = sum(s.value for s in sts if s.suspended)
    idle_waits = sum(s.value for s in sts if s.suspended and "idle_wait" in s.funcs())
    # how many ticks kept their rate is speed, measured in docs/wall.md, not asserted: a
    # machine busy elsewhere delays the ticker whatever its budget
    taken = stat(rec, r"^wall ticks: (\d+) taken, (\d+) expected")
    assert int(taken.group(1)) >= 1, "no tick taken" + rec.describe()
    per_tick = stat(rec, r"^wall tasks per tick: ([\d.]+) listed, ([\d.]+) walked")
    assert float(per_tick.group(1)) >= 0.99 * IDLE_TASKS, "not every task listed" + rec.describe()
    assert float(per_tick.group(2)) >= 1, "no task walked" + rec.describe()
    stat(rec, r"^bpf run time per tick: \d+ us")
    if capped:
        stat(rec, r"^wall task samples: \d+ \(ticks capped by --max-tasks: [1-9]")
    # the thread's samples stand for the time between ticks, however late they come
    assert abs(thread - elapsed) <= TOTALS * elapsed, (
        "thread wall %d us, elapsed %d us%s" % (thread, elapsed, rec.describe()))
    # every task stands for each tick's interval; a sampled one for those left out too
    assert abs(tasks - IDLE_TASKS * thread) <= TOTALS * IDLE_TASKS * thread, (
        "suspended tasks %d us for %d tasks over %d us" % (tasks, IDLE_TASKS, thread))
    assert idle_waits >= 0.99 * tasks, "tasks not in idle_wait:\n%s" % show(sts)


def test_idle_tasks_all(idle):
    """5,000 idle tasks, each sampled at every tick: totals stay right however many ticks
    the walk keeps up with (taken vs expected in --stats)."""
    check_totals(idle["full"], idle["pid"], capped=False)


def test_idle_tasks_max_tasks(idle):
    """--max-tasks 50: 50 of the 5,000 per tick, each standing for 100."""
    check_totals(idle["capped"], idle["pid"], capped=True)


@pytest.mark.parametrize("args, words", [
    (["--mode", "idle"], ["mode", "idle"]),
    (["--max-tasks", "5"], ["--max-tasks", "wall"]),
    (["--mode", "wall", "--max-tasks", "0"], ["--max-tasks", "0"]),
    (["--mode", "wall", "--max-tasks", "x"], ["--max-tasks", "x"]),
])
def test_bad_wall_options(record_bin, args, words):
    assert_one_error_line(record(record_bin, *args, "-d", 1), 1, *words)
