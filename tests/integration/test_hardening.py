"""asyncbpf-record as a root process on a host it must not harm: the output file is never
written through a symlink and replaced only by rename, signals end a recording with a
complete file, SIGKILL leaves no BPF object behind, lost samples are written down, and
each environment failure gets one clear line and exit status 2."""
import json
import os
import shutil
import signal
import stat
import subprocess
import time

import pytest

from helpers import (INTERPRETERS_AVAILABLE, PROG, RECORD_TIMEOUT, WORKLOADS, Recording,
                     Workload, assert_one_error_line, record, record_checked, record_sampled,
                     wait_cpu, wait_sampling)


def any_python():
    if not INTERPRETERS_AVAILABLE:
        pytest.skip("no supported interpreter installed")
    return INTERPRETERS_AVAILABLE[-1]


@pytest.fixture(scope="module")
def spinner():
    with Workload(any_python().path, "spin.py") as w:
        yield w


def check_valid(r, pid):
    """A complete recording of pid: parsed line by line by Recording, ends with a
    newline, and holds pid's stacks."""
    assert r.out.endswith("\n"), "output does not end with a newline" + r.describe()
    assert r.of_pid(pid), "no stacks of pid %d" % pid + r.describe()


def read(path):
    with open(path) as f:
        return f.read()


# -- root-safe output ------------------------------------------------------------------------

