"""Shared parts of the thread-work tests (test_thread_work.py, test_pool_work.py): their
workloads (thread_work.py, pool_work.py, built on tests/workloads/_work.py) hand
functions from named tasks to worker threads and answer "now" on stdin with what those
functions did; a sample of such work is "linked" when drawn under the task that awaits
it: [thread work], <task OWNER> the last task frame before <thread NAME>, the function
after it."""
import contextlib
import json
import os
import select
import signal
import subprocess
import time

import pytest

# interp_params: for the tests that import it from here
from helpers import (INTERPRETERS, RECORD_TIMEOUT, TIMEOUT_SCALE, Frame, Recording,  # noqa: F401
                     TaskFrame, Workload, interp_params, show, start_all, total, wait_for,
                     wait_sampling)


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



@contextlib.contextmanager
def started(script, *args):
    """Runs script (with args) on every installed interpreter, each asserted to report
    its own pid; yields [(interpreter, workload)], all ended on exit. Skips the test
    without an interpreter."""
    interps = [i for i in INTERPRETERS if not i.missing]
    if not interps:
        pytest.skip("no supported interpreter installed")
    with contextlib.ExitStack() as stack:
        loads = start_all(stack, [Workload(i.path, script, *args, timeout=60, stdin=True)
                                  for i in interps])
        for w in loads:
            assert w.fact("pid") == w.pid, "%s's pid %s is not its process's %d" % (
                script, w.fact("pid"), w.pid)
        yield list(zip(interps, loads))


def ask(w):
    """The workload's answer to a line "now": its functions' CPU time, calls, threads..."""
    w.send("now")
    timeout = 30 * TIMEOUT_SCALE
    readable, _, _ = select.select([w.proc.stdout], [], [], timeout)
    assert readable, "workload %s (pid %d) did not answer within %gs" % (w.argv, w.pid, timeout)
    line = w.proc.stdout.readline().decode()
    assert line, "workload %s (pid %d) exited (rc %s): %s" % (
        w.argv, w.pid, w.proc.wait(), w.proc.stderr.read().decode(errors="replace")[-2000:])
    return json.loads(line)["now"]


def cpu_since(w, now):
    """{function: CPU seconds it burnt since sampling began} by an answer now."""
    return {fn: round(c - w.before["cpu"][fn], 3) for fn, c in now["cpu"].items()}


def record_work(binary, loads, freq, args, work_cpu, progress=cpu_since, pause=False,
                until=None):
    """Records loads at freq (asyncbpf-record's args besides -p and -F) until each of
    what progress(load, answer) counts has burnt work_cpu seconds since sampling began
    (the functions' own measure), and until(load, answer, seconds sampled) holds for each
    load, if given; each load's answers when sampling began, when it was told to stop and
    after it stopped go to its .before, .stop and .after, the seconds sampled (from the
    first answer to the last) to the Recording's .sampled. With pause, the loads are
    stopped (SIGSTOP) while the recorder writes its output."""
    argv = [binary, "-p", ",".join(str(w.pid) for w in loads), "-F", str(freq)] + args
    timeout = RECORD_TIMEOUT * TIMEOUT_SCALE
    t0 = time.monotonic()
    stopped = []
    rec = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_sampling(rec, timeout)
        t_begin = time.monotonic()
        for w in loads:
            w.before = ask(w)
        now, sampled = {}, [0.0]

        def done():
            assert rec.poll() is None, "asyncbpf-record exited (rc %s) while sampling" % (
                rec.returncode)
            for w in loads:
                w.stop = ask(w)
                now[w.pid] = progress(w, w.stop)
            sampled[0] = time.monotonic() - t_begin
            return all(c >= work_cpu for cpu in now.values() for c in cpu.values()) and (
                until is None or all(until(w, w.stop, sampled[0]) for w in loads))
        wait_for(done, timeout, lambda: "%gs of CPU in each function, sampled%s; have %s "
                 "after %.1fs" % (work_cpu, "" if until is None else " and " + (
                     until.__doc__ or until.__name__), now, sampled[0]), 0.2)
        if pause:
            for w in loads:
                os.kill(w.pid, signal.SIGSTOP)
            stopped = loads
        rec.send_signal(signal.SIGINT)
        out, err = rec.communicate(timeout=timeout)
        stopped = []
        if pause:
            for w in loads:
                os.kill(w.pid, signal.SIGCONT)
        for w in loads:
            w.after = ask(w)
    finally:
        for w in stopped:
            os.kill(w.pid, signal.SIGCONT)
        if rec.poll() is None:
            rec.kill()
            rec.wait()
    out, err = out.decode("utf-8", errors="replace"), err.decode("utf-8", errors="replace")
    r = Recording(argv, rec.returncode, out, err, time.monotonic() - t0)
    r.sampled = sampled[0]
    return r


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
    if task and linked_to(s, task, fn):
        return "linked"
    if not s.thread_work:
        return "under tasks %s" % s.tasks() if s.tasks() else "under its thread frame"
    return "[thread work] under tasks %s" % s.tasks()


