"""--native (issue 15): native frames interleaved with Python frames and stacked stacks,
on every interpreter of the suite, against a C chain built without frame pointers
(tests/native/chain.c, called through ctypes), and against perf's own DWARF unwinder."""
import json
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from helpers import (ANON_CODE, BUILD, INTERPRETERS_AVAILABLE, NATIVE_ENDS, Frame, NativeFrame,
                     TaskFrame, Workload, record_checked, show, total, wait_cpu)

CHAIN = os.path.join(BUILD, "tests", "libchain.so")
SHARE = 0.95
# about 150 samples at 99 Hz: a share of 95% is then no matter of chance
LEAF_CPU = 1.5
MIN_LEAF = 100
C_CHAIN = ["c_outer", "c_mid", "c_leaf"]
EXT_CHAIN = ["ext_outer", "ext_mid", "ext_leaf"]
ANON_CHAIN = ["c_anon_outer", "c_anon_mid"]
OURS = (set(C_CHAIN) | {"cb_outer", "cb_mid"} | set(EXT_CHAIN) | {"ext_cb_outer", "ext_cb_mid"}
        | set(ANON_CHAIN))


@pytest.fixture(scope="module")
def chain_lib():
    for f in (CHAIN, os.path.join(os.path.dirname(CHAIN), "chainext.abi3.so")):
        if not os.path.exists(f):
            pytest.skip("%s not built (run make)" % f)
    return CHAIN


def skeleton(s):
    """The stack's Python frames, task frames and the chain's own C functions, root first:
    what the chain fixes (libffi's and ctypes' frames between them vary by build)."""
    out = []
    for f in s.frames:
        if isinstance(f, Frame):
            out.append(f.qualname)
        elif isinstance(f, TaskFrame):
            out.append(f)
        elif isinstance(f, NativeFrame) and f in OURS:
            out.append(str(f))
        elif f == NATIVE_ENDS:
            out.append(f)
    return out


def record_mode(record_bin, interp, lib, mode, tmp_path, *extra, leaf_name="c_leaf"):
    """A recording of the chain workload; each stack is unwound by the fast path and by
    libdw's own unwinder too (ASYNCBPF_NATIVE_CHECK=1), which must agree on every one."""
    out = str(tmp_path / ("%s.collapsed" % mode))
    with Workload(interp.path, "native_chain.py", lib, mode) as w:
        r = record_checked(record_bin, "-p", w.pid, "--native", "--stats", *extra, output=out,
                           pids=[w.pid], cpu=LEAF_CPU,
                           env=dict(os.environ, ASYNCBPF_NATIVE_CHECK="1"))
    leaf = [s for s in r.of_pid(w.pid) if s.leaf == leaf_name]
    assert total(leaf) >= MIN_LEAF, "only %d samples end in %s" % (
        total(leaf), leaf_name) + r.describe()
    m = re.search(r"^native stacks checked against libdw: (\d+), (\d+) differ$", r.err, re.M)
    assert m and int(m.group(1)) >= total(leaf) and m.group(2) == "0", r.describe()
    return r, leaf


def exact_share(leaf, want, chain=C_CHAIN):
    good = [s for s in leaf if skeleton(s) == want and s.frames[-3:] == chain]
    return total(good) / total(leaf), [s for s in leaf if s not in good]


@pytest.mark.parametrize("mode, want", [
    ("plain", ["<module>", "hot"] + C_CHAIN),
    ("callback", ["<module>", "hot_cb", "cb_outer", "cb_mid", "py_callback"] + C_CHAIN),
])
def test_chain(root_record_bin, interp, chain_lib, tmp_path, mode, want):
    """Python -> C -> C -> C, and C -> Python -> C: the exact interleaved chain in 95% of
    the leaf's samples."""
    r, leaf = record_mode(root_record_bin, interp, chain_lib, mode, tmp_path)
    share, bad = exact_share(leaf, want)
    assert share >= SHARE, ("%.1f%% of c_leaf's samples show %s" % (100 * share, want)
                            + show(bad, header="others") + r.describe())


@pytest.mark.parametrize("mode, want", [
    ("ext", ["<module>", "hot_ext"] + EXT_CHAIN),
    ("ext-callback", ["<module>", "hot_ext_cb", "ext_cb_outer", "ext_cb_mid",
                      "py_ext_callback"] + EXT_CHAIN),
])
def test_extension(root_record_bin, interp, chain_lib, tmp_path, mode, want):
    """The same through a C extension module (tests/native/chainext.c), called by the
    interpreter's own C-call path: Python -> C -> C -> C and C -> Python -> C, exact in
    95% of the leaf's samples."""
    r, leaf = record_mode(root_record_bin, interp, chain_lib, mode, tmp_path,
                          leaf_name="ext_leaf")
    share, bad = exact_share(leaf, want, EXT_CHAIN)
    assert share >= SHARE, ("%.1f%% of ext_leaf's samples show %s" % (100 * share, want)
                            + show(bad, header="others") + r.describe())


