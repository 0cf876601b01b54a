"""`-a`: every Python process of every installed version in one recording, and no
process that is not Python."""
import contextlib
import re
import signal
import subprocess
import time

import pytest

from helpers import (INTERPRETERS_AVAILABLE, RECORD_TIMEOUT, Frame, Proc, Recording, Workload,
                     record_checked, show, total, wait_cpu, wait_sampling, wait_tracked)

RUNNING = {}  # interp id -> (pid, comm, ground-truth stack)


def comm_of(pid):
    with open("/proc/%d/comm" % pid) as f:
        return f.read().rstrip("\n")


def foreign_lines(r, pids):
    """stderr lines that name one of pids, or that are not warnings about other
    processes of the machine (-a may warn about an unsupported version, an exit, a
    process it may not read)."""
    bad = []
    for line in r.err_lines():
        named = {int(n) for n in re.findall(r"\b\d+\b", line)}
        benign = named and re.search(r"not supported|exit|warning", line, re.I)
        if named & set(pids) or not benign:
            bad.append(line)
    return bad


@pytest.fixture(scope="module")
def all_mode(root_record_bin):
    minors = {i.version[:2] for i in INTERPRETERS_AVAILABLE}
    if len(minors) < 3:
        pytest.skip("needs 3 distinct Python minors, found %s" % sorted(minors))
    with contextlib.ExitStack() as stack:
        loads = {i.id: stack.enter_context(Workload(i.path, "spin.py"))
                 for i in INTERPRETERS_AVAILABLE}
        sleeper = stack.enter_context(Proc(["sleep", "1000"]))
        shell = stack.enter_context(Proc(["sh", "-c", "while :; do :; done"]))
        running = {k: (w.pid, comm_of(w.pid), w.fact("stack")) for k, w in loads.items()}
        r = record_checked(root_record_bin, "-a", pids=[w.pid for w in loads.values()])
    return r, running, {"sleep": sleeper.pid, "sh loop": shell.pid}


def test_all_finds_every_version(all_mode, interp):
    r, running, _ = all_mode
    pid, comm, truth = running[interp.id]
    mine = r.of_pid(pid)
    assert mine, "%s (pid %d) absent from -a output" % (interp.id, pid) + r.describe()
    bad = [s for s in mine if s.comm != comm]
    assert not bad, "process frame is not %r" % comm + show(bad, header="offending")
    want = [tuple(f[:2]) for f in truth]
    odd = [s for s in mine if [f[:2] for f in s.frames if isinstance(f, Frame)] != want
           or len(s.frames) != len(want)]
    assert total(odd) <= 0.1 * total(mine), (
        "%d of %d samples are not in spin()" % (total(odd), total(mine))
        + show(odd, header="offending stacks"))


def test_all_skips_non_python(all_mode):
    r, _, others = all_mode
    assert r.samples, "no output" + r.describe()
    bad = [s for s in r.samples if s.pid in others.values()]
    assert not bad, "non-Python processes %s in the profile" % others + show(bad)


def test_all_stderr_clean(all_mode):
    r, running, others = all_mode
    pids = [p for p, _, _ in running.values()] + list(others.values())
    assert not foreign_lines(r, pids), "unexpected stderr lines" + r.describe()


def test_all_finds_late_process(root_record_bin):
    """A Python process started after the recording began (after its first scan of
    /proc) is profiled too."""
    if not INTERPRETERS_AVAILABLE:
        pytest.skip("no supported interpreter installed")
    py = INTERPRETERS_AVAILABLE[-1]
    rec = subprocess.Popen([root_record_bin, "-a"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
    try:
        wait_sampling(rec)
        t0 = time.monotonic()
        with Workload(py.path, "spin.py") as w:
            wait_tracked(rec, [w.pid])
            wait_cpu([w.pid], 0.5, RECORD_TIMEOUT, "CPU time while profiled")
            rec.send_signal(signal.SIGINT)
            out, err = rec.communicate(timeout=60)
    finally:
        if rec.poll() is None:
            rec.kill()
            rec.wait()
    r = Recording(rec.args, rec.returncode, out.decode(errors="replace"),
                  err.decode(errors="replace"), time.monotonic() - t0)
    assert r.rc == 0, "recording failed" + r.describe()
    assert r.of_pid(w.pid), "%s (pid %d) started during the recording is absent" % (
        py.id, w.pid) + r.describe()