def tally(samples, task, fn):
    """How samples of fn are drawn (how_drawn), counted, the most common first."""
    out = {}
    for s in samples:
        k = how_drawn(s, task, fn)
        out[k] = out.get(k, 0) + s.count
    return ", ".join("%d %s" % (n, k) for k, n in sorted(out.items(), key=lambda kv: -kv[1]))


def wrong_task(samples, task, fn, others=()):
    """The samples of fn drawn under a task that is not task: any task frame, or [thread
    work], without being linked_to(task); or a task frame of others anywhere."""
    others = set(others)
    return [s for s in samples if others & set(s.tasks()) or
            ((s.thread_work or s.tasks()) and not linked_to(s, task, fn))]


def frame_faults(linked, task, fn, via, awaits, names):
    """{what is wrong: [samples]} among linked samples of fn under task: the owner's
    coroutines via (in this order, via[0] first after <task OWNER>) down to awaits last
    before <thread NAME>, NAME one of names, fn first after it, no task frame after it."""
    bad = {}
    for s in linked:
        m = s.thread_mark()
        at = max(k for k, f in enumerate(s.frames[:m]) if isinstance(f, TaskFrame))
        owner, worker = fn_names(s, s.frames[at + 1:m]), fn_names(s, s.frames[m + 1:])
        why = []
        if s.frames[m].name not in names:
            why.append("<thread %s>, not one of the threads that ran %s: %s" % (
                s.frames[m].name, fn, names))
        if not owner or owner[0] != via[0]:
            why.append("%s not first after <task %s>" % (via[0], task))
        it = iter(owner)
        if not all(v in it for v in via):
            why.append("not %s in this order after <task %s>" % (" then ".join(via), task))
        if not owner or owner[-1] != awaits:
            why.append("%s not last before <thread>" % awaits)
        if not isinstance(s.frames[m + 1] if m + 1 < len(s.frames) else None, Frame) or \
                worker[0] != fn:
            why.append("%s not first after <thread>" % fn)
        if any(isinstance(f, TaskFrame) for f in s.frames[m + 1:]):
            why.append("a task frame after <thread>")
        for w in why:
            bad.setdefault(w, []).append(s)
    return bad


def faults_text(bad):
    """frame_faults' answer as lines: each fault, its samples counted, a few shown."""
    return "\n".join("  %d %s" % (total(v), w) + show(v, n=3, header="    e.g.")
                     for w, v in bad.items())


class WorkRun:
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
        """The native ids of the threads that ran fn."""
        return self.w.after["tids"][fn]

    def names(self, fn):
        """The Python names of the threads that ran fn."""
        return sorted({self.w.after["names"][str(t)] for t in self.tids(fn)})

    def submitted_by(self, fn):
        """What truth() says of who submitted fn: nothing, unless the workload knows."""
        return ""

    def truth(self, fn):
        """What the workload saw of fn, for a failure message."""
        a, stop, before = self.w.after, self.w.stop, self.w.before
        others = {g: sorted(set(a["tids"][g]) & set(a["tids"][fn]))
                  for g in a["tids"] if g != fn}
        return ("%s burnt %.2fs of CPU while sampled in %d calls, in threads %s (%s)%s; "
                "threads it shared with the others: %s" % (
                    fn, stop["cpu"][fn] - before["cpu"][fn],
                    stop["calls"][fn] - before["calls"][fn], a["tids"][fn], self.names(fn),
                    self.submitted_by(fn), {g: t for g, t in others.items() if t}))
