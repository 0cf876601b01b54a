"""Processes under chroot: the Debian trees' interpreters run async_patterns.py in a plain
`chroot` (our mount namespace, another root: /proc/PID/maps shows their files under the
tree's directory) and under `unshare --mount` + chroot (their own mount namespace), and
asyncbpf-tasks --watch must find their files, attach the task-creation probe and link a
fire-and-forget child to the creator that has returned. As root (files through
/proc/PID/map_files) and with only CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE of root's
capabilities (map_files is refused without CAP_SYS_ADMIN: files under /proc/PID/root;
the tasks are read, not watched, since the creation probe itself needs CAP_SYS_ADMIN)."""
import os
import re
import shutil
import tempfile

import pytest

from helpers import INTERPRETERS, TREE_PYTHONS, WORKLOADS, Workload, parse_pstree, run_tool

from test_async_tasks import root_tasks_bin, task_nodes  # noqa: F401

FF_CHILD = re.compile(r"^ff-child-(\d+)$")
# root without what /proc/PID/map_files needs
CAPS_ONLY = ["setpriv", "--inh-caps=-all", "--ambient-caps=-all",
             "--bounding-set=-sys_admin,-checkpoint_restore"]


def tree_params():
    return [pytest.param(i, id=i.id, marks=[pytest.mark.skip(reason=i.missing)]
                         if i.missing else [])
            for i in INTERPRETERS if i.id.split("-")[0] in TREE_PYTHONS]


@pytest.fixture(scope="module", params=["chroot", "unshare"])
def chrooted(request, interp_tree):
    """A workload of interp_tree's, in a plain chroot (the workload copied into the
    tree's /tmp) or through its wrapper (tools/tree-run.sh)."""
    i = interp_tree
    if request.param == "unshare":
        with Workload(i.path, "async_patterns.py", "--ff-interval", 0.5, timeout=90) as w:
            yield request.param, w
        return
    if not shutil.which("chroot"):
        pytest.skip("no chroot (coreutils)")
    d = tempfile.mkdtemp(prefix="asyncbpf-chroot-", dir=os.path.join(i.tree, "tmp"))
    try:
        for f in ("async_patterns.py", "_wl.py"):
            shutil.copy(os.path.join(WORKLOADS, f), d)
        inner = os.path.join("/tmp", os.path.basename(d), "async_patterns.py")
        w = Workload(i.path, "async_patterns.py", timeout=90)
        w.argv = ["chroot", i.tree, i.inner, "-u", inner, "--ff-interval", "0.5"]
        with w:
            yield request.param, w
    finally:
        shutil.rmtree(d)


@pytest.fixture(scope="module", params=tree_params())
def interp_tree(request):
    return request.param


def test_chroot_origin(chrooted, root_tasks_bin):  # noqa: F811
    """A fire-and-forget child is shown under its creator, which has returned: only the
    creation probe knows that link."""
    mode, w = chrooted
    r = run_tool(root_tasks_bin, "--watch", 2, w.pid, timeout=60)
    assert r.rc == 0 and not r.err.strip(), "asyncbpf-tasks failed (%s)" % mode + r.describe()
    kids = [n for name, same in task_nodes(parse_pstree(r.out)).items() for n in same
            if FF_CHILD.match(name)]
    assert kids, "no ff-child-N task in the output" + r.describe()
    linked = [k.name for k in kids if k.parent_task() is not None and
              k.parent_task().name == "ff-creator-" + FF_CHILD.match(k.name).group(1)]
    assert linked, ("no fire-and-forget child under its creator (%s): the creation probe "
                    "was not attached?" % mode + r.describe())


def test_chroot_without_map_files(chrooted, root_tasks_bin):  # noqa: F811
    """Without CAP_SYS_ADMIN (map_files refused) the files are found under /proc/PID/root:
    the tasks are read (the creation probe needs CAP_SYS_ADMIN on its own: not watched)."""
    mode, w = chrooted
    if not shutil.which("setpriv"):
        pytest.skip("setpriv (util-linux) not installed")
    r = run_tool(root_tasks_bin, "--watch", 0, w.pid, timeout=60, prefix=CAPS_ONLY)
    assert r.rc == 0 and not r.err.strip(), "asyncbpf-tasks failed (%s)" % mode + r.describe()
    nodes = task_nodes(parse_pstree(r.out))
    chain = []
    for name in ("direct-c", "direct-b", "direct-a", "direct-handler"):
        chain.append(name if name in nodes else "(%s absent)" % name)
        n = nodes.get(name, [None])[0]
        p = n.parent_task() if n else None
        if name != "direct-handler" and (p is None or p.name not in nodes):
            break
    assert chain == ["direct-c", "direct-b", "direct-a", "direct-handler"], (
        "direct pattern's tasks, innermost first: %s" % chain + r.describe())
