"""asyncbpf-record -- COMMAND: the command and its Python descendants are profiled
until it exits, its exit status is returned, and a status line is drawn on stderr only
when stderr is a terminal."""
import os
import pty
import re
import select
import subprocess
import time

import pytest

from helpers import (INTERPRETERS_AVAILABLE, RECORD_TIMEOUT, Frame, Recording, Workload,
                     assert_one_error_line, run_tool, show)

WORKLOAD = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "workloads", "spawner.py")


def python():
    if not INTERPRETERS_AVAILABLE:
        pytest.skip("no supported interpreter installed")
    return INTERPRETERS_AVAILABLE[0]


def record_command(binary, output, *argv):
    """asyncbpf-record -o OUTPUT -- ARGV..., its collapsed output read back."""
    t = run_tool(binary, "-o", output, "--", *argv)
    out = ""
    if os.path.exists(output):
        with open(output, errors="replace") as f:
            out = f.read()
    return Recording(t.argv, t.rc, out, t.err, t.elapsed)


def leaf_names(samples):
    return {s.leaf.qualname for s in samples if isinstance(s.leaf, Frame)}


@pytest.fixture(scope="module")
def spawned(root_record_bin, tmp_path_factory):
    """A recording of spawner.py, with an unrelated Python process running meanwhile."""
    interp = python()
    tmp = tmp_path_factory.mktemp("command")
    pidfile = str(tmp / "grandchild.pid")
    with Workload(interp.path, "spin.py") as other:
        r = record_command(root_record_bin, str(tmp / "out.collapsed"), interp.path,
                           WORKLOAD, pidfile, "1.5")
    with open(pidfile) as f:
        grandchild = int(f.read())
    return r, grandchild, other.pid


def test_command_exit_status_passed_through(spawned):
    r, _, _ = spawned
    assert r.rc == 5, "the command's exit status 5 was not returned" + r.describe()


def test_command_profiled_from_its_start(spawned):
    r, grandchild, _ = spawned
    parents = [s for s in r.samples if s.pid != grandchild]
    assert "parent_spin" in leaf_names(parents), (
        "the command's own spin is missing" + r.describe())


def test_command_grandchild_started_later_is_profiled(spawned):
    """Started after a second through a shell that execs Python."""
    r, grandchild, _ = spawned
    mine = r.of_pid(grandchild)
    assert "grandchild_spin" in leaf_names(mine), (
        "grandchild %d (sh exec'd into Python) not profiled" % grandchild + r.describe())
    assert all(s.comm.startswith("python") for s in mine), show(mine)


def test_command_only_its_descendants(spawned):
    r, _, other = spawned
    assert not r.of_pid(other), "a Python process outside the command's tree is in the output"


def test_no_status_line_when_stderr_is_not_a_terminal(spawned):
    r, _, _ = spawned
    assert "\r" not in r.err and "\x1b" not in r.err and not r.err_lines(), (
        "stderr is a pipe: nothing is expected on it" + r.describe())


@pytest.mark.parametrize("script,status", [("exit 3", 3),
                                           ("kill -TERM $$", 128 + 15),
                                           ("kill -KILL $$", 128 + 9)])
def test_command_exit_status(root_record_bin, tmp_path, script, status):
    r = record_command(root_record_bin, str(tmp_path / "out"), "sh", "-c", script)
    assert r.rc == status, "expected exit %d" % status + r.describe()
    assert r.err_lines() == ["asyncbpf-record: warning: no Python process ran under 'sh'"], (
        "expected one warning: sh ran no Python" + r.describe())


def test_command_not_found(root_record_bin, tmp_path):
    r = record_command(root_record_bin, str(tmp_path / "out"), "no-such-command-xyz")
    assert_one_error_line(r, 127, "no-such-command-xyz", "not found")


def test_command_not_executable(root_record_bin, tmp_path):
    script = tmp_path / "script"
    script.write_text("#!/bin/sh\n")
    os.chmod(str(script), 0o644)
    r = record_command(root_record_bin, str(tmp_path / "out"), str(script))
    assert_one_error_line(r, 126, str(script), "permission denied")


@pytest.mark.parametrize("args", [["-p", "1", "--", "true"], ["-a", "--", "true"], ["--"]],
                         ids=["with -p", "with -a", "no command"])
def test_command_usage_errors(record_bin, args):
    r = run_tool(record_bin, *args)
    assert_one_error_line(r, 1, ("--", "command"))


def read_pty(fd, proc, timeout):
    out = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # EIO: every writer has closed the terminal
                break
            if not chunk:
                break
            out += chunk
        elif proc.poll() is not None:
            break
    return out


def test_status_line_on_a_terminal(root_record_bin, tmp_path):
    interp = python()
    master, slave = pty.openpty()
    argv = [root_record_bin, "-o", str(tmp_path / "out"), "--", interp.path, "-c",
            "import time\nend = time.monotonic() + 3\nwhile time.monotonic() < end: pass"]
    try:
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=slave)
        os.close(slave)
        out = read_pty(master, p, RECORD_TIMEOUT)
        rc = p.wait(timeout=30)
    finally:
        os.close(master)
    text = out.decode(errors="replace")
    assert rc == 0, "exit %s; terminal: %r" % (rc, text)
    lines = re.findall(r"\r(asyncbpf-record: [^\r\n\x1b]*)\x1b\[K", text)
    assert lines, "no status line drawn: %r" % text
    assert all(re.match(r"asyncbpf-record: \d+ s, \d+ samples, \d+ Python process(es)?, "
                        r"\d+ lost$", l) for l in lines), lines
    assert any(re.search(r" [1-9]\d* samples, 1 Python process,", l) for l in lines), (
        "no status line counts the command's samples: %r" % lines)
    assert text.endswith("\r\x1b[K"), "the status line is not erased at the end: %r" % text
    assert "\n" not in text, "the status line is not rewritten in place: %r" % text
