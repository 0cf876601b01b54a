"""Process lifecycle: a process that starts during the recording, and one that execs
into another Python version under the same pid."""
import os
import signal
import subprocess
import time

import pytest

from helpers import (INTERPRETERS_AVAILABLE, RECORD_TIMEOUT, WORKLOADS, Frame, Recording,
                     StderrLines, Workload, proc_exe, show, total, wait_cpu, wait_for,
                     wait_sampling)

# CPU time a spinning target runs once profiled: about 50 samples at 99 Hz
SAMPLED_CPU = 0.5
# CPU time each late process spins for, from its start
LATE_CPU = 0.6


def python_frames(s):
    return [tuple(f[:2]) for f in s.frames if isinstance(f, Frame)]


def start_recording(binary, *args, timeout=120):
    """Starts asyncbpf-record and returns once it samples (its perf events are open):
    loading the BPF programs takes seconds."""
    rec = subprocess.Popen([binary] + [str(a) for a in args], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
    wait_sampling(rec, timeout)
    rec.t0 = time.monotonic()
    return rec


def finish(rec, timeout=60, err=None):
    """Ends rec (SIGINT if still running) and returns its Recording; err: a StderrLines
    that has been reading rec's stderr."""
    if rec.poll() is None:
        rec.send_signal(signal.SIGINT)
    try:
        if err:
            rec.stderr = None  # err's thread reads it: communicate() reads only stdout
        out, stderr = rec.communicate(timeout=timeout)
        text = err.text() if err else stderr.decode(errors="replace")
    finally:
        if rec.poll() is None:
            rec.kill()
            rec.wait()
    r = Recording(rec.args, rec.returncode, out.decode(errors="replace"), text,
                  time.monotonic() - rec.t0)
    assert r.rc == 0, "recording failed" + r.describe()
    return r


def distinct_minors():
    seen, out = set(), []
    for i in INTERPRETERS_AVAILABLE:
        if i.version[:2] not in seen:
            seen.add(i.version[:2])
            out.append(i)
    return out


def test_late_process_has_correct_symbols(root_record_bin):
    """Processes started once the recording samples (after its first scan) are profiled
    from their start, with the stacks the interpreters themselves report: each spins
    LATE_CPU of its own CPU time (about 60 samples at 99 Hz: a wall-clock spin gets what
    a loaded machine leaves it), and the recording runs until both have exited."""
    interps = distinct_minors()[-2:]
    if not interps:
        pytest.skip("no supported interpreter installed")
    rec = start_recording(root_record_bin, "-a", "--stats")  # (examinations, if it fails)
    loads = []
    try:
        for i in interps:
            loads.append(Workload(i.path, "spin.py", LATE_CPU, "cpu").start())
        for w in loads:
            w.wait_ready()
        for w in loads:
            w.proc.wait(timeout=120)
        r = finish(rec)
    finally:
        if rec.poll() is None:
            rec.kill()
            rec.wait()
        for w in loads:
            w.__exit__(None, None, None)
    for i, w in zip(interps, loads):
        mine = r.of_pid(w.pid)
        assert mine, "%s (pid %d) started during the recording is absent" % (i.id, w.pid) + r.describe()
        want = [tuple(f[:2]) for f in w.fact("stack")]
        good = [s for s in mine if python_frames(s) == want]
        # a few samples may catch the interpreter starting or exiting
        assert total(good) >= 0.8 * total(mine) and total(good) >= 20, (
            "%s: %d of %d samples are in spin() with the right stack %s"
            % (i.id, total(good), total(mine), want) + show(mine, header="its stacks"))


def profiling_line(err, pid, interp):
    """-v's line saying that pid is profiled as interp's version."""
    return err.find(r"^asyncbpf-record: profiling pid %d \(.*, Python %d\.%d\." % (
        (pid,) + tuple(interp.version[:2])))


def test_exec_into_another_version(root_record_bin):
    """Python A execs Python B under the same pid: both images are profiled, each with
    its own symbols, and no stack mixes the two. A spins until it has been profiled for
    SAMPLED_CPU of its CPU time, then execs; B the same, then the recording ends."""
    interps = distinct_minors()
    if len(interps) < 2:
        pytest.skip("needs two Python minors, found %s" % interps)
    a, b = interps[0], interps[-1]
    rec = start_recording(root_record_bin, "-a", "-v")
    err = StderrLines(rec)
    try:
        with Workload(a.path, "exec_into.py", "stdin", b.path, stdin=True) as w:
            for img, then in ((a, lambda: w.send("exec")), (b, None)):
                wait_for(lambda: profiling_line(err, w.pid, img), 60,
                         "asyncbpf-record -v to profile pid %d as %s" % (w.pid, img.id))
                wait_cpu([w.pid], SAMPLED_CPU, RECORD_TIMEOUT, "CPU profiled as %s" % img.id)
                if then:
                    then()
                    exe = os.path.realpath(b.path)
                    wait_for(lambda: proc_exe(w.pid) == exe, 60,
                             "pid %d to exec %s" % (w.pid, exe))
            r = finish(rec, err=err)
    finally:
        if rec.poll() is None:
            rec.kill()
            rec.wait()
    pid = w.fact("pid")
    mine = r.of_pid(pid)
    exec_file = os.path.join(WORKLOADS, "exec_into.py")
    spin_file = os.path.join(WORKLOADS, "spin.py")
    comm_a, comm_b = os.path.basename(a.path), os.path.basename(b.path)
    before = [s for s in mine if ("spin_before_exec", exec_file) in python_frames(s)]
    after = [s for s in mine if ("spin", spin_file) in python_frames(s)]
    assert total(before) >= 20, "no samples of %s before the exec" % a.id + r.describe()
    assert total(after) >= 20, "no samples of %s after the exec" % b.id + r.describe()
    bad = [s for s in before if s.comm != comm_a] + [s for s in after if s.comm != comm_b]
    assert not bad, "stacks under the other image's name" + show(bad, header="offending")
    mixed = [s for s in mine if {f[1] for f in python_frames(s)} >= {exec_file, spin_file}]
    assert not mixed, "stacks mix the two images" + show(mixed, header="offending")
    # the new image's frames carry its own stdlib's lines: B's <module> is spin.py's
    assert all(python_frames(s)[0] == ("<module>", spin_file) for s in after), show(after)
