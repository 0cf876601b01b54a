"""`asyncbpf-tasks PID` against CPython's own `python3.X -m asyncio pstree PID` (3.14+) on
the same async_patterns.py process: for every pattern, the same tasks under the same
parents. pstree runs where the process runs (its mount namespace and root, so the paths
/proc/PID/maps gives it resolve), from the interpreter's own installation."""
import contextlib
import re

import pytest

from helpers import (ASYNC_VARIANTS, Workload, parse_pstree, pstree_argv, run_tool,
                     start_all)

from test_async_tasks import PATTERNS, root_tasks_bin, task_nodes, truth_of  # noqa: F401

FF_TASK = re.compile(r"^ff-(creator|child)-\d+$")


def compared_variants():
    """The async variants whose CPython has pstree (3.14+); a missing one is skipped."""
    out = []
    for v in ASYNC_VARIANTS:
        if v.missing:
            if re.search(r"-3\.1[4-9]\b", v.id):
                out.append(pytest.param(v, id=v.id, marks=pytest.mark.skip(reason=v.missing)))
        elif v.interp.version >= (3, 14):
            out.append(pytest.param(v, id=v.id))
    return out or [pytest.param(None, id="no-3.14", marks=pytest.mark.skip(
        reason="no CPython 3.14+ interpreter (make trees builds Debian sid's)"))]


def ff_role(name):
    """A fire-and-forget task's name without its generation: a new pair starts every
    second, so the two reads may catch different ones."""
    return FF_TASK.sub(r"ff-\1-{n}", name)


def parents(roots):
    """{task name: sorted names of its parent tasks ("" for a root)}: a task several tasks
    await is drawn under each. Fire-and-forget tasks by role, each parent once."""
    out = {}
    for name, same in task_nodes(roots).items():
        ps = [n.parent_task().name if n.parent_task() else "" for n in same]
        if FF_TASK.match(name):
            ps = out.get(ff_role(name), []) + [ff_role(p) for p in ps]
            name, ps = ff_role(name), sorted(set(ps))
        out[name] = sorted(ps)
    return out


# What CPython's own pstree does not show, by version: not a difference to look for.
PSTREE_GAPS = {
    (3, 14): {"thread_loop": "CPython 3.14's pstree shows no task of the event loop in the "
              "workload's second thread (_remote_debugging's get_all_awaited_by returns "
              "nothing for that thread; 3.15's does)"},
}


def gaps(w):
    return PSTREE_GAPS.get(tuple(w.fact("asyncio")["version"][:2]), {})


@pytest.fixture(scope="module")
def compared(root_tasks_bin):
    """{variant id: (workload, pstree run, asyncbpf-tasks run)}: each workload's tree read
    by both, one right after the other."""
    variants = [p.values[0] for p in compared_variants() if not p.marks]
    with contextlib.ExitStack() as stack:
        loads = [Workload(v.interp.path, "async_patterns.py", *v.args(), timeout=90)
                 for v in variants]
        start_all(stack, loads)
        out = {}
        for v, w in zip(variants, loads):
            ref = run_tool(*pstree_argv(v.interp, w.pid), timeout=60)
            # memory only, like pstree: watching creation would add the links of
            # fire-and-forget children to their returned creators, which pstree cannot see
            ours = run_tool(root_tasks_bin, "--watch", 0, w.pid, timeout=60)
            out[v.id] = (w, ref, ours)
        yield out


def trees(compared, variant):
    w, ref, ours = compared[variant.id]
    assert ref.rc == 0 and ref.out.strip(), "CPython's pstree failed" + ref.describe()
    assert ours.rc == 0, "asyncbpf-tasks failed" + ours.describe()
    want, got = parents(parse_pstree(ref.out)), parents(parse_pstree(ours.out))
    # a creator lives for one step of the loop: either read may catch one
    for d in (want, got):
        d.pop("ff-creator-{n}", None)
    recs = {r["pattern"]: r for r in w.records("pattern")}
    for pattern in gaps(w):
        for name in pattern_tasks(recs[pattern]["tree"]) if pattern in recs else ():
            want.pop(name, None)
            got.pop(name, None)
    return w, ref, ours, want, got


def pattern_tasks(tree):
    yield tree["task"]
    for c in tree["children"]:
        yield from pattern_tasks(c)


def describe(ref, ours):
    return ("\nCPython's pstree:\n%s\nasyncbpf-tasks:\n%s" % (ref.out.rstrip() or "(empty)",
                                                               ours.out.rstrip() or "(empty)")
            + ("\nasyncbpf-tasks stderr: " + ours.err if ours.err.strip() else ""))


@pytest.mark.parametrize("variant", compared_variants())
def test_pstree_same_tasks(compared, variant):
    """Both show the same set of tasks."""
    _, ref, ours, want, got = trees(compared, variant)
    assert set(got) == set(want), "tasks only in pstree: %s, only in asyncbpf-tasks: %s" % (
        sorted(set(want) - set(got)), sorted(set(got) - set(want))) + describe(ref, ours)


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("variant", compared_variants())
def test_pstree_same_parents(compared, variant, pattern):
    """Each task of the pattern is shown, under the same parent tasks, by both."""
    w, ref, ours, want, got = trees(compared, variant)
    if pattern in gaps(w):
        pytest.skip(gaps(w)[pattern])
    t = {r["pattern"]: r for r in w.records("pattern")}.get(pattern)
    if t is None:
        truth_of(w, pattern)  # skips a pattern this version lacks, with the reason
        pytest.fail("workload reported no %r pattern" % pattern)
    names = list(pattern_tasks(t["tree"]))
    if pattern == "fire_and_forget":
        names = [ff_role(n) for n in names[1:]]  # the child; its creator has returned
    diff = ["%s: pstree %s, asyncbpf-tasks %s" % (n, want.get(n, "absent"), got.get(n, "absent"))
            for n in sorted(names) if want.get(n) != got.get(n)]
    assert not diff, "tasks of %s whose parents differ (\"\" = a root):\n  %s" % (
        pattern, "\n  ".join(diff)) + describe(ref, ours)
