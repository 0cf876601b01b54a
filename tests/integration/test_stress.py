"""Torn reads: targets that change their stacks and tasks as fast as they can (recursion
1-400 deep up and down; about 10,000 asyncio tasks created and finished per second),
recorded at 999 Hz. The profiler must not crash or hang, walks stay bounded, failed reads
are counted in --stats, and a frame it cannot symbolize is [unknown], never another
function's name: every frame shown is checked against the source of the file it names
(the function exists there and the line lies inside it), and every call between two
workload frames is one the source makes.

The oldest and the newest available interpreters run at once (3.8-3.10 keep frames as
heap objects, recycled through free lists; 3.11+ in a per-thread stack): one recording,
ASYNCBPF_STRESS_SECONDS long (default 60)."""
import ast
import contextlib
import os
import re
import tempfile

import pytest

from helpers import INTERPRETERS_AVAILABLE, WORKLOADS, Frame, Workload, record, start_all

SECONDS = float(os.environ.get("ASYNCBPF_STRESS_SECONDS") or 60)
CHURN = os.path.join(WORKLOADS, "churn.py")
DYN = "<dyn>"  # churn.py's functions compiled at run time
# thread frames and awaiting tasks' coroutine frames the sampler keeps (bpf/asyncbpf.h),
# and per task its frame and at most two markers, and [more tasks]
MAX_STACK_FRAMES = 256 + 128 + 3 * 16 + 1


IMPLICIT = {ast.ListComp: "<listcomp>", ast.GeneratorExp: "<genexpr>",
            ast.DictComp: "<dictcomp>", ast.SetComp: "<setcomp>", ast.Lambda: "<lambda>"}


def callee(node):
    """The name of the function node calls (f(), obj.f(), or the code object of a
    comprehension), or None."""
    if isinstance(node, ast.Call):
        f = node.func
        return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
    return IMPLICIT.get(type(node))


