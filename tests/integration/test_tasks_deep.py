"""`asyncbpf-tasks` on deep awaits (deep_tasks.py): a task 1,500 coroutines deep is drawn
with every one of its frames, and 300 tasks awaiting one another in a line are drawn
each under the one that awaits it. Nothing is cut: the tool reads a chain whole, and
where it would stop (past 65,536 frames) it says how many it left out."""
import re

import pytest

from helpers import ASYNC_VARIANTS, Workload, parse_pstree, run_tool

from test_async_tasks import root_tasks_bin  # noqa: F401

CUT = re.compile(r"^\[(at least )?\d+ more frames not shown\]$")


def variants():
    return [pytest.param(v, id=v.id, marks=[pytest.mark.skip(reason=v.missing)]
                         if v.missing else []) for v in ASYNC_VARIANTS if not v.uvloop]


@pytest.fixture(scope="module", params=variants())
def tree(request, root_tasks_bin):
    v = request.param
    with Workload(v.interp.path, "deep_tasks.py", timeout=90) as w:
        r = run_tool(root_tasks_bin, "--watch", 0, w.pid, timeout=120)
    assert r.rc == 0 and not r.err.strip(), "asyncbpf-tasks failed" + r.describe(2000)
    roots = parse_pstree(r.out)
    tasks = {}
    for root in roots:
        for n in root.walk():
            if n.kind == "task":
                tasks.setdefault(n.name, []).append(n)
    return w, r, tasks, [n for root in roots for n in root.walk()]


def test_deep_chain_whole(tree):
    w, r, tasks, nodes = tree
    depth = w.fact("depth")
    assert len(tasks.get("deep-coro", [])) == 1, "deep-coro drawn %d times" % len(
        tasks.get("deep-coro", [])) + r.describe(2000)
    chain, node = [], tasks["deep-coro"][0]
    while node.children:
        assert len(node.children) == 1, "%r has %d children" % (node.raw, len(node.children))
        node = node.children[0]
        chain.append(node.name)
    downs = [n for n in chain if n.endswith("down")]
    assert len(downs) == depth, "deep-coro shows %d of its %d `down` frames, then %s" % (
        len(downs), depth, chain[-3:])
    assert not [n for n in nodes if CUT.match(n.name)], "a cut marked in a whole chain"


def test_task_chain_whole(tree):
    w, r, tasks, _ = tree
    names = w.fact("chain")
    problems = []
    for i, name in enumerate(names):
        got = tasks.get(name, [])
        if len(got) != 1:
            problems.append("%s drawn %d times" % (name, len(got)))
            continue
        parent = got[0].parent_task()
        want = names[i - 1] if i else w.fact("main")
        if (parent.name if parent else None) != want:
            problems.append("%s under %s, expected %s" % (
                name, parent.name if parent else "nothing", want))
    assert not problems, "\n".join(problems[:20]) + r.describe(3000)