def test_anonymous_code(root_record_bin, interp, chain_lib, tmp_path):
    """A stack interrupted in executable memory of no file, which no unwind table covers
    (as a ctypes callback's trampoline is): the frame is named [anonymous code], and the
    chain above it, found from the return address at rsp, is exact in 95% of its
    samples."""
    r, leaf = record_mode(root_record_bin, interp, chain_lib, "anon", tmp_path,
                          leaf_name=ANON_CODE)
    want = ["<module>", "hot_anon"] + ANON_CHAIN
    good = [s for s in leaf if skeleton(s) == want and s.frames[-3:] == ANON_CHAIN + [ANON_CODE]]
    assert total(good) >= SHARE * total(leaf), (
        "%d of %d samples in anonymous code show %s" % (total(good), total(leaf), want)
        + show([s for s in leaf if s not in good], header="others") + r.describe())
    m = re.search(r"^native stacks interrupted in code of no ELF file: (\d+)$", r.err, re.M)
    assert m and int(m.group(1)) >= total(leaf), r.describe()


def test_dlopen(root_record_bin, interp, chain_lib, tmp_path):
    """A library loaded while the recording runs, and unlinked at once, is named from its
    first sample on: a new copy each quarter second, each a module the recorder has not
    seen (a frame in no module, "[unknown native 0x...]", fails the parse of any test)."""
    r, leaf = record_mode(root_record_bin, interp, chain_lib, "dlopen", tmp_path)
    share, bad = exact_share(leaf, ["<module>", "hot_dlopen"] + C_CHAIN)
    assert share >= SHARE, ("%.1f%% of c_leaf's samples show the chain" % (100 * share)
                            + show(bad, header="others") + r.describe())
    m = re.search(r"; module reads: (\d+) ", r.err)
    # one at the start, then one per copy sampled (LEAF_CPU covers about six)
    assert m and int(m.group(1)) >= 4, r.describe()


def test_reused_range(root_record_bin, chain_lib, tmp_path):
    """A library loaded where anonymous memory was when the recorder last read the maps
    (ld.so's mmap gets the range just unmapped) is named: the interrupted pc lies in a
    mapping of that read, but not an executable one, which is stale for a sample taken
    after it. The maps are the process's, not the interpreter's: the newest one does."""
    if not INTERPRETERS_AVAILABLE:
        pytest.skip("no Python interpreter available (see the skipped interpreter tests)")
    interp = max(INTERPRETERS_AVAILABLE, key=lambda i: i.version)
    out = str(tmp_path / "reused.collapsed")
    with Workload(interp.path, "native_chain.py", chain_lib, "reused", stdin=True) as w:
        region, span = w.fact("region"), w.fact("span")

        def go(rec):
            # the recorder reads the maps at the first sample of the process it unwinds
            wait_cpu([w.pid], 0.3, 30, "CPU time before the library is loaded")
            time.sleep(0.5)
            w.send("go")
            base = json.loads(w.proc.stdout.readline())["base"]
            assert region <= base < region + span, (
                "the library was mapped at %#x, not in the range unmapped for it "
                "(%#x, %d bytes): the case is not made" % (base, region, span))

        r = record_checked(root_record_bin, "-p", w.pid, "--native", "--stats", output=out,
                           pids=[w.pid], cpu=LEAF_CPU, ready=go)
    unknown = [l for l in r.out.splitlines() if "[unknown native" in l]
    assert not unknown, "%d stacks have a frame in no mapping:\n%s" % (
        len(unknown), "\n".join(l[-300:] for l in unknown[:5]))
    leaf = [s for s in r.of_pid(w.pid) if s.leaf == "c_leaf"]
    assert total(leaf) >= MIN_LEAF, "only %d samples end in c_leaf" % total(leaf) + r.describe()
    share, bad = exact_share(leaf, ["<module>", "hot_reused"] + C_CHAIN)
    assert share >= SHARE, ("%.1f%% of c_leaf's samples show the chain" % (100 * share)
                            + show(bad, header="others") + r.describe())


