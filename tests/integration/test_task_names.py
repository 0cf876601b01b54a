"""Tasks created without a name are shown by the name CPython gives them (get_name(),
pstree): "Task-N", which 3.12+ keeps as the number N until get_name() is called. Checked
on every interpreter, for each way of making a task (task_names.py), in asyncbpf-tasks'
tree (names read by userspace) and in recorded stacked stacks (names copied by BPF, shown
as they are with --task-ids)."""
import pytest

from helpers import Workload, parse_pstree, record_checked, run_tool

from test_async_tasks import root_tasks_bin  # noqa: F401


@pytest.fixture(scope="module")
def names_load(interp):
    with Workload(interp.path, "task_names.py", timeout=60) as w:
        yield w


def test_lazy_names_exercised(names_load, interp):
    """The workload really leaves numbers in the tasks on 3.12+ (else this would test
    nothing new there)."""
    lazy = names_load.fact("lazy")
    if interp.version >= (3, 12):
        assert "create_task" in lazy and "main" in lazy, lazy
    else:
        assert not lazy, lazy


def test_tasks_tree_names(names_load, root_tasks_bin):  # noqa: F811
    """Each task's `(T) NAME` in asyncbpf-tasks is what get_name() says."""
    want = names_load.fact("names")
    r = run_tool(root_tasks_bin, "--watch", 0, names_load.pid, timeout=60)
    assert r.rc == 0, "asyncbpf-tasks failed" + r.describe()
    got = {}
    for root in parse_pstree(r.out):
        for n in root.walk():
            first = next((c for c in n.children if c.kind == "coro"), None)
            if n.kind == "task" and first is not None:
                kind = "busy" if first.name == "busy_unnamed" else (
                    "main" if first.name == "main" else first.name.replace("idle_", "", 1))
                got.setdefault(kind, []).append(n.name)
    bad = ["%s: %s, get_name() says %r" % (k, got.get(k, "absent"), v)
           for k, v in sorted(want.items()) if got.get(k) != [v]]
    assert not bad, "task names differ from CPython's:\n  " + "\n  ".join(bad) + r.describe()


def test_stacked_stack_names(names_load, root_record_bin):
    """The busy unnamed task's `<task NAME>` frame in recorded stacks is get_name()'s
    with --task-ids (by default it is shown as its coroutine: test_long_names.py)."""
    want = names_load.fact("names")["busy"]
    r = record_checked(root_record_bin, "-p", names_load.pid, "-d", 2, "--task-ids")
    busy = [s for s in r.of_pid(names_load.pid) if "busy_unnamed" in s.qualnames()]
    assert busy, "no sample in busy_unnamed" + r.describe()
    names = {tuple(s.tasks()) for s in busy}
    assert names == {(want,)}, "busy_unnamed's tasks %s, get_name() says %r" % (
        sorted(names), want) + r.describe()
