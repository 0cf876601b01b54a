"""Wall mode (--mode wall) and work a task awaits in a thread: the worker's sample at a
tick is drawn under the task, as in CPU mode ([thread work];...;<task OWNER>;OWNER's
frames;<thread NAME>;the job's frames), and the task's own suspended sample of that
tick is left out, so that its time is counted once.

tests/workloads/wall_work.py runs one task per mechanism (loop.run_in_executor with the
default executor, asyncio.to_thread, anyio.to_thread.run_sync), each awaiting a job of
its own that sleeps 0.2 s in the worker, call after call, and measures how long it
awaited. One wall recording of every interpreter at once. The recording's window and the
workload's differ by the time a question on stdin takes: the truth compared with is the
share of its time the task measured it awaited, times the wall time of the workload's
main thread in the profile (the recording's window as the profile counts it)."""
import contextlib
import os
import re
import signal
import subprocess
import time

import pytest

from helpers import RECORD_TIMEOUT, TIMEOUT_SCALE, Recording, show, total, wait_for
from workthreads import anyio_dir, ask, interp_params, linked_to, started, tally, wrong_task

SECONDS = 6  # recorded between the two questions
LINKED_SHARE = 0.90  # of a task's waiting, drawn with its job's frames under it
OWN_TOLERANCE = 0.10  # a task's waiting samples against its measured waiting
MECHS = ["default", "to_thread", "anyio"]


def ticking(p):
    """Whether wall-mode asyncbpf-record p ticks: its ticker thread runs."""
    try:
        return len(os.listdir("/proc/%d/task" % p.pid)) > 1
    except OSError:
        return False


@pytest.fixture(scope="module")
def recorded(root_record_bin, tmp_path_factory):
    """(Recording, {interpreter id: workload}): wall_work.py on every interpreter, one
    wall recording of all; each workload's .before and .stop are its answers when the
    recording had begun ticking and right before it was stopped."""
    extra = anyio_dir(str(tmp_path_factory.mktemp("anyio")))
    with started("wall_work.py", *([extra] if extra else [])) as pairs:
        loads = [w for _, w in pairs]
        argv = [root_record_bin, "--mode", "wall", "-p", ",".join(str(w.pid) for w in loads),
                "--stats"]
        timeout = RECORD_TIMEOUT * TIMEOUT_SCALE
        t0 = time.monotonic()
        rec = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            wait_for(lambda: rec.poll() is not None or ticking(rec), timeout,
                     "wall-mode asyncbpf-record to tick")
            assert rec.poll() is None, "asyncbpf-record exited (rc %s): %s" % (
                rec.returncode, rec.communicate()[1].decode(errors="replace")[-2000:])
            for w in loads:
                w.before = ask(w)
            time.sleep(SECONDS)
            for w in loads:
                w.stop = ask(w)
            rec.send_signal(signal.SIGINT)
            out, err = rec.communicate(timeout=timeout)
        finally:
            if rec.poll() is None:
                rec.kill()
                rec.wait()
        r = Recording(argv, rec.returncode, out.decode(errors="replace"),
                      err.decode(errors="replace"), time.monotonic() - t0)
        assert r.rc == 0, "asyncbpf-record failed" + r.describe()
        yield r, {i.id: w for i, w in pairs}


class Run:
    """One interpreter's part of the recording and what its workload measured."""

    def __init__(self, r, w, interp):
        self.r, self.w, self.interp = r, w, interp
        self.mine = r.of_pid(w.pid)
        self.mechs = {m["name"]: m for m in w.all("mech")}
        # the main thread (the loop's) is sampled at every tick: the profile's window
        self.window = total(s for s in self.mine if s.tid == w.pid)
        self.span = w.stop["t"] - w.before["t"]

    def waited(self, task):
        """The task's measured waiting, scaled to the profile's window (microseconds)."""
        share = (self.w.stop["wait"][task] - self.w.before["wait"][task]) / self.span
        return share * self.window

    def of_fn(self, fn):
        return [s for s in self.mine if any(getattr(f, "qualname", None) == fn
                                            for f in s.frames)]

    def truth(self, task):
        return "%s awaited %.3f s of %.3f s (%d calls); the main thread has %.3f s in the " \
            "profile" % (task, self.w.stop["wait"][task] - self.w.before["wait"][task],
                         self.span, self.w.stop["calls"][task] - self.w.before["calls"][task],
                         self.window / 1e6)


