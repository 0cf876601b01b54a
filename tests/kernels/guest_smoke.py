"""The smoke subset make test-kernels runs inside each guest kernel (tests/kernels/
test_kernels.py boots it): flat stacks on two interpreters, a stacked stack, the creation
probe, wall mode or its refusal, a non-Python pid, native frames. Each recording's
--stats go to $ASYNCBPF_RESULTS for the host to report (the BPF walker variant and its
cost)."""
import os
import re
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "integration"))
from helpers import (RECORD, WORKLOADS, Frame, Proc, Workload, assert_one_error_line,  # noqa
                     marker_line, record, run_tool, show, total)

RESULTS = os.environ.get("ASYNCBPF_RESULTS", "/tmp")
PYENV = os.environ.get("ASYNCBPF_GUEST_PYENV", "/root/.pyenv/versions/3.12.1/bin/python3.12")
DEBIAN = "/usr/bin/python3.11"
SHARE = 0.9


def kernel():
    m = re.match(r"^(\d+)\.(\d+)", os.uname().release)
    return (int(m.group(1)), int(m.group(2)))


def python(path):
    if not os.access(path, os.X_OK):
        pytest.skip("no %s on the host's root" % path)
    return path


def recorded(name, *args, **kw):
    """asyncbpf-record with --stats; the stats are kept in RESULTS/stats-NAME.txt."""
    r = record(RECORD, *args, "--stats", **kw)
    with open(os.path.join(RESULTS, "stats-%s.txt" % name), "w") as f:
        f.write(" ".join(r.argv) + "\n" + r.err)
    return r


def stat(r, name):
    m = re.search(r"^%s: (.*)$" % re.escape(name), r.err, re.M)
    return m.group(1) if m else None


@pytest.mark.parametrize("interp", [PYENV, DEBIAN], ids=["pyenv", "debian-3.11"])
def test_flat(interp):
    """The chain workload's stack, frame by frame, in nearly all its samples."""
    with Workload(python(interp), "chain.py") as w:
        r = recorded("flat-" + os.path.basename(interp), "-p", w.pid, "-d", 5, timeout=60)
    assert r.rc == 0, "asyncbpf-record failed" + r.describe()
    truth = [(f[0], f[1]) for f in w.fact("stack")]
    mine = r.of_pid(w.pid)
    inner = [s for s in mine if isinstance(s.leaf, Frame) and s.leaf.qualname == "inner"]
    assert total(inner) >= 20, "too few samples in inner" + r.describe()
    bad = [s for s in inner if [(f[0], f[1]) for f in s.frames] != truth]
    assert total(bad) <= (1 - SHARE) * total(inner), (
        "%d of %d samples differ from %s" % (total(bad), total(inner), truth)
        + show(bad, header="offending stacks"))
    busy = marker_line(os.path.join(WORKLOADS, "chain_lib.py"), "# BUSY")
    assert sum(s.count for s in inner if s.leaf.line == busy) >= SHARE * total(inner)
    walker = stat(r, "bpf walker")
    want = "bpf_loop" if kernel() >= (5, 17) else "bounded loops"
    assert walker and walker.startswith(want), "walker %r, want %r" % (walker, want) + r.describe()


def test_stacked():
    """A worker task gathered by the main task: <task main>;...;<task worker>;worker;leaf."""
    with Workload(python(DEBIAN), "small_async.py", 1, 20, 5) as w:
        r = recorded("stacked", "-p", w.pid, "-d", 5, timeout=60)
    assert r.rc == 0, "asyncbpf-record failed" + r.describe()
    leaf = [s for s in r.of_pid(w.pid) if isinstance(s.leaf, Frame) and s.leaf.qualname == "leaf"]
    assert total(leaf) >= 20, "too few samples in leaf" + r.describe()
    good = [s for s in leaf if len(s.tasks()) == 2 and s.qualnames()[-3:-1] == [
        "<task %s>" % s.tasks()[1], "worker"] and "main" in s.qualnames()]
    assert total(good) >= SHARE * total(leaf), (
        "%d of %d leaf samples are main's task then the worker's" % (total(good), total(leaf))
        + show([s for s in leaf if s not in good], header="other stacks"))