class Source:
    """The functions of a Python file: {name: [(first line, last line)]}, by qualname and
    by plain name (co_name before 3.11)."""

    def __init__(self, path):
        with open(path, "rb") as f:
            tree = ast.parse(f.read(), path)
        self.ranges = {"<module>": [(1, 10 ** 9)]}
        self.calls = {}  # qualname -> names of the functions it calls
        self._visit(tree, "")

    def _add(self, name, rng):
        self.ranges.setdefault(name, []).append(rng)

    def _visit(self, node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                q = prefix + child.name
                first = min([child.lineno] + [d.lineno for d in child.decorator_list])
                rng = (first, child.end_lineno)
                if not isinstance(child, ast.ClassDef):
                    self._add(q, rng)
                    if q != child.name:
                        self._add(child.name, rng)
                    self.calls[q] = {callee(c) for c in ast.walk(child)} - {None}
                    self._visit(child, q + ".<locals>.")
                else:
                    self._add(q, rng)  # class body
                    self._visit(child, q + ".")
            elif isinstance(child, ast.Lambda):
                self._add(prefix + "<lambda>", (child.lineno, child.end_lineno))
                self._add("<lambda>", (child.lineno, child.end_lineno))
                self._visit(child, prefix)
            else:
                self._visit(child, prefix)

    def holds(self, name, line):
        """name is a function of this file and line lies inside it."""
        base = name
        for comp in ("<listcomp>", "<genexpr>", "<dictcomp>", "<setcomp>"):
            if name.endswith(comp):  # comprehensions: inside the enclosing function
                base = name[: -len(comp)].rstrip(".").replace(".<locals>", "") or "<module>"
                base = base if base in self.ranges else "<module>"
        return any(a <= line <= b for a, b in self.ranges.get(base, ()))


_sources = {}


def source(path):
    if path not in _sources:
        try:
            _sources[path] = Source(path)
        except (OSError, SyntaxError, ValueError):
            _sources[path] = None
    return _sources[path]


def bad_dynamic(prev, f):
    """churn.py's compiled functions: dyn_L<N> lies at lines N-N+1 of "<dyn>" and calls
    only itself (or leaf); the <module> code that defines it is at any line."""
    if f.qualname == "<module>" and (prev is None or prev.filename != DYN):
        return None
    m = re.match(r"^dyn_L(\d+)$", f.qualname)
    if not m or not int(m.group(1)) <= f.line <= int(m.group(1)) + 1:
        return "%s (%s:%d): no such function at that line" % f
    if prev is not None and prev.filename == DYN and prev.qualname != f.qualname:
        return "%s -> %s: not a call the source makes" % (prev.qualname, f.qualname)
    return None


def bad_frames(sample):
    """The frames of sample that name a function the source does not have at that line,
    and the calls between adjacent workload frames the source does not make."""
    bad = []
    prev = None
    for f in sample.frames:
        if not isinstance(f, Frame):
            prev = None
            continue
        if f.filename == DYN:
            b = bad_dynamic(prev, f)
            bad += [b] if b else []
            prev = f
            continue
        if prev is not None and prev.filename == DYN and f.qualname != "leaf":
            bad.append("%s -> %s: not a call the source makes" % (prev.qualname, f.qualname))
        src = source(f.filename)
        if src is not None and not src.holds(f.qualname, f.line):
            bad.append("%s (%s:%d): no such function at that line" % f)
        if (prev is not None and prev.filename == CHURN and f.filename == CHURN
                and prev.qualname in src.calls
                and f.qualname.split(".")[-1] not in src.calls[prev.qualname]):
            bad.append("%s -> %s: not a call the source makes" % (prev.qualname, f.qualname))
        prev = f
    return bad


def stats_of(r):
    return dict(l.split(": ", 1) for l in r.err_lines() if ": " in l
                and not l.startswith("asyncbpf-record"))


def test_torn_reads(root_record_bin):
    if not INTERPRETERS_AVAILABLE:
        pytest.skip("no supported interpreter installed")
    by_version = sorted(INTERPRETERS_AVAILABLE, key=lambda i: i.version)
    interps = {i.id: i for i in (by_version[0], by_version[-1])}
    tmp = tempfile.mkdtemp(prefix="asyncbpf-stress-")
    with contextlib.ExitStack() as stack:
        loads = []
        for i in interps.values():
            for mode in ("recurse", "tasks"):
                loads.append((i, mode, os.path.join(tmp, "%s-%s" % (i.id, mode)),
                              Workload(i.path, "churn.py", mode,
                                       os.path.join(tmp, "%s-%s" % (i.id, mode)))))
        start_all(stack, [w for _, _, _, w in loads])
        pids = ",".join(str(w.pid) for _, _, _, w in loads)
        r = record(root_record_bin, "-p", pids, "-F", 999, "-d", SECONDS, "--stats",
                   timeout=SECONDS + 120)
        done = {}
        for i, mode, path, w in loads:
            assert w.proc.poll() is None, "workload %s %s died" % (i.id, mode)
            with open(path) if os.path.exists(path) else open(os.devnull) as f:
                done[(i.id, mode)] = int(f.read() or 0)
    assert r.rc == 0, "recording failed" + r.describe()
    stats = stats_of(r)
    assert not [l for l in r.err_lines() if l.startswith("asyncbpf-record")], (
        "errors or warnings" + r.describe())
    for (iid, mode), n in done.items():
        assert n > 0, "%s churn.py %s made no progress" % (iid, mode)
    for _, mode, _, w in loads:
        assert r.of_pid(w.pid), "no stacks of %s workload pid %d" % (mode, w.pid) + r.describe()

    # walks bounded: at most the thread's frames, the awaiting tasks' frames, and markers
    longest = max(len(s.frames) for s in r.samples)
    assert longest <= MAX_STACK_FRAMES, "a stack of %d frames" % longest + r.describe()
    assert any(s.truncated for s in r.samples), "no truncated stack from 400-deep recursion"

    bad = {}
    for s in r.samples:
        for b in bad_frames(s):
            bad.setdefault(b, s)
    assert not bad, "frames that name the wrong function:\n%s" % "\n".join(
        "  %s\n    in %s" % (b, s.short(400)) for b, s in list(bad.items())[:10])

    # what the output shows as unreadable is what --stats counts
    unknown = sum(s.count * s.frames.count("[unknown]") for s in r.samples)
    incomplete = sum(s.count for s in r.samples if s.incomplete)
    assert unknown == int(stats["unknown frames"].split()[0]), (
        "%d [unknown] frames in the output" % unknown + r.describe())
    assert incomplete <= int(stats["read errors"]), (
        "%d [incomplete] stacks in the output" % incomplete + r.describe())
    print("\nstress: %s; tasks/s %s; recursions/s %s; [unknown] %d; [incomplete] %d" % (
        {k: stats[k] for k in ("samples", "python samples", "recorded samples", "read errors",
                               "truncated", "lost", "bpf run time per sample")},
        {k[0]: round(n / SECONDS) for k, n in done.items() if k[1] == "tasks"},
        {k[0]: round(n / SECONDS) for k, n in done.items() if k[1] == "recurse"},
        unknown, incomplete))


def test_checker_catches_wrong_names():
    """The source check above fails on what a misattributed frame would look like."""
    from helpers import Sample

    body = {n: source(CHURN).ranges[n][0][1] for n in ("r0", "r1", "r2", "leaf")}
    body.update(nosuch=1, dyn_L7=8, dyn_L9=10)
    head = "python3 (pid 1);MainThread (tid 1);"

    def sample(*frames):
        return Sample(head + ";".join("%s (%s:%d)" % (n, CHURN if f is None else f,
                                                     body[n] if l is None else l)
                                      for n, f, l in frames) + " 1")

    good = sample(("r0", None, None), ("r1", None, None), ("leaf", None, None))
    assert not bad_frames(good), bad_frames(good)
    dyn = sample(("dyn_L7", DYN, 8), ("dyn_L7", DYN, 8), ("leaf", None, None))
    assert not bad_frames(dyn), bad_frames(dyn)
    assert not bad_frames(sample(("<module>", DYN, 0)))
    for wrong in [
        (("r0", None, None), ("r2", None, None)),  # r0 never calls r2
        (("r0", None, body["r1"]), ("r1", None, None)),  # a line of r1, not r0
        (("r0", None, None), ("nosuch", None, 1)),
        (("dyn_L7", DYN, 8), ("dyn_L9", DYN, 10)),  # calls only itself
        (("dyn_L7", DYN, 12),),  # defined at lines 7-8
        (("dyn_L7", DYN, 8), ("r1", None, None)),
        (("dyn_L7", DYN, 8), ("<module>", DYN, 0)),
    ]:
        s = sample(*wrong)
        assert bad_frames(s), "not caught: %s" % s.raw
