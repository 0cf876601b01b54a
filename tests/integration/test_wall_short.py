"""Wall mode (--mode wall) and tasks that live milliseconds, as a web service's requests
do (issue 27), and wall mode with 1,000 live tasks.

tests/workloads/short_tasks.py creates tasks of three groups, about 200 per second in
all: short_5ms (awaits asyncio.sleep(0.005)), short_20ms (awaits a future set 20 ms
later) and short_50ms (asyncio.sleep(0.05)), tasks named g5-N, g20-N and g50-N; each
task's life is measured from its create_task (a loaded loop may start it much later,
and wall mode counts it from then) to its last line. A task's memory is freed when it ends
and mostly taken by the next task created, of any group (the workload counts those).
tests/workloads/many_tasks.py 1000 holds 1,000 tasks awaiting futures never set and 4
that compute 0.5 ms every 10 ms.

One wall recording at 100 Hz of short_tasks.py on every interpreter at once, and beside
it one of many_tasks.py on one interpreter, both started together. The short-task
workloads are asked for their truth once the recording ticks and again right before it
is stopped; the recording's window and the workload's differ by the time a question
takes: a group's truth is its task-seconds in the workload's span, scaled by the wall
time of the workload's main thread in the profile over that span (the recording's
window as the profile counts it).

- test_short_task_seconds (acceptance 1): a group's task-seconds in the profile (its
  tasks' suspended samples, and its thread samples while one runs) within TOLERANCE of
  its tasks' summed lives.
- test_short_tasks_not_mixed (acceptance 4): no sample holds one group's frame under
  another group's task (or the main task), and no ended task is shown for much longer
  than it lived (a task counted after its end, at an address a new task took, would).
- test_thousand_tasks_ticks (acceptance 3): every tick of the 1,000-task recording
  walks every task (--stats: "ticks cut to the time budget") but for CUT_SHARE, on a
  host where a tick fits the budget with room (xfail, saying so, on a slower one)."""
import contextlib
import os
import re
import signal
import subprocess
import threading
import time
import warnings

import pytest

from helpers import (INTERPRETERS, RECORD_TIMEOUT, TIMEOUT_SCALE, Recording, TaskFrame, Workload,
                     show, start_all, total, wait_for)
from workthreads import ask

SECONDS = 20  # recorded between the two questions
FREQ = 100  # the default tick rate
# a group's task-seconds in wall mode against the truth, relative. A 5 ms task is seen
# at about half the 10 ms ticks, each sample standing for a tick: over ~2,000 such
# tasks the sum is off by about 2% (one sigma; 3% measured over 10 s, with late and cut
# ticks weighing more) by chance alone; 20 and 50 ms tasks by far less
TOLERANCE = 0.10
# an ended task shown for longer than it lived by more than this (s): about three ticks,
# jittered and a little late
PER_TASK_SLACK = 0.06
MANY = 1000
CUT_SHARE = 0.01  # ticks of the 1,000-task recording cut to the budget, at most
BUDGET_US = 1000000 // FREQ // 2  # a tick's task walks: half the period (docs/wall.md)
# a mean tick past this share of the budget leaves too little room for the ticks that
# take longer: the host is too slow for acceptance 3, which is then not checked (xfail)
SLOW_TICK = 0.6
TORN_SHARE = 0.01  # thread samples' time found torn, at most
GROUP_RE = re.compile(r"^g(\d+)-\d+$")


def ticking(p):
    """Whether wall-mode asyncbpf-record p ticks: its ticker thread runs."""
    try:
        return len(os.listdir("/proc/%d/task" % p.pid)) > 1
    except OSError:
        return False


def many_interp():
    """The 1,000-task recording's interpreter: a 3.11 (the issue's measures), else the
    newest."""
    interps = [i for i in INTERPRETERS if not i.missing]
    return next((i for i in interps if i.version[:2] == (3, 11)), interps[-1] if interps else None)


def finish(rec, argv, t0, timeout):
    rec.send_signal(signal.SIGINT)
    out, err = rec.communicate(timeout=timeout)
    return Recording(argv, rec.returncode, out.decode(errors="replace"),
                     err.decode(errors="replace"), time.monotonic() - t0)


