"""Process lifecycle: a process that starts during the recording, and one that execs
into another Python version under the same pid."""
import os
import subprocess
import time

import pytest

from helpers import (INTERPRETERS_AVAILABLE, WORKLOADS, Frame, Recording, Workload, show,
                     total)


def python_frames(s):
    return [tuple(f[:2]) for f in s.frames if isinstance(f, Frame)]


def start_recording(binary, *args, timeout=60):
    """Starts asyncbpf-record and returns once it samples (its perf events are open):
    loading the BPF programs takes seconds."""
    rec = subprocess.Popen([binary] + [str(a) for a in args], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
    return wait_sampling(rec, timeout)


def wait_sampling(rec, timeout=60):
    """Returns rec once it samples (its perf events are open)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and rec.poll() is None:
        try:
            fds = os.listdir("/proc/%d/fd" % rec.pid)
            links = [os.readlink("/proc/%d/fd/%s" % (rec.pid, fd)) for fd in fds]
        except OSError:
            links = []
        if any("perf_event" in l for l in links):
            return rec
        time.sleep(0.05)
    rec.kill()
    out, err = rec.communicate()
    raise AssertionError("asyncbpf-record did not start sampling within %ss (rc %s): %s"
                         % (timeout, rec.returncode, err.decode(errors="replace")[-2000:]))


def finish(rec, seconds, timeout=60):
    try:
        out, err = rec.communicate(timeout=timeout)
    finally:
        if rec.poll() is None:
            rec.kill()
            rec.wait()
    r = Recording(rec.args, rec.returncode, out.decode(errors="replace"),
                  err.decode(errors="replace"), seconds)
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
    """Processes started 2 s into the recording are profiled from their first seconds,
    with the stacks the interpreters themselves report."""
    interps = distinct_minors()[-2:]
    if not interps:
        pytest.skip("no supported interpreter installed")
    rec = start_recording(root_record_bin, "-a", "-d", 6)
    loads = []
    try:
        time.sleep(2)
        for i in interps:
            loads.append(Workload(i.path, "spin.py", 3, reap=True).start())
        for w in loads:
            w.wait_ready()
        r = finish(rec, 6)
    finally:
        for w in loads:
            w.__exit__(None, None, None)
    for i, w in zip(interps, loads):
        mine = r.of_pid(w.pid)
        assert mine, "%s (pid %d) started 2 s in is absent" % (i.id, w.pid) + r.describe()
        want = [tuple(f[:2]) for f in w.fact("stack")]
        good = [s for s in mine if python_frames(s) == want]
        # a few samples may catch the interpreter starting or exiting
        assert total(good) >= 0.8 * total(mine) and total(good) >= 20, (
            "%s: %d of %d samples are in spin() with the right stack %s"
            % (i.id, total(good), total(mine), want) + show(mine, header="its stacks"))


def test_exec_into_another_version(root_record_bin):
    """Python A execs Python B under the same pid: both images are profiled, each with
    its own symbols, and no stack mixes the two."""
    interps = distinct_minors()
    if len(interps) < 2:
        pytest.skip("needs two Python minors, found %s" % interps)
    a, b = interps[0], interps[-1]
    rec = start_recording(root_record_bin, "-a", "-d", 6)
    try:
        time.sleep(1)
        with Workload(a.path, "exec_into.py", 2.5, b.path) as w:
            r = finish(rec, 6)
    finally:
        if rec.poll() is None:
            rec.kill()
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