def test_task(root_record_bin, interp, chain_lib, tmp_path):
    """An asyncio task running the chain: the task chain, then the running task's Python
    frames, then the native frames, in that order."""
    r, leaf = record_mode(root_record_bin, interp, chain_lib, "task", tmp_path)
    tail = [TaskFrame("<task native-outer>"), "outer_task", TaskFrame("<task native-leaf>"),
            "leaf_task"] + C_CHAIN

    def ok(s):
        sk = skeleton(s)
        return sk[-len(tail):] == tail and s.frames[-3:] == C_CHAIN and NATIVE_ENDS not in sk

    good = [s for s in leaf if ok(s)]
    assert total(good) / total(leaf) >= SHARE, (
        "%d of %d c_leaf samples end in %s" % (total(good), total(leaf), tail)
        + show([s for s in leaf if not ok(s)], header="others") + r.describe())
    # the native frames of the running task come after its last Python frame, none after
    # a task frame but before the running task's
    for s in good:
        last_task = max(i for i, f in enumerate(s.frames) if isinstance(f, TaskFrame))
        assert not any(isinstance(f, NativeFrame) for f in s.frames[last_task:last_task + 2]), s.raw


def test_hidden_interpreter(root_record_bin, interp, chain_lib, tmp_path):
    """The eval loop never shows as a native frame; --native-all shows the interpreter's
    other C functions, which are otherwise hidden."""
    r, leaf = record_mode(root_record_bin, interp, chain_lib, "plain", tmp_path)
    names = {str(f) for s in r.samples for f in s.frames if isinstance(f, NativeFrame)}
    assert not [n for n in names if n.startswith("_PyEval_EvalFrame")], names
    r2, leaf2 = record_mode(root_record_bin, interp, chain_lib, "plain", tmp_path,
                            "--native-all")
    names2 = {str(f) for s in r2.samples for f in s.frames if isinstance(f, NativeFrame)}
    assert len(names2) > len(names), (sorted(names), sorted(names2))
    share, bad = exact_share(leaf2, ["<module>", "hot"] + C_CHAIN)
    assert share >= SHARE, show(bad) + r2.describe()


# -- perf as the oracle ---------------------------------------------------------------

PERF_FRAME = re.compile(r"^\s*[0-9a-f]+ (\S+?)(?:\+0x[0-9a-f]+)? \((.*)\)$")