@pytest.fixture(scope="module")
def recorded(root_record_bin):
    """{"short": Recording, "loads": {interpreter id: workload}, "many": Recording,
    "many_load": workload}: each short-task workload's .before and .stop are its answers
    once the recording ticked and right before it was stopped."""
    interps = [i for i in INTERPRETERS if not i.missing]
    if not interps:
        pytest.skip("no supported interpreter installed")
    timeout = RECORD_TIMEOUT * TIMEOUT_SCALE
    with contextlib.ExitStack() as stack:
        loads = start_all(stack, [Workload(i.path, "short_tasks.py", timeout=60, stdin=True)
                                  for i in interps])
        many = start_all(stack, [Workload(many_interp().path, "many_tasks.py", MANY,
                                          timeout=60)])[0]
        for w in loads + [many]:
            assert w.fact("pid") == w.pid, "workload %s's pid %s is not its process's %d" % (
                w.argv, w.fact("pid"), w.pid)
        argvs = [[root_record_bin, "--mode", "wall", "-F", str(FREQ), "--stats", "-p", pids]
                 for pids in (",".join(str(w.pid) for w in loads), str(many.pid))]
        t0 = time.monotonic()
        recs = [subprocess.Popen(a, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                for a in argvs]
        for r in recs:
            stack.callback(lambda r=r: r.poll() is None and (r.kill(), r.wait()))
        for r in recs:
            wait_for(lambda: r.poll() is not None or ticking(r), timeout,
                     "wall-mode asyncbpf-record to tick")
            assert r.poll() is None, "asyncbpf-record exited (rc %s): %s" % (
                r.returncode, r.communicate()[1].decode(errors="replace")[-2000:])
        for w in loads:
            w.before = ask(w)
        time.sleep(SECONDS)
        for w in loads:
            w.stop = ask(w)
        # both stopped at once: the SIGINT of one does not wait for the other's output
        done = [None, None]
        threads = [threading.Thread(target=lambda k=k: done.__setitem__(
            k, finish(recs[k], argvs[k], t0, timeout))) for k in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for r in done:
            assert r is not None and r.rc == 0, "asyncbpf-record failed" + (
                r.describe() if r else "")
        yield dict(short=done[0], loads={i.id: w for i, w in zip(interps, loads)},
                   many=done[1], many_load=many)


class Run:
    """One interpreter's part of the short-task recording and what its workload measured."""

    def __init__(self, r, w):
        self.r, self.w = r, w
        self.mine = r.of_pid(w.pid)
        self.groups = {g["name"]: g for g in w.all("group")}
        self.by_prefix = {g["prefix"]: g["name"] for g in self.groups.values()}
        self.by_fn = {g["fn"]: g["name"] for g in self.groups.values()}
        self.window = total(s for s in self.mine if s.tid == w.pid)
        self.span = w.stop["t"] - w.before["t"]
        self.budget = "; ".join(l for l in r.err_lines()
                                if l.startswith(("wall ticks:", "wall tasks per tick")))

    def task_group(self, name):
        m = GROUP_RE.match(name)
        return self.by_prefix.get("g%s-" % m.group(1)) if m else None

    def group_frames(self, s):
        """Indexes in s.frames of its frames of a group's function, but for a coroutine
        being made: 3.11+ run a new coroutine's frame for an instant when spawn_one calls
        the function (RETURN_GENERATOR), the leaf under spawn_one's frame."""
        fr = s.frames
        out = [k for k, f in enumerate(fr) if getattr(f, "qualname", None) in self.by_fn]
        return [k for k in out if not (k == len(fr) - 1 and k > 0 and
                                       getattr(fr[k - 1], "qualname", None) == "spawn_one")]

    def groups_of(self, s):
        """The groups a sample holds a frame or a task name of."""
        fns = {self.by_fn[s.frames[k].qualname] for k in self.group_frames(s)}
        return fns | {g for g in map(self.task_group, s.tasks()) if g}

    def task_above(self, s, k):
        """The name of the task whose frames s.frames[k] is among (None: no task)."""
        names = [f.name for f in s.frames[:k] if isinstance(f, TaskFrame)]
        return names[-1] if names else None

    def of_group(self, group):
        return [s for s in self.mine if self.groups_of(s) == {group}]

    def truth(self, group):
        """The group's task-seconds in the workload's span, scaled to the profile's
        window (microseconds)."""
        lived = self.w.stop["life"][group] - self.w.before["life"][group]
        return lived / self.span * self.window

    def describe(self, group):
        w = self.w
        return "%s: tasks lived %.3f s in %.3f s (%d started, %d ended); the main thread " \
            "has %.3f s in the profile; --stats: %s" % (
                group, w.stop["life"][group] - w.before["life"][group], self.span,
                w.stop["started"][group] - w.before["started"][group],
                w.stop["ended"][group] - w.before["ended"][group], self.window / 1e6,
                self.budget)


@pytest.fixture
def run(recorded, interp):
    return Run(recorded["short"], recorded["loads"][interp.id])


def test_short_task_seconds(run):
    """Acceptance 1: each group's task-seconds as wall mode shows them, within TOLERANCE
    of its tasks' summed lives. Printed with -s: truth and shown per group."""
    assert run.window > 0, "no sample of the main thread" + run.r.describe()
    bad = []
    for group in sorted(run.groups, key=lambda g: run.groups[g]["seconds"]):
        want, got = run.truth(group), total(run.of_group(group))
        sus = total(s for s in run.of_group(group) if s.suspended)
        print("%s %s: truth %.3f s, shown %.3f s (suspended %.3f s) = %.1f%%" % (
            run.w.argv[0], group, want / 1e6, got / 1e6, sus / 1e6,
            100.0 * got / want if want else 0))
        if abs(got - want) > TOLERANCE * want:
            bad.append("%s shown %.3f s of %.3f s (%.1f%%); %s" % (
                group, got / 1e6, want / 1e6, 100.0 * got / want if want else 0,
                run.describe(group)))
    assert not bad, "\n".join(bad) + show(run.mine) + run.r.describe()


def test_short_tasks_not_mixed(run):
    """Acceptance 4: 0 samples of one group's frames under another group's task name (or
    the main task's), or of two groups at once; no ended task shown for longer than it
    lived plus PER_TASK_SLACK (the tasks whose address a task of another group had held
    before are in the count)."""
    reused = sum(run.w.stop["reused"][g] - run.w.before["reused"][g] for g in run.groups)
    if not reused:
        pytest.skip("%s: no task took the address of an ended task of another group in the "
                    "window: nothing shows a task counted after its end" % run.w.argv[0])
    mixed, unnamed = [], []
    for s in run.mine:
        ks = run.group_frames(s)
        if not ks or s.tasks():
            # a group's frame in a sample of no task is a thread's walk gone wrong:
            # test_running_stacks_whole; under <task ?> (a name whose copy went with its
            # ended task before it was read: marked, counted) it names no other group
            above = [run.task_above(s, k) or "" for k in ks]
            if len(run.groups_of(s)) > 1 or any(
                    run.task_group(t) != run.by_fn[s.frames[k].qualname]
                    for t, k in zip(above, ks) if t != "?"):
                mixed.append(s)
            elif "?" in above:
                unnamed.append(s)
    assert not mixed, "%d samples (%.3f s) mix groups, or a group's frames under a task " \
        "not of it:%s" % (len(mixed), total(mixed) / 1e6, show(mixed, n=8))
    m = re.search(r"^task names unreadable: (\d+)", run.r.err, re.M)
    assert not unnamed or (m and int(m.group(1)) >= len(unnamed)), (
        "%d stacks show <task ?>, --stats counts %s unreadable names" % (
            len(unnamed), m.group(1) if m else "no line of") + show(unnamed))
    lives = dict(run.w.before["lives"], **run.w.stop["lives"])
    shown = {}
    for s in run.mine:
        if s.tasks() and run.task_group(s.tasks()[-1]):
            shown[s.tasks()[-1]] = shown.get(s.tasks()[-1], 0) + s.count
    over = {n: (us / 1e6, lives[n]) for n, us in shown.items()
            if n in lives and us / 1e6 > lives[n] + PER_TASK_SLACK}
    checked = sum(1 for n in shown if n in lives)
    assert checked, "no ended task of the window in the profile:" + show(run.mine)
    # a tick cut to the time budget walks some of its tasks, each standing for several;
    # a late tick stands for the time since the last: a task's own total may then pass
    # its life with nothing counted after its end (the group totals below still hold)
    cut = re.search(r"ticks cut to the time budget: (\d+)", run.budget)
    late = re.search(r"(\d+) late", run.budget)
    weighted = (int(cut.group(1)) if cut else 0) + (int(late.group(1)) if late else 0)
    if over and weighted:
        warnings.warn("%s: %d of %d ended tasks shown for longer than they lived, not "
                      "checked: %d ticks re-weighted (%s)" % (
                          run.w.argv[0], len(over), checked, weighted, run.budget))
        over = {}
    assert not over, "%d of %d ended tasks shown for longer than they lived (name: (shown s, " \
        "lived s)): %s\n--stats: %s%s" % (
            len(over), checked, dict(sorted(over.items())[:10]), run.budget,
            show([s for s in run.mine if s.tasks() and s.tasks()[-1] in over], n=8))
    for group in run.groups:
        want, got = run.truth(group), total(run.of_group(group))
        assert got <= (1 + TOLERANCE) * want, "%s shown %.3f s, more than its %.3f s: %s" % (
            group, got / 1e6, want / 1e6, run.describe(group))


def test_thousand_tasks_ticks(recorded):
    """Acceptance 3: 1,000 live tasks at 100 Hz: every one listed, and at most CUT_SHARE
    of the ticks cut to the time budget."""
    r, w = recorded["many"], recorded["many_load"]
    lines = "\n".join(l for l in r.err_lines() if l.startswith("wall "))
    print("%s, %d tasks:\n%s" % (w.argv[0], MANY, lines))
    ticks = re.search(r"^wall ticks: (\d+) taken, (\d+) expected", r.err, re.M)
    per_tick = re.search(r"^wall tasks per tick: ([\d.]+) listed, ([\d.]+) walked \(ticks cut "
                         r"to the time budget: (\d+)\)", r.err, re.M)
    assert ticks and per_tick, "no wall ticks or tasks per tick in --stats" + r.describe()
    taken, cut = int(ticks.group(1)), int(per_tick.group(3))
    listed, walked = float(per_tick.group(1)), float(per_tick.group(2))
    assert taken > 0, "no tick taken" + r.describe()
    assert listed >= MANY, "%.1f tasks listed per tick of %d live:\n%s" % (listed, MANY, lines)
    tick = re.search(r"^wall tick time: (\d+) us per tick", r.err, re.M)
    assert tick, "no wall tick time in --stats" + r.describe()
    if int(tick.group(1)) > SLOW_TICK * BUDGET_US:
        # the walk's speed is this host's: what the recorder owes is to cut no tick
        # that fits, however loaded the host
        pytest.xfail("issue 27 acceptance 3, not met on this host: a tick of %d tasks takes "
                     "%s us of the %d us budget (%d of %d ticks cut)" % (
                         MANY, tick.group(1), BUDGET_US, cut, taken))
    assert cut <= CUT_SHARE * taken, (
        "%d of %d ticks cut to the time budget (%.1f%%; %.1f of %.1f tasks walked per "
        "tick):\n%s" % (cut, taken, 100.0 * cut / taken, walked, listed, lines))


def test_running_stacks_whole(run, interp, request):
    """A thread sample holding a group's frames shows the task running them (its
    <task NAME> frame, of that group), under the loop's own frames: never frames of
    several groups strung together without a task, as a walk of frames that the running
    thread freed and reused meanwhile would read (wall mode reads a thread while it
    runs, where CPU mode interrupts it)."""
    if interp.version and interp.version[:2] <= (3, 10):
        request.applymarker(pytest.mark.xfail(reason="open: a running 3.8-3.10 thread read "
                                              "while it frees and reuses its heap frames"))
    threads = [s for s in run.mine if not s.suspended]
    # a walk found torn (its chain came back on itself, or led to no code object) is
    # marked [incomplete]: shown as cut, not as the task's, and it must stay rare
    torn = [s for s in threads if s.incomplete]
    bad = [s for s in threads if run.group_frames(s) and not s.incomplete and not s.tasks()]
    assert not bad, "%d thread samples (%.3f s) of a group's frames without their task:%s" % (
        len(bad), total(bad) / 1e6, show(bad, n=8))
    assert total(torn) <= TORN_SHARE * total(threads), (
        "%.3f s of %.3f s of thread samples marked [incomplete]:%s" % (
            total(torn) / 1e6, total(threads) / 1e6, show(torn, n=8)))