def test_creation_probe():
    """A child whose creator has returned is shown under its creator (only the task_init
    probe saw the link)."""
    with Workload(python(DEBIAN), "orphan.py", 1) as w:
        r = recorded("origin", "-p", w.pid, "-d", 6, timeout=60)
    assert r.rc == 0, "asyncbpf-record failed" + r.describe()
    burn = [s for s in r.of_pid(w.pid) if isinstance(s.leaf, Frame) and s.leaf.qualname == "burn"]
    assert total(burn) >= 20, "too few samples in burn" + r.describe()
    linked = [s for s in burn if len(s.tasks()) == 2 and s.tasks()[0].startswith("creator-")
              and s.tasks()[1] == "child-" + s.tasks()[0][len("creator-"):]]
    # the first generation may have been created before the probe was attached
    assert total(linked) >= 0.6 * total(burn), (
        "%d of %d samples show child-N under creator-N" % (total(linked), total(burn))
        + show([s for s in burn if s not in linked], header="other stacks"))
    created = stat(r, "tasks created")
    assert created and int(created.split()[0]) >= 2, "the probe saw no creation" + r.describe()


WALL_NEEDS = [((5, 17), "bpf_loop"), ((5, 18), "bpf_copy_from_user_task"),
              ((6, 1), "pid filter")]


def test_wall():
    """Wall mode shows the suspended worker task in its sleep; where the kernel lacks what
    it needs, one line names the missing features and their versions, exit 2."""
    with Workload(python(DEBIAN), "small_async.py", 1, 2, 100) as w:
        r = run_tool(RECORD, "--mode", "wall", "-p", w.pid, "-d", 5, "--stats", timeout=90)
    with open(os.path.join(RESULTS, "stats-wall.txt"), "w") as f:
        f.write(" ".join(r.argv) + "\n" + r.err)
    missing = [(v, what) for v, what in WALL_NEEDS if kernel() < v]
    if missing:
        assert_one_error_line(r, 2, "wall mode needs", *[w for _, w in missing],
                              *["Linux %d.%d" % v for v, _ in missing])
        assert "-v" not in r.err, "points to -v with no verifier log" + r.describe()
        return
    assert r.rc == 0, "wall mode failed" + r.describe()
    # wall output has suspended-task stacks ([suspended tasks] for a thread frame)
    counts = {}
    for line in r.out.split("\n"):
        stack, _, n = line.rpartition(" ")
        if stack.startswith("python3") and n.isdigit():
            counts[stack] = counts.get(stack, 0) + int(n)
    waiting = sum(n for st, n in counts.items() if re.search(
        r";<task [^;]*>;worker \([^;]*\);sleep \([^;]*\)$", st))
    # the main thread waits in epoll as long: half the weight each
    assert waiting >= 0.3 * sum(counts.values()), (
        "%d of %d wall weight in the worker task's sleep" % (waiting, sum(counts.values()))
        + r.describe())


def test_non_python_pid():
    with Proc(["sleep", "600"]) as p:
        r = record(RECORD, "-p", p.pid, "-d", 2)
    assert_one_error_line(r, 3, str(p.pid), "python")
    assert not r.samples, "output despite the error" + r.describe()


def test_native():
    """--native: Python -> c_outer -> c_mid -> c_leaf (tests/native/chain.c through ctypes)
    in nearly all the leaf's samples; kernels before 5.15 (no bpf_task_pt_regs) have the
    user registers of samples taken in user mode only, which these are."""
    lib = os.path.join(os.path.dirname(RECORD), "tests", "libchain.so")
    if not os.path.exists(lib):
        pytest.skip("%s not built" % lib)
    with Workload(python(DEBIAN), "native_chain.py", lib, "plain") as w:
        r = recorded("native", "-p", w.pid, "-d", 5, "--native", timeout=60)
    assert r.rc == 0, "asyncbpf-record --native failed" + r.describe()
    leaf = [s for s in r.of_pid(w.pid) if s.leaf == "c_leaf"]
    assert total(leaf) >= 20, "too few samples in c_leaf" + r.describe()
    want = ["<module>", "hot"]
    good = [s for s in leaf if s.frames[-3:] == ["c_outer", "c_mid", "c_leaf"] and
            [f.qualname for f in s.frames if isinstance(f, Frame)] == want]
    assert total(good) >= SHARE * total(leaf), (
        "%d of %d c_leaf samples are %s then the C chain" % (total(good), total(leaf), want)
        + show([s for s in leaf if s not in good], header="other stacks"))
