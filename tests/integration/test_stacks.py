"""Stacks of known CPU-bound workloads (`-p PID`) against the interpreter's own view:
a call chain through 30 recursions, four threads in four chains plus a sleeper, and a
recursion deeper than the sampler keeps."""
import os

import pytest

from helpers import WORKLOADS, Frame, Workload, marker_line, record_checked, show, total

SHARE = 0.95
MIN_LEAF_SAMPLES = 100
# CPU time a spinning target runs under the sampler: about 160 samples at 99 Hz, so that
# MIN_LEAF_SAMPLES is no matter of chance (a fixed -d gives a loaded machine's share of it)
LEAF_CPU = 1.6
# each thread of threads.py: about 50 samples, for the 20 asserted
THREAD_CPU = 0.5
MAX_FRAMES = 256


def pairs(frames):
    return [(f[0], f[1]) for f in frames]


def share(part, whole):
    return total(part) / total(whole) if whole else 0.0


# -- outer -> middle -> inner under 30 recursions ---------------------------------------

@pytest.fixture(scope="module")
def chain(root_record_bin, interp, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("chain") / "chain.collapsed")
    with Workload(interp.path, "chain.py") as w:
        r = record_checked(root_record_bin, "-p", w.pid, output=out, pids=[w.pid], cpu=LEAF_CPU)
    truth = [Frame(f) for f in w.fact("stack")]
    mine = r.of_pid(w.pid)
    inner = [s for s in mine if isinstance(s.leaf, Frame) and s.leaf.qualname == "inner"]
    return w, r, truth, mine, inner


def test_chain_ground_truth(chain, interp):
    """The workload's own stack is what the test expects (guards the workload)."""
    _, _, truth, _, _ = chain
    cls = "Worker." if interp.has_qualname else ""
    want = ["<module>", "main"] + ["recurse"] * 30 + [cls + "outer", cls + "middle", "inner"]
    assert [f.qualname for f in truth] == want
    lib = os.path.join(WORKLOADS, "chain_lib.py")
    assert [f.filename for f in truth] == [os.path.join(WORKLOADS, "chain.py")] * 34 + [lib]


def test_chain_enough_samples(chain):
    _, r, _, mine, inner = chain
    assert total(inner) >= MIN_LEAF_SAMPLES, (
        "only %d samples with leaf inner" % total(inner) + r.describe())
    assert all(s.pid == chain[0].pid for s in r.samples), (
        "-p PID output holds other pids" + show([s for s in r.samples if s.pid != chain[0].pid]))
    # A CPU-bound process spends nearly all its time in inner's loop.
    assert share(inner, mine) >= 0.90, (
        "leaf inner in only %.1f%% of the process's samples" % (100 * share(inner, mine))
        + show([s for s in mine if s not in inner], header="other stacks"))


def test_chain_stack(chain):
    _, r, truth, _, inner = chain
    if not inner:
        pytest.fail("no samples with leaf inner" + r.describe())
    bad = [s for s in inner if s.truncated or pairs(s.frames) != pairs(truth)]
    assert share(bad, inner) <= 1 - SHARE, (
        "%d of %d leaf-inner samples differ from the expected qualnames/files"
        % (total(bad), total(inner))
        + "\nexpected: %s" % ";".join("%s (%s)" % f[:2] for f in truth)
        + show(bad, header="offending stacks"))


def test_chain_leaf_line(chain):
    _, r, _, _, inner = chain
    if not inner:
        pytest.fail("no samples with leaf inner" + r.describe())
    busy = marker_line(os.path.join(WORKLOADS, "chain_lib.py"), "# BUSY")
    bad = [s for s in inner if s.leaf.line != busy]
    assert share(bad, inner) <= 1 - SHARE, (
        "%d of %d leaf-inner samples not at the busy line %d" % (total(bad), total(inner), busy)
        + show(bad, header="offending stacks"))


def test_chain_caller_lines(chain):
    """Every caller frame is at its call site, as the interpreter itself reports."""
    _, r, truth, _, inner = chain
    good = [s for s in inner if pairs(s.frames) == pairs(truth)]
    if not good:
        pytest.fail("no sample with the expected stack" + r.describe())
    bad = [s for s in good if [f.line for f in s.frames[:-1]] != [f.line for f in truth[:-1]]]
    assert share(bad, good) <= 1 - SHARE, (
        "%d of %d samples have wrong caller lines" % (total(bad), total(good))
        + "\nexpected lines: %s" % [f.line for f in truth[:-1]]
        + show(bad, header="offending stacks"))


# -- four threads in four chains, one sleeper ---------------------------------------------