@pytest.fixture
def run(recorded, python):
    r, loads = recorded
    return Run(r, loads[python.id], python)


def mech(run, name):
    m = run.mechs[name]
    if m["why"]:
        pytest.skip(m["why"])
    return m["task"], m["fn"]


def stat(r, pattern):
    m = [re.match(pattern, l) for l in r.err_lines()]
    m = [x for x in m if x]
    assert len(m) == 1, "--stats: %d lines matching %r" % (len(m), pattern) + r.describe()
    return m[0]


@pytest.mark.parametrize("how", MECHS)
@pytest.mark.parametrize("python", interp_params())
def test_waiting_shows_the_job(run, how):
    """At least 90% of the time a task measured it awaited its job is drawn with the
    job's frames under it: [thread work], <task OWNER> the last task before <thread>,
    the job's function after it."""
    task, fn = mech(run, how)
    want = run.waited(task)
    assert run.window > 0 and want > 0, "no main-thread samples or no waiting: %s" % (
        run.truth(task)) + run.r.describe()
    mine = run.of_fn(fn)
    linked = total(s for s in mine if linked_to(s, task, fn))
    assert linked >= LINKED_SHARE * want, (
        "%s (%s) on %s: %.3f s of the job's samples under <task %s>, %.0f%% of the %.3f s "
        "it awaited (need %d%%); %s; the job drawn: %s" % (
            task, how, run.interp.id, linked / 1e6, task, 100.0 * linked / want, want / 1e6,
            100 * LINKED_SHARE, run.truth(task), tally(mine, task, fn)) + show(
                mine, n=4, header="the job's samples"))


@pytest.mark.parametrize("how", MECHS)
@pytest.mark.parametrize("python", interp_params())
def test_job_under_no_other_task(run, how):
    """No sample of a task's job is drawn under any other task."""
    task, fn = mech(run, how)
    mine = run.of_fn(fn)
    assert mine, "%s (%s) on %s: no sample of %s; %s" % (
        task, how, run.interp.id, fn, run.truth(task)) + run.r.describe()
    wrong = wrong_task(mine, task, fn)
    assert not wrong, "%s (%s) on %s: %d us of %s under a task other than %s; drawn: %s" % (
        task, how, run.interp.id, total(wrong), fn, task, tally(mine, task, fn)) + show(
            wrong, n=6, header="samples under another task")


@pytest.mark.parametrize("how", MECHS)
@pytest.mark.parametrize("python", interp_params())
def test_waiting_counted_once(run, how):
    """The task's waiting samples (its suspended ones, where it is the last task, and its
    workers' linked ones) total its measured waiting within 10%: a tick's suspended
    sample of a task a worker's sample is linked to is not counted too (that would make
    about twice)."""
    task, fn = mech(run, how)
    want = run.waited(task)
    sus = [s for s in run.mine if s.suspended and s.tasks() and s.tasks()[-1] == task]
    work = [s for s in run.mine if s.thread_work and linked_to(s, task, fn)]
    got = total(sus) + total(work)
    assert abs(got - want) <= OWN_TOLERANCE * want, (
        "%s (%s) on %s: %.3f s of waiting samples (%.3f s suspended, %.3f s of thread "
        "work), measured %.3f s; %s" % (
            task, how, run.interp.id, got / 1e6, total(sus) / 1e6, total(work) / 1e6,
            want / 1e6, run.truth(task)) + show(sus + work, n=6, header="its samples"))


def test_stats(recorded):
    """--stats counts the suspended samples folded into a worker's: every [thread work]
    sample linked at a tick has its task's suspended sample folded, but for those whose
    task was not listed at that tick (a snapshot behind)."""
    r, _ = recorded
    linked = int(stat(r, r"^thread work linked: (\d+)").group(1))
    folded = int(stat(r, r"^wall tasks folded into thread work: (\d+) ").group(1))
    assert linked > 0, "no thread work linked" + r.describe()
    assert 0.95 * linked <= folded <= linked, (
        "--stats: %d thread work samples linked, %d suspended samples folded" % (
            linked, folded) + r.describe())