def perf_chains(data, pid):
    """Leaf-first symbol chains of perf script's samples of pid."""
    out = subprocess.run(["perf", "script", "-i", data, "--pid", str(pid), "-F", "ip,sym,dso"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True, timeout=300)
    assert out.returncode == 0, out.stderr
    chains, cur = [], []
    for line in out.stdout.split("\n"):
        m = PERF_FRAME.match(line)
        if m:
            cur.append(m.group(1))
        elif not line.strip() and cur:
            chains.append(cur)
            cur = []
    if cur:
        chains.append(cur)
    return chains


def leaf_side(chain):
    """The chain's own functions from the leaf, up to the first frame outside them."""
    out = []
    for f in chain:
        if f not in OURS:
            break
        out.append(f)
    return out


def test_perf_agrees(root_record_bin, interp, chain_lib, tmp_path):
    """perf record --call-graph dwarf,32768 on the same workload: the same leaf-side
    chain as asyncbpf's native part in 90% of each one's samples."""
    if not shutil.which("perf"):
        pytest.skip("no perf (Debian's linux-perf; make deps)")
    data = str(tmp_path / "perf.data")
    with Workload(interp.path, "native_chain.py", chain_lib, "plain") as w:
        p = subprocess.run(["perf", "record", "-q", "-F", "99", "--call-graph", "dwarf,32768",
                            "-p", str(w.pid), "-o", data, "--", "sleep", "2"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=120)
        assert p.returncode == 0, p.stderr
        r = record_checked(root_record_bin, "-p", w.pid, "--native",
                           output=str(tmp_path / "n.collapsed"), pids=[w.pid], cpu=LEAF_CPU)
    want = ["c_leaf", "c_mid", "c_outer"]
    theirs = [c for c in perf_chains(data, w.pid) if c and c[0] == "c_leaf"]
    assert len(theirs) >= 50, "perf: %d samples in c_leaf" % len(theirs)
    agree = sum(1 for c in theirs if leaf_side(c) == want) / len(theirs)
    mine = [s for s in r.of_pid(w.pid) if s.leaf == "c_leaf"]
    mine_agree = total([s for s in mine if leaf_side(
        [str(f) for f in reversed(s.frames)]) == want]) / max(1, total(mine))
    print("\nperf: %.1f%% of %d c_leaf samples end in %s; asyncbpf: %.1f%% of %d"
          % (100 * agree, len(theirs), want, 100 * mine_agree, total(mine)))
    assert agree >= 0.90 and mine_agree >= 0.90, (agree, mine_agree, theirs[:3])
    # above the chain, both reach libffi's ffi_call and then the interpreter
    reach = sum(1 for c in theirs if "ffi_call" in c[3:8]) / len(theirs)
    mine_reach = total([s for s in mine if "ffi_call" in [str(f) for f in s.frames[-8:-3]]]) \
        / max(1, total(mine))
    assert reach >= 0.90 and mine_reach >= 0.90, (reach, mine_reach, theirs[:3])


def test_native_refused_with_wall(root_record_bin):
    from helpers import record
    r = record(root_record_bin, "--native", "--mode", "wall", "-d", "1")
    assert r.rc == 1 and "--native goes with --mode cpu" in r.err, r.describe()
    r = record(root_record_bin, "--native-all", "-d", "1")
    assert r.rc == 1 and "need --native" in r.err, r.describe()
    r = record(root_record_bin, "--native", "--native-stack", "65", "-d", "1")
    assert r.rc == 1 and "invalid --native-stack '65'" in r.err, r.describe()


# -- real libraries: NumPy's BLAS, zlib ---------------------------------------------------

def imports(interp, module):
    p = subprocess.run([interp.path, "-c", "import " + module], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True, timeout=120)
    return p.returncode == 0


def python_above(s, i):
    """The nearest Python frame root-side of frame i."""
    for f in reversed(s.frames[:i]):
        if isinstance(f, Frame):
            return f.qualname
    return None


def test_numpy_matmul(root_record_bin, interp, tmp_path):
    """A NumPy matrix product under `hot_matmul`: BLAS's dgemm_ under cblas_dgemm under
    NumPy's own frames under hot_matmul."""
    if not imports(interp, "numpy"):
        pytest.skip("%s has no NumPy (Debian's python3-numpy: Debian's python3.11 and the "
                    "sid tree)" % interp.id)
    out = str(tmp_path / "matmul.collapsed")
    with Workload(interp.path, "native_libs.py", "matmul") as w:
        r = record_checked(root_record_bin, "-p", w.pid, "--native", output=out, pids=[w.pid],
                           cpu=LEAF_CPU)
    mine = r.of_pid(w.pid)

    def ok(s):
        names = [str(f) for f in s.frames]
        if "cblas_dgemm" not in names:
            return False
        i = names.index("cblas_dgemm")
        # NumPy's frames: named (PyArray_...) or not (its extension module + offset)
        numpy = [f for f in s.frames[:i] if isinstance(f, NativeFrame) and
                 ("_multiarray_umath" in f or f.startswith("PyArray_"))]
        return (i + 1 < len(names) and "dgemm" in names[i + 1] and
                python_above(s, i) == "hot_matmul" and bool(numpy))

    good = [s for s in mine if ok(s)]
    assert total(good) >= 0.5 * total(mine), (
        "%d of %d samples are dgemm under cblas_dgemm under NumPy under hot_matmul"
        % (total(good), total(mine)) + show([s for s in mine if s not in good], header="others"))


def test_zlib_inflate(root_record_bin, interp, tmp_path):
    """zlib.decompress in a loop reaches libz's inflate, under hot_inflate."""
    if not imports(interp, "zlib"):
        pytest.skip("%s was built without zlib" % interp.id)
    out = str(tmp_path / "inflate.collapsed")
    with Workload(interp.path, "native_libs.py", "inflate") as w:
        r = record_checked(root_record_bin, "-p", w.pid, "--native", output=out, pids=[w.pid],
                           cpu=LEAF_CPU)
    mine = r.of_pid(w.pid)
    good = [s for s in mine if "inflate" in s.frames and
            python_above(s, s.frames.index("inflate")) == "hot_inflate"]
    assert total(good) >= 0.3 * total(mine), (
        "%d of %d samples in inflate under hot_inflate" % (total(good), total(mine))
        + show(mine))


def test_native_thread(root_record_bin, interp, chain_lib, tmp_path):
    """A thread Python does not know (started in C) gets its native stack, under
    [no Python thread state]."""
    from helpers import NO_TSTATE
    out = str(tmp_path / "thread.collapsed")
    with Workload(interp.path, "native_chain.py", chain_lib, "thread") as w:
        r = record_checked(root_record_bin, "-p", w.pid, "--native", output=out, pids=[w.pid],
                           cpu=LEAF_CPU)
    mine = [s for s in r.of_pid(w.pid) if s.tid != w.pid]
    assert total(mine) >= MIN_LEAF, "the native thread has %d samples" % total(mine) + r.describe()
    good = [s for s in mine if s.frames and s.frames[0] == NO_TSTATE and
            s.frames[-4:] == ["spin"] + C_CHAIN]
    assert total(good) >= SHARE * total(mine), (
        "%d of %d samples of the native thread are [no Python thread state] then "
        "spin -> c_outer -> c_mid -> c_leaf" % (total(good), total(mine)) + show(mine))
