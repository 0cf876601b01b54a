"""The three readers (asyncbpf-record --reader bpf|memcpy|vmreadv) against one another,
the memcpy reader's library inside targets that change under it or fault, and
asyncbpf-bench --quick (its numbers are printed, not checked).

A 60 s target whose tasks and frames churn is walked by the memcpy reader at 999 Hz
while the other tests of this file run; the last test checks it survived."""
import json
import math
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from helpers import (BUILD, INTERPRETERS_AVAILABLE, RECORD, RECORD_TIMEOUT, REPO, WORKLOADS,
                     assert_one_error_line, is_sampling, run_tool, wait_cpu, wait_for)

# built without the sanitizers in every build: it goes into the targets
PRELOAD = os.path.join(BUILD, "libasyncbpf-memcpy.so")
BENCH = os.path.join(BUILD, "asyncbpf-bench")
READERS = ["bpf", "memcpy", "vmreadv"]
AGREE = 0.90
# readers that stop the target for a sample (an interrupt, a signal): their profiles are
# compared line by line; vmreadv reads a running thread, which its own reads likely slow
# at its writes to the frame lines they read (taken from the other core), so within a
# hot loop it finds the target more often at some lines: measured, its line-by-line
# overlap with the others 0.93-0.99 where theirs with each other was 0.97-0.99, and
# 0.97-0.997 for all three with the lines left out. It is compared by function.
STOPPING = {"bpf", "memcpy"}
CHURN_S = 60
# CPU time a spinning target runs between the steps of a fault case: about 300 walks
# at 999 Hz
WALKED_CPU = 0.3


def pick(minimum=(3, 8)):
    """The newest pyenv interpreter at least minimum, else any available."""
    cands = sorted((i for i in INTERPRETERS_AVAILABLE if i.version >= minimum
                    and i.id.startswith("pyenv")), key=lambda i: i.version)
    cands = cands or [i for i in INTERPRETERS_AVAILABLE if i.version >= minimum]
    if not cands:
        pytest.skip("no interpreter %d.%d+ installed" % minimum)
    return cands[-1]


class Target:
    """A workload started with the memcpy reader's library preloaded."""

    def __init__(self, python, script, *args, pyflags=()):
        env = dict(os.environ, LD_PRELOAD=PRELOAD, PYTHONDONTWRITEBYTECODE="1")
        self.proc = subprocess.Popen(
            [python, "-u", *pyflags, os.path.join(WORKLOADS, script), *map(str, args)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            cwd=WORKLOADS, env=env, universal_newlines=True)
        line = self.proc.stdout.readline()
        if line.strip() != "READY":
            self.kill()
            raise AssertionError("%s did not start: %r %s" % (script, line,
                                                              self.proc.stderr.read()))

    @property
    def pid(self):
        return self.proc.pid

    def send(self, cmd):
        self.proc.stdin.write(cmd + "\n")
        self.proc.stdin.flush()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def start_record(reader, pids, freq, out, *extra):
    argv = [RECORD, "--reader", reader, "-p",
            ",".join(map(str, pids)), "-F", str(freq), "--stats", "-o", out, *extra]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            universal_newlines=True)


def wait_ready(rec, timeout=RECORD_TIMEOUT):
    """Waits until the recorder handles SIGINT: its reader is loaded (for bpf, the kernel
    accepted the program, which takes long on a loaded machine) and sampling starts."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and rec.poll() is None:
        try:
            with open("/proc/%d/status" % rec.pid) as f:
                cgt = [l for l in f if l.startswith("SigCgt:")]
        except OSError:
            break
        if cgt and int(cgt[0].split()[1], 16) & (1 << (signal.SIGINT - 1)):
            return
        time.sleep(0.05)
    raise AssertionError("asyncbpf-record did not start: %s" % (finish(rec)[1],))


def timer_running(rec):
    """The userspace readers' timer thread runs (it starts with the main loop)."""
    try:
        return len(os.listdir("/proc/%d/task" % rec.pid)) > 1
    except OSError:
        return False


def wait_sampling(rec, reader):
    """Waits until a recorder that handles SIGINT (wait_ready) also samples: the BPF
    reader's cpu-clock events are attached, or a userspace reader's timer runs."""
    wait_for(lambda: rec.poll() is not None or (
        is_sampling(rec.pid) if reader == "bpf" else timer_running(rec)), RECORD_TIMEOUT,
        "asyncbpf-record --reader %s to sample" % reader)
    assert rec.poll() is None, "--reader %s exited: %s" % (reader, finish(rec))


def finish(rec, timeout=30):
    """Ends a recording (SIGINT if still running); returns (rc, stderr)."""
    if rec.poll() is None:
        rec.send_signal(signal.SIGINT)
    try:
        _, err = rec.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        rec.kill()
        _, err = rec.communicate()
        raise AssertionError("asyncbpf-record did not stop: %s" % err)
    return rec.returncode, err