@pytest.fixture(scope="module")
def threads(root_record_bin, interp):
    with Workload(interp.path, "threads.py") as w:
        spinners = [(w.pid, t["tid"]) for t in w.all("thread") if t["name"].startswith("worker-")]
        r = record_checked(root_record_bin, "-p", w.pid, pids=spinners, cpu=THREAD_CPU)
    info = {t["tid"]: t for t in w.all("thread")}
    assert len(info) == 5, "workload reported threads %s" % w.all("thread")
    return w, r, info


def own_names(t):
    return {f[0] for f in t["stack"]} - {f[0] for f in t["stack"][:3]}  # minus threading's


@pytest.mark.parametrize("letter", "abcd")
def test_threads_own_chain(threads, letter):
    w, r, info = threads
    (t,) = [t for t in info.values() if t["name"] == "worker-" + letter]
    mine = [s for s in r.of_pid(w.pid) if s.tid == t["tid"]]
    assert total(mine) >= 20, (
        "only %d samples of worker-%s (tid %d)" % (total(mine), letter, t["tid"]) + r.describe())
    want = pairs(t["stack"])
    bad = [s for s in mine if s.truncated or pairs(s.frames) != want]
    assert share(bad, mine) <= 1 - SHARE, (
        "%d of %d samples of tid %d lack its chain" % (total(bad), total(mine), t["tid"])
        + "\nexpected: %s" % ";".join("%s (%s)" % tuple(f[:2]) for f in t["stack"])
        + show(bad, header="offending stacks"))
    # Python's name of the thread (Thread-N), not the OS name it set (worker-X)
    bad = [s for s in mine if s.tname != t["pyname"]]
    assert not bad, "thread frame is not %r" % t["pyname"] + show(bad, header="offending")


def test_threads_no_foreign_chain(threads):
    """No thread's samples carry another thread's functions; every tid is a known one."""
    w, r, info = threads
    mine = r.of_pid(w.pid)
    assert mine, "no samples" + r.describe()
    names = {tid: own_names(t) for tid, t in info.items()}
    every = set().union(*names.values())
    known = set(info) | {w.pid}
    bad = [s for s in mine if s.tid not in known
           or (set(s.qualnames()) & every) - names.get(s.tid, set())]
    assert not bad, ("samples under the wrong thread (threads: %s)"
                     % {tid: t["name"] for tid, t in info.items()}
                     + show(bad, n=8, header="offending stacks"))


def test_threads_sleeper_idle(threads):
    w, r, info = threads
    mine = r.of_pid(w.pid)
    (t,) = [t for t in info.values() if t["kind"] == "sleep"]
    slept = [s for s in mine if s.tid == t["tid"]]
    assert total(slept) <= max(2, 0.02 * total(mine)), (
        "sleeping thread %d has %d of %d samples" % (t["tid"], total(slept), total(mine))
        + show(slept, header="its stacks"))


# -- 300-deep recursion ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def deep(root_record_bin, interp):
    with Workload(interp.path, "deep.py", 300) as w:
        r = record_checked(root_record_bin, "-p", w.pid, pids=[w.pid], cpu=LEAF_CPU)
    return w, r, r.of_pid(w.pid)


def test_deep_truncated(deep):
    w, r, mine = deep
    assert total(mine) >= MIN_LEAF_SAMPLES, "only %d samples" % total(mine) + r.describe()
    path = w.fact("stack")[-1][1]
    assert os.path.basename(path) == "deep.py" and len(w.fact("stack")) == 301
    problems = {
        "not marked [truncated]": [s for s in mine if not s.truncated],
        "a frame other than recurse (%s)" % path: [
            s for s in mine if any(not isinstance(f, Frame) or f[:2] != ("recurse", path)
                                   for f in s.frames)],
        "not %d frames" % MAX_FRAMES: [s for s in mine if len(s.frames) != MAX_FRAMES],
    }
    msg = "".join(show(v, n=3, header=k) for k, v in problems.items() if v)
    assert not msg, msg


def test_deep_lines(deep):
    w, r, mine = deep
    src = os.path.join(WORKLOADS, "deep.py")
    busy, call = marker_line(src, "# BUSY"), marker_line(src, "# CALL")
    if not mine:
        pytest.fail("no samples" + r.describe())
    bad = [s for s in mine if not s.frames or any(not isinstance(f, Frame) for f in s.frames)
           or s.leaf.line != busy or any(f.line != call for f in s.frames[:-1])]
    assert share(bad, mine) <= 1 - SHARE, (
        "%d of %d samples not at lines %d (recursive call) ... %d (leaf)"
        % (total(bad), total(mine), call, busy) + show(bad, n=3, header="offending stacks"))

