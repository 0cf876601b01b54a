"""A minimal container built with unshare (mount, pid and uts namespaces), its own
cgroup v2 directory, and an interpreter at a path the host does not have: profiled from
the host with -a, labelled with its cgroup, selected with --cgroup and --container."""
import os
import shutil
import subprocess
import time

import pytest

from helpers import (INTERPRETERS_AVAILABLE, WORKLOADS, Frame, Workload, record_checked, show,
                     total)

CTR_PREFIX = "/opt/ctr-python"  # where the interpreter lives inside the container
CTR_APP = "/opt/ctr-app"


def cgroup2_root():
    with open("/proc/mounts") as f:
        for line in f:
            dev, mnt, fstype = line.split()[:3]
            if fstype == "cgroup2":
                return mnt
    return None


def pyenv_interp():
    """A pyenv interpreter (its own prefix, shared libpython), the newest."""
    for i in reversed(INTERPRETERS_AVAILABLE):
        if i.id.startswith("pyenv-"):
            return i
    return None


class Container:
    """unshare --mount --pid --uts --fork, in a fresh cgroup, with a tmpfs on /opt
    holding a bind mount of the interpreter's prefix and the workload, and a tmpfs over
    the interpreter's host directory so that only the container path leads to it."""

    def __init__(self, interp, script, *args):
        self.interp = interp
        self.script = script
        self.args = [str(a) for a in args]
        root = cgroup2_root()
        self.cgroup_dir = os.path.join(root, "asyncbpf-test-%d" % os.getpid())
        self.cgroup = "/" + os.path.relpath(self.cgroup_dir, root)
        self.proc = None
        self.pid = None

    def __enter__(self):
        prefix = os.path.dirname(os.path.dirname(os.path.realpath(self.interp.path)))
        exe = os.path.basename(self.interp.path)
        os.mkdir(self.cgroup_dir)
        inner = " && ".join([
            "hostname asyncbpf-ctr",
            "mount -t tmpfs tmpfs /opt",
            "mkdir -p %s %s" % (CTR_PREFIX, CTR_APP),
            "mount --bind %s %s" % (prefix, CTR_PREFIX),
            "cp %s %s/" % (os.path.join(WORKLOADS, self.script), CTR_APP),
            "mount -t tmpfs tmpfs %s" % prefix,
            "LD_LIBRARY_PATH=%s/lib exec %s/bin/%s -u %s/%s %s" % (
                CTR_PREFIX, CTR_PREFIX, exe, CTR_APP, self.script, " ".join(self.args)),
        ])
        outer = "echo $$ > %s/cgroup.procs && exec unshare --mount --pid --uts --fork " \
                "--propagation private --mount-proc sh -c '%s'" % (self.cgroup_dir, inner)
        self.proc = subprocess.Popen(["sh", "-c", outer], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        try:
            line = self.proc.stdout.readline().decode().strip()
            assert line == "READY", "container workload did not start: %r %s" % (
                line, self.proc.stderr.read().decode(errors="replace")[-2000:]
                if self.proc.poll() is not None else "")
            self.pid = self._python_pid(exe)
        except BaseException:
            self.__exit__()
            raise
        return self

    def _python_pid(self, exe):
        with open(os.path.join(self.cgroup_dir, "cgroup.procs")) as f:
            pids = [int(p) for p in f.read().split()]
        for p in pids:
            try:
                if os.path.basename(os.readlink("/proc/%d/exe" % p)) == exe:
                    return p
            except OSError:
                pass
        raise AssertionError("no %s among the container's processes %s" % (exe, pids))

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.kill()  # unshare: its namespace's init (and all in it) die with it
        self.proc.wait()
        if self.pid:
            try:
                os.kill(self.pid, 9)
            except OSError:
                pass
        for f in (self.proc.stdout, self.proc.stderr):
            f.close()
        deadline = time.monotonic() + 60  # killed processes leave it late on a loaded machine
        while True:
            try:
                os.rmdir(self.cgroup_dir)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        return False


@pytest.fixture(scope="module")
def container():
    if os.geteuid() != 0:
        pytest.skip("needs root: namespaces and cgroups")
    if not shutil.which("unshare"):
        pytest.skip("no unshare (util-linux)")
    if not cgroup2_root():
        pytest.skip("no cgroup v2 hierarchy mounted")
    interp = pyenv_interp()
    if not interp:
        pytest.skip("no pyenv interpreter (needs one with its own prefix)")
    assert not os.path.exists(CTR_PREFIX), "%s exists on the host" % CTR_PREFIX
    with Container(interp, "small_async.py", 2, 20, 30) as c:
        yield c


@pytest.fixture(scope="module")
def host_load():
    py = [i for i in INTERPRETERS_AVAILABLE if not i.id.startswith("pyenv-")] or \
        INTERPRETERS_AVAILABLE
    with Workload(py[0].path, "spin.py") as w:
        yield w


def test_container_profiled_from_host(root_record_bin, container, host_load):
    r = record_checked(root_record_bin, "-a", "--container-frame",
                       pids=[container.pid, host_load.pid])
    mine = r.of_pid(container.pid)
    assert mine, "container process (host pid %d) absent" % container.pid + r.describe()
    bad = [s for s in mine if s.container != container.cgroup or s.ns_pid != 1
           or s.root != container.cgroup]
    assert not bad, ("not labelled [container %s] and (container %s pid 1)"
                     % (container.cgroup, container.cgroup) + show(bad, header="offending"))
    host = r.of_pid(host_load.pid)
    assert host and all(s.container is None and s.root is None for s in host), (
        "the host's process is labelled as a container" + show(host))
    app = os.path.join(CTR_APP, "small_async.py")
    in_leaf = [s for s in mine if s.frames and isinstance(s.leaf, Frame)
               and s.leaf[:2] == ("leaf", app)]
    assert total(in_leaf) >= 0.5 * total(mine), (
        "most samples should be in %s's leaf()" % app + show(mine))
    stdlib = os.path.join(CTR_PREFIX, "lib")
    assert any(f.filename.startswith(stdlib) for s in in_leaf for f in s.frames
               if isinstance(f, Frame)), "no asyncio frame under %s" % stdlib + show(in_leaf)
    # stacked: the main task, main() awaiting the gather, a worker task, worker(), leaf()
    stacked = [s for s in in_leaf if s.tasks()[:1] == ["main"] and len(s.tasks()) == 2
               and [q for q in s.qualnames() if q in ("main", "worker", "leaf")]
               == ["main", "worker", "leaf"]]
    assert total(stacked) >= 0.5 * total(in_leaf), (
        "leaf() samples should be stacked under the main task (shown as main), main() and a worker task"
        + show(in_leaf))


def test_cgroup_filter_selects_only_it(root_record_bin, container, host_load):
    r = record_checked(root_record_bin, "-a", "--cgroup", container.cgroup_dir,
                       pids=[container.pid])
    assert r.of_pid(container.pid), "container process absent" + r.describe()
    others = [s for s in r.samples if s.pid != container.pid]
    assert not others, "--cgroup let other processes in" + show(others)


def test_container_and_comm_filters(root_record_bin, container, host_load):
    r = record_checked(root_record_bin, "-a", "--container", container.cgroup,
                       pids=[container.pid])
    assert {s.pid for s in r.samples} == {container.pid}, (
        "--container %s should select only pid %d" % (container.cgroup, container.pid)
        + r.describe())
    with open("/proc/%d/comm" % host_load.pid) as f:
        comm = f.read().strip()
    r = record_checked(root_record_bin, "-a", "--comm", comm, pids=[host_load.pid])
    assert r.of_pid(host_load.pid), "--comm %s lost pid %d" % (comm, host_load.pid) + r.describe()
    bad = [s for s in r.samples if s.comm != comm]
    assert not bad, "--comm %s let other names in" % comm + show(bad)