def stat(err, label):
    m = re.search(r"^%s: (\d+)" % re.escape(label), err, re.M)
    assert m, "no %r in --stats output: %s" % (label, err)
    return int(m.group(1))


def profile(path, pid):
    """pid's stacks from a collapsed file, without the process and thread frames."""
    prof = {}
    with open(path) as f:
        for line in f:
            stack, _, n = line.rstrip("\n").rpartition(" ")
            if "(pid %d)" % pid not in stack.split(";")[0]:
                continue
            key = ";".join(stack.split(";")[2:])
            prof[key] = prof.get(key, 0) + int(n)
    return prof


def by_function(prof):
    """prof with the frames' line numbers left out."""
    out = {}
    for k, n in prof.items():
        k = re.sub(r":\d+\)", ")", k)
        out[k] = out.get(k, 0) + n
    return out


def overlap(a, b):
    ta, tb = sum(a.values()), sum(b.values())
    return sum(min(a[k] / ta, b.get(k, 0) / tb) for k in a)


@pytest.fixture(scope="module")
def built(root_record_bin):
    for path in (PRELOAD, BENCH):
        if not os.path.exists(path):
            pytest.skip("%s not built (run make)" % os.path.relpath(path, REPO))
    return root_record_bin


@pytest.fixture(scope="module")
def tmp():
    d = tempfile.mkdtemp(prefix="asyncbpf-readers-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def churn(built, tmp):
    """The 60 s churning target under the memcpy reader at 999 Hz, faulthandler on."""
    py = pick()
    t = Target(py.path, "memcpy_churn.py", CHURN_S, pyflags=("-X", "faulthandler"))
    out = os.path.join(tmp, "churn.txt")
    rec = start_record("memcpy", [t.pid], 999, out)
    yield py, t, rec, out
    t.kill()
    if rec.poll() is None:
        rec.kill()
        rec.wait()


def test_readers_agree(built, tmp, churn):
    """Three readers on the same processes at once: their profiles overlap >= 0.9."""
    pys = {pick((3, 8)).id: pick((3, 8))}
    old = [i for i in INTERPRETERS_AVAILABLE if i.version[:2] in ((3, 9), (3, 10))]
    if old:
        pys[old[0].id] = old[0]
    targets = {k: Target(py.path, "readers_agree.py") for k, py in pys.items()}
    pids = [t.pid for t in targets.values()]
    try:
        outs = {r: os.path.join(tmp, "agree-%s.txt" % r) for r in READERS}
        recs = {r: start_record(r, pids, 999, outs[r], "--no-origins") for r in READERS}
        for r, rec in recs.items():
            wait_ready(rec)
            wait_sampling(rec, r)
        time.sleep(8)  # all three sample now: the window whose profiles are compared
        results = {r: finish(recs[r]) for r in READERS}
    finally:
        for t in targets.values():
            t.kill()
    for r, (rc, err) in results.items():
        assert rc == 0, "--reader %s failed: %s" % (r, err)
    # the BPF walk's phases split its mean: each ran, and they add up (4 rounded means)
    err = results["bpf"][1]
    total = re.search(r"^walk time per python sample: (\d+) ns$", err, re.M)
    phases = re.search(r"^walk phases per python sample: thread state (\d+) ns, frames "
                       r"(\d+) ns, tasks (\d+) ns, output (\d+) ns$", err, re.M)
    assert total and phases, "no walk time or phases in --stats:\n" + err
    parts = [int(x) for x in phases.groups()]
    assert all(parts) and abs(sum(parts) - int(total.group(1))) <= 4, (
        "phases %s do not add up to %s ns" % (parts, total.group(1)))
    for name, t in targets.items():
        profs = {r: profile(outs[r], t.pid) for r in READERS}
        for r, p in profs.items():
            assert sum(p.values()) >= 100, "%s: --reader %s: %d samples" % (
                name, r, sum(p.values()))
            assert any("<task A>" in k for k in p), "%s: --reader %s saw no task A: %s" % (
                name, r, sorted(p, key=p.get)[-3:])
        for i, a in enumerate(READERS):
            for b in READERS[i + 1:]:
                lines = a in STOPPING and b in STOPPING
                ov = overlap(profs[a], profs[b]) if lines else overlap(
                    by_function(profs[a]), by_function(profs[b]))
                print("%s: overlap %s-%s %.3f (%s)" % (
                    name, a, b, ov, "by line" if lines else "by function"))
                assert ov >= AGREE, "%s: %s and %s profiles overlap %.3f < %.2f (%s)" % (
                    name, a, b, ov, AGREE, "by line" if lines else "by function")


FAULT_CASES = {
    # faulthandler dumps the traceback, then the process dies of the signal
    "faulthandler": (("-X", "faulthandler"), [], -signal.SIGSEGV,
                     "Fatal Python error: Segmentation fault"),
    # a handler the program installs before being profiled
    "own-handler": ((), ["install"], 42, "own handler"),
    # one installed while the profiler is walking it, over faulthandler's
    "own-handler-late": (("-X", "faulthandler"), ["wait", "install"], 42, "own handler"),
}


@pytest.fixture(scope="module")
def segv_lib(tmp):
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler to build the test's SIGSEGV handler")
    out = os.path.join(tmp, "segv_handler.so")
    subprocess.run([cc, "-shared", "-fPIC", "-o", out,
                    os.path.join(WORKLOADS, "segv_handler.c")], check=True)
    return out


@pytest.mark.parametrize("case", sorted(FAULT_CASES))
def test_memcpy_real_fault_reaches_target(built, tmp, segv_lib, churn, case):
    pyflags, steps, want_rc, want_err = FAULT_CASES[case]
    py = pick()
    t = Target(py.path, "fault_target.py", segv_lib, pyflags=pyflags)
    out = os.path.join(tmp, "fault-%s.txt" % case)
    rec = start_record("memcpy", [t.pid], 999, out)
    try:
        wait_ready(rec)
        # the target is walked at each tick while it runs (a spinner runs, or waits for a
        # CPU)
        wait_sampling(rec, "memcpy")
        wait_cpu([t.pid], WALKED_CPU, RECORD_TIMEOUT, "CPU time while walked")
        for step in steps:
            if step == "wait":  # walked with faulthandler's handler in place, then install
                wait_cpu([t.pid], WALKED_CPU, RECORD_TIMEOUT, "CPU time while walked")
                continue
            t.send(step)
            assert t.proc.stdout.readline().strip() == "installed"
        wait_cpu([t.pid], WALKED_CPU, RECORD_TIMEOUT, "CPU time while walked")
        t.send("fault")
        rc = t.proc.wait(timeout=30)
        err = t.proc.stderr.read()
    finally:
        t.kill()
    rrc, rerr = finish(rec)
    assert rc == want_rc, "%s: exit %s, want %s; stderr: %s" % (case, rc, want_rc, err[-2000:])
    assert want_err in err, "%s: %r not on stderr: %s" % (case, want_err, err[-2000:])
    assert rrc == 0, rerr
    assert stat(rerr, "recorded samples") > 0, rerr
    print("%s: %d samples, %d faults caught" % (case, stat(rerr, "recorded samples"),
                                                 stat(rerr, "faults caught")))


def test_bench_quick(built, tmp, churn):
    """asyncbpf-bench --quick runs and writes its table, CSV and plot, thread work's and
    the long-lived chain's included; BPF runs with its creation probe, so nearly all of
    its samples of the chain walked a task chain."""
    py = pick((3, 11))
    out = os.path.join(tmp, "bench")
    r = subprocess.run([BENCH, "--quick", "--python", py.path, "--out", out],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=300)
    print(r.stdout)
    assert r.returncode == 0, r.stderr[-3000:]
    with open(os.path.join(out, "readers.csv")) as f:
        rows = f.read().splitlines()
    assert len(rows) == 16, rows
    for reader in READERS + ["bpf --native"]:
        for hz in (99, 999):
            assert any(row.startswith("%s @ %d Hz," % (reader, hz)) for row in rows), rows
    for run in ("linked", "thread", "link cost"):
        assert any(row.startswith("thread work %s @ 999 Hz,bpf," % run) for row in rows), rows
    for reader in READERS:
        assert any(row.startswith("chain %s @ 999 Hz,%s," % (reader, reader))
                   for row in rows), rows
    # the --native rows measure the stack copy and the unwinding, the others do not
    head = rows[0].split(",")
    for row in rows[1:]:
        v = dict(zip(head, row.split(",")))
        native = v["config"].startswith("bpf --native")
        assert (v["native_stack_bytes"] != "nan") == native, row
        assert (v["unwind_ns"] != "nan") == native, row
        # memcpy's whole cost adds the signal's round trip to its handler time, measured
        # in the run; the others' is their own time
        own, whole, sig = (float(v[k]) for k in ("cost_ns_med", "whole_ns_med", "signal_ns"))
        if v["reader"] == "none":
            assert math.isnan(own) and math.isnan(whole) and math.isnan(sig), row
            continue
        # thread work: most of the pool worker's samples are linked to the task awaiting
        # its item, none of the plain thread's; the difference row has no p90
        if v["config"].startswith("thread work linked"):
            assert float(v["linked_share"]) > 0.5, row
        elif v["config"].startswith("thread work thread"):
            assert float(v["linked_share"]) == 0, row
        if v["config"] == "chain bpf @ 999 Hz":
            assert float(v["in_task_share"]) > 0.9, row
        if v["config"].startswith("thread work link cost"):
            assert not math.isnan(own) and whole == own, row
            continue
        assert float(v["p90_ns_med"]) >= own, row
        if v["reader"] == "memcpy":
            assert sig > 0 and abs(whole - own - sig) <= 1, row  # each rounded to 1 ns
        else:
            assert sig == 0 and whole == own, row
    with open(os.path.join(out, "depth.svg")) as f:
        assert "<polyline" in f.read()
    assert "| none |" in r.stdout
    assert "| link's cost (linked - thread) | 2 |" in r.stdout, r.stdout
    # start-up: every start in each mode gave its figure
    for mode in ("cpu", "wall"):
        m = re.search(r"^\| %s \| (\d+) \| ([\d.]+) \(([\d.]+)-([\d.]+)\) \|$" % mode,
                      r.stdout, re.M)
        assert m, "no start-up row for %s mode:\n%s" % (mode, r.stdout)
        assert int(m.group(1)) == 5 and 0 < float(m.group(3)) <= float(m.group(2)), m.group(0)


@pytest.mark.parametrize("args,words", [
    (["--reader", "nope", "-p", "1"], ["unknown reader", "nope"]),
    (["--reader", "memcpy", "-a"], ["needs -p"]),
    (["--reader", "vmreadv"], ["needs -p"]),
], ids=["unknown", "memcpy-all", "vmreadv-no-pid"])
def test_reader_usage(record_bin, args, words):
    assert_one_error_line(run_tool(record_bin, *args), 1, *words)


def test_memcpy_without_library(built):
    """A target that did not load the library is refused (a profiling signal would kill
    it), in one line, exit 3."""
    py = pick()
    p = subprocess.Popen([py.path, "-c", "import time; print('READY', flush=True); "
                          "time.sleep(60)"], stdout=subprocess.PIPE,
                         env=dict(os.environ, LD_PRELOAD=""))
    try:
        assert p.stdout.readline().strip() == b"READY"
        r = run_tool(built, "--reader", "memcpy", "-p", p.pid, "-d", "1")
        assert_one_error_line(r, 3, str(p.pid), "LD_PRELOAD")
        assert p.poll() is None, "the target was killed"
    finally:
        p.kill()
        p.wait()


def test_memcpy_stats_outlive_target(built, tmp):
    """The memcpy reader's counts live in the target's shared memory: a target that exits
    while the recording runs still counts in --stats, as the bench's cost per sample needs
    (they were lost when the recorder saw the exit before its end)."""
    py = pick()
    t = Target(py.path, os.path.join(REPO, "tools", "bench", "workload.py"), 24, 3000)
    out = os.path.join(tmp, "outlive.txt")
    rec = start_record("memcpy", [t.pid], 999, out)
    try:
        wait_ready(rec)
        t.send("")
        res = t.proc.stdout.readline()
        assert '"result"' in res, "the workload did not finish: %r" % res
        t.proc.wait(timeout=60)
        time.sleep(1.5)  # for the recorder to see the exit: it drops the target then
        rc, err = finish(rec)
    finally:
        t.kill()
    assert rc == 0, err
    handled = re.search(r"^handler time per sample: \d+ ns \((\d+) runs\)$", err, re.M)
    assert handled and int(handled.group(1)) > 0, "no handler runs counted:\n" + err
    assert re.search(r"^median read time per sample: [1-9]\d* ns$", err, re.M), err


def test_memcpy_churn_survives(churn):
    """The churning target, walked at 999 Hz for 60 s, finishes with the right result."""
    py, t, rec, out = churn
    try:
        res, err = t.proc.communicate(timeout=CHURN_S + 120)
    except subprocess.TimeoutExpired:
        t.kill()
        raise AssertionError("the churning target did not finish")
    assert t.proc.returncode == 0, "target died (%s): %s" % (t.proc.returncode, err[-2000:])
    assert "Fatal Python error" not in err, err[-2000:]
    facts = [l for l in res.splitlines() if l.startswith("{")]
    assert facts, res
    f = json.loads(facts[-1])
    assert f["result"] == f["expected"] and f["waves"] > 0, f
    rc, rerr = finish(rec, timeout=60)
    assert rc == 0, rerr
    n = stat(rerr, "recorded samples")
    assert n > 0, rerr
    print("%s: %d waves, %d samples, %d faults caught, %d read errors" % (
        py.id, f["waves"], n, stat(rerr, "faults caught"), stat(rerr, "read errors")))