def test_output_symlink_refused(root_record_bin, spinner, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    link = tmp_path / "out"
    link.symlink_to(victim)
    r = record(root_record_bin, "-p", spinner.pid, "-d", 1, "-o", str(link))
    assert_one_error_line(r, 2, "symlink", str(link))
    assert read(victim) == "precious\n", "the symlink's target was written"
    assert os.path.islink(str(link)), "the symlink was replaced"
    assert sorted(os.listdir(str(tmp_path))) == ["out", "victim"], "files left behind"


def test_output_symlinked_directory_refused(root_record_bin, spinner, tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    out = tmp_path / "link" / "out"
    r = record(root_record_bin, "-p", spinner.pid, "-d", 1, "-o", str(out))
    assert_one_error_line(r, 2, "symlink")
    assert os.listdir(str(real)) == [], "written through the symlinked directory"


def test_output_directory_refused(root_record_bin, spinner, tmp_path):
    """(A device or FIFO is written in place: test_output_devices.py.)"""
    d = tmp_path / "d"
    d.mkdir()
    r = record(root_record_bin, "-p", spinner.pid, "-d", 1, "-o", str(d), timeout=20)
    assert_one_error_line(r, 2, str(d))
    assert os.listdir(str(d)) == []


def test_output_unwritable_fails_before_recording(root_record_bin, spinner, tmp_path):
    """A directory that does not exist is reported at once, not after the recording."""
    out = tmp_path / "missing" / "out"
    r = record(root_record_bin, "-p", spinner.pid, "-d", 30, "-o", str(out))
    assert_one_error_line(r, 2, str(tmp_path / "missing"))


def test_output_replaced_by_rename(root_record_bin, spinner, tmp_path):
    """An existing file is replaced by a new inode: a hard link to the old one keeps the
    old contents, and no temporary file is left."""
    out = tmp_path / "out"
    out.write_text("old\n")
    keep = tmp_path / "keep"
    os.link(str(out), str(keep))
    old_ino = os.stat(str(out)).st_ino
    r = record_checked(root_record_bin, "-p", spinner.pid, output=str(out), pids=[spinner.pid])
    check_valid(r, spinner.pid)
    assert read(keep) == "old\n", "the old file was written in place"
    assert os.stat(str(out)).st_ino != old_ino
    assert sorted(os.listdir(str(tmp_path))) == ["keep", "out"], "temporary file left behind"


@pytest.mark.parametrize("args,umask,mode", [([], 0, 0o600), (["--file-mode", "0644"], 0o077, 0o644),
                                             (["--file-mode", "0"], 0, 0)],
                         ids=["default", "0644", "0"])
def test_output_mode(root_record_bin, spinner, tmp_path, args, umask, mode):
    """The mode asked for exactly, whatever the umask: each case runs under a umask that
    would change the result if the file were created with that mode and no more."""
    out = tmp_path / "out"
    r = record_checked(root_record_bin, "-p", spinner.pid, *args, output=str(out),
                       prefix=["sh", "-c", "umask %o; exec \"$@\"" % umask, "sh"],
                       pids=[spinner.pid])
    got = stat.S_IMODE(os.stat(str(out)).st_mode)
    assert got == mode, "mode %o, expected %o (umask %o)" % (got, mode, umask)
    if mode & 0o400:
        check_valid(r, spinner.pid)


@pytest.mark.parametrize("value", ["999", "abc", "-1", "01000", ""])
def test_bad_mode(record_bin, value):
    r = record(record_bin, "-d", 1, "--file-mode", value, timeout=20)
    assert_one_error_line(r, 1, "mode")


# -- signals ------------------------------------------------------------------------------------

def bpftool_show(kind):
    p = subprocess.run(["bpftool", "-j", kind, "show"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True, timeout=30)
    assert p.returncode == 0, "bpftool %s show failed: %s" % (kind, p.stderr)
    return json.loads(p.stdout or "[]")


FD_KINDS = {"anon_inode:bpf-prog": ("prog", "prog_id"), "anon_inode:bpf-map": ("map", "map_id"),
            "anon_inode:bpf_link": ("link", "link_id")}


def bpf_objects(kind, pid):
    """{id: name} of the BPF programs, maps or links (kind) that pid holds open, from its
    file descriptors (bpftool's own pid listing is not built into every bpftool)."""
    ids = set()
    fds = "/proc/%d/fd" % pid
    for fd in os.listdir(fds) if os.path.isdir(fds) else ():
        try:
            k = FD_KINDS.get(os.readlink(os.path.join(fds, fd)))
            if not k or k[0] != kind:
                continue
            with open("/proc/%d/fdinfo/%s" % (pid, fd)) as f:
                ids |= {int(l.split()[1]) for l in f if l.startswith(k[1] + ":")}
        except OSError:
            continue  # closed meanwhile
    names = {o["id"]: o.get("name", "") for o in bpftool_show(kind)} if ids else {}
    return {i: names.get(i, "") for i in ids}


def bpf_ids(kind):
    return {o["id"] for o in bpftool_show(kind)}


def start_recording(binary, *args):
    """Starts asyncbpf-record and returns it once it samples: its sampler program loaded
    and attached to a cpu-clock event on every CPU."""
    if not shutil.which("bpftool"):
        pytest.skip("bpftool not installed")
    argv = [binary] + [str(a) for a in args]
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_sampling(p)
    return p


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_writes_complete_file(root_record_bin, spinner, tmp_path, sig):
    out = tmp_path / "out"
    p = start_recording(root_record_bin, "-p", spinner.pid, "-o", out)
    # the spinner runs under the sampler long enough to leave stacks (about 50 at 99 Hz)
    wait_cpu([spinner.pid], 0.5, RECORD_TIMEOUT, "CPU time while sampled")
    assert not out.exists(), "output visible before the recording ended"
    t0 = time.monotonic()
    p.send_signal(sig)
    try:
        stdout, stderr = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        raise AssertionError("asyncbpf-record did not end within 30 s of %s" % sig.name)
    r = Recording(p.args, p.returncode, read(str(out)), stderr.decode(errors="replace"),
                  time.monotonic() - t0)
    assert r.rc == 0, "expected exit 0 after %s" % sig.name + r.describe()
    assert not stdout, "output on stdout despite -o"
    check_valid(r, spinner.pid)
    assert os.listdir(str(tmp_path)) == ["out"], "temporary file left behind"
    assert stat.S_IMODE(os.stat(str(out)).st_mode) == 0o600


def test_sigkill_leaves_no_bpf_objects(root_record_bin, spinner, tmp_path):
    """Everything the profiler loads lives as long as its file descriptors: nothing pinned,
    so SIGKILL frees it all. Only the objects the killed profiler held are checked (other
    profilers may be running)."""
    out = tmp_path / "out"
    p = start_recording(root_record_bin, "-p", spinner.pid, "-o", out)
    held = {k: bpf_objects(k, p.pid) for k in ("prog", "map", "link")}
    assert "sample_cpu" in held["prog"].values() and "events" in held["map"].values(), (
        "the profiler's program and ring buffer not found by pid: %s" % held)
    assert held["link"], "no BPF links held by the profiler: %s" % held
    p.kill()
    p.communicate(timeout=30)
    deadline = time.monotonic() + 20
    while True:  # the kernel frees them asynchronously
        alive = {k: {i: n for i, n in objs.items() if i in bpf_ids(k)}
                 for k, objs in held.items()}
        alive = {k: v for k, v in alive.items() if v}
        if not alive or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert not alive, "BPF objects of the killed profiler still exist: %s" % alive
    assert os.listdir(str(tmp_path)) == [], "files left by the killed profiler"


# -- lost samples ----------------------------------------------------------------------------

def test_lost_samples_written(root_record_bin, tmp_path):
    """A ring buffer too small for the load (a test hook; two samples fit) loses samples:
    the output ends with their count, the same as --stats reports."""
    py = any_python()
    env = dict(os.environ, ASYNCBPF_TEST_RINGBUF_BYTES="8192")
    out = tmp_path / "out"
    with Workload(py.path, "deep.py", 100) as w:
        argv = [root_record_bin, "-p", str(w.pid), "-F", "999", "-d", "3", "--stats",
                "-o", str(out)]
        t0 = time.monotonic()
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                           timeout=RECORD_TIMEOUT)
    r = Recording(argv, p.returncode, read(str(out)), p.stderr.decode(errors="replace"),
                  time.monotonic() - t0)
    assert r.rc == 0, "recording failed" + r.describe()
    stats = dict(l.split(": ", 1) for l in r.err_lines() if ": " in l)
    lost = int(stats["lost"].split()[0])
    recorded = int(stats["recorded samples"])
    assert lost > 0, "an 8 KiB ring buffer lost nothing at 999 Hz" + r.describe()
    assert r.lost == lost, "output says %d lost, --stats %d" % (r.lost, lost) + r.describe()
    assert sum(s.count for s in r.samples) == recorded, "output total != recorded samples"


# -- environment checks ------------------------------------------------------------------------

DROP = ["setpriv", "--inh-caps=-all", "--ambient-caps=-all"]


@pytest.mark.parametrize("drop,missing", [
    ("bpf,-sys_admin", "CAP_BPF"),
    ("perfmon,-sys_admin", "CAP_PERFMON"),
    ("bpf,-perfmon,-sys_admin", "CAP_BPF and CAP_PERFMON"),
], ids=["bpf", "perfmon", "both"])
def test_missing_capability(root_record_bin, drop, missing):
    """Root without CAP_BPF or CAP_PERFMON (and without CAP_SYS_ADMIN, which covers both)."""
    if not shutil.which("setpriv"):
        pytest.skip("setpriv (util-linux) not installed")
    r = record(root_record_bin, "-a", "-d", 1, prefix=DROP + ["--bounding-set=-" + drop])
    assert_one_error_line(r, 2, "missing %s" % missing)


def test_no_btf(root_record_bin):
    """ASYNCBPF_BTF names the BTF to use (for kernels that do not expose theirs); a missing
    one is reported as a kernel without BTF would be."""
    env = dict(os.environ, ASYNCBPF_BTF="/nonexistent/vmlinux")
    p = subprocess.run([root_record_bin, "-a", "-d", "1"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, env=env, timeout=RECORD_TIMEOUT)
    r = Recording(p.args, p.returncode, "", p.stderr.decode(), 0)
    assert_one_error_line(r, 2, "BTF", "/nonexistent/vmlinux")


def test_btf_override_is_used(root_record_bin, spinner):
    if not os.path.exists("/sys/kernel/btf/vmlinux"):
        pytest.skip("kernel exposes no BTF")
    env = dict(os.environ, ASYNCBPF_BTF="/sys/kernel/btf/vmlinux")
    r = record_sampled(root_record_bin, "-p", spinner.pid, env=env, pids=[spinner.pid])
    assert r.rc == 0 and r.of_pid(spinner.pid), "recording with ASYNCBPF_BTF failed" + r.describe()


@pytest.fixture(scope="module")
def no_perf_events(tmp_path_factory):
    """tests/workloads/no_perf_events.c: runs a command where perf_event_open fails with
    EACCES (seccomp), as where perf events are forbidden even to root."""
    cc = shutil.which("gcc") or shutil.which("cc")
    if not cc:
        pytest.skip("no C compiler")
    out = str(tmp_path_factory.mktemp("noperf") / "no_perf_events")
    subprocess.run([cc, "-o", out, os.path.join(WORKLOADS, "no_perf_events.c")], check=True)
    return out


def test_perf_events_unavailable(root_record_bin, spinner, no_perf_events):
    r = record(root_record_bin, "-p", spinner.pid, "-d", 1, prefix=[no_perf_events])
    assert_one_error_line(r, 2, "perf events unavailable")


def test_verifier_rejects(root_record_bin):
    """ASYNCBPF_TEST_REJECT_BPF turns on a path in the sampler the verifier refuses: one
    line without -v; with -v the verifier's last lines, then that line."""
    env = dict(os.environ, ASYNCBPF_TEST_REJECT_BPF="1")
    for verbose in (False, True):
        argv = [root_record_bin, "-a", "-d", "1"] + (["-v"] if verbose else [])
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                           timeout=RECORD_TIMEOUT)
        r = Recording(argv, p.returncode, "", p.stderr.decode(errors="replace"), 0)
        if not verbose:
            assert_one_error_line(r, 2, "rejected", "-v")
            continue
        lines = r.err_lines()
        assert r.rc == 2, "expected exit 2" + r.describe()
        assert lines and lines[-1].startswith(PROG) and "rejected" in lines[-1], (
            "last line is not the rejection" + r.describe())
        assert any("invalid mem access" in l for l in lines), (
            "the verifier's reason is not shown" + r.describe())
        assert len(lines) <= 45, "more than the verifier log's last lines" + r.describe()
