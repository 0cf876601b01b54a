"""Real servers for the service tests (test_services.py): a PostgreSQL and a redis-server
started by the test in private directories, listening on unix sockets only, and wrk
loading a workload's HTTP server over keep-alive connections. Each class raises
pytest.skip with the reason when its binary is missing."""
import glob
import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
import time

import pytest

from helpers import wait_for


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def pg_bindir():
    """Debian's PostgreSQL server binaries (the newest major installed), or a skip."""
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                  key=lambda d: int(re.sub(r"\D", "", d.split("/")[-2]) or 0))
    for d in reversed(dirs):
        if all(os.access(os.path.join(d, b), os.X_OK) for b in ("initdb", "pg_ctl", "postgres")):
            return d
    pytest.skip("no PostgreSQL server: no /usr/lib/postgresql/N/bin/{initdb,pg_ctl,postgres} "
                "(make deps installs Debian's postgresql)")


class Postgres:
    """A PostgreSQL cluster of its own: initdb into a temporary directory (as the
    postgres user, which initdb and the server require when we are root), started with
    pg_ctl on a unix socket in that directory (no TCP), trust authentication, no fsync.
    Clients connect with host=sockdir, port=port, user postgres."""

    def __init__(self):
        self.bindir = pg_bindir()
        try:
            self.user = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("no postgres user (Debian's postgresql package creates it)")
        self.dir = tempfile.mkdtemp(prefix="asyncbpf-pg-")
        self.data = os.path.join(self.dir, "data")
        self.sockdir = self.dir
        self.port = _free_port()  # names the socket file only: listen_addresses is empty
        self.log = os.path.join(self.dir, "server.log")
        self.started = False

    def _as_postgres(self, *argv, timeout=120):
        p = subprocess.run(["runuser", "-u", "postgres", "--"] + list(argv),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout,
                           universal_newlines=True, cwd=self.dir)
        assert p.returncode == 0, "%s failed (rc %d): %s" % (argv, p.returncode, p.stdout[-3000:])
        return p.stdout

    def start(self):
        os.chown(self.dir, self.user.pw_uid, self.user.pw_gid)
        os.chmod(self.dir, 0o755)  # the socket is reached through it (the workload runs as root)
        self._as_postgres(os.path.join(self.bindir, "initdb"), "-D", self.data, "-U", "postgres",
                          "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C")
        opts = ("-c listen_addresses='' -k %s -p %d -c fsync=off -c synchronous_commit=off "
                "-c full_page_writes=off -c shared_buffers=32MB -c max_connections=40"
                % (self.sockdir, self.port))
        self._as_postgres(os.path.join(self.bindir, "pg_ctl"), "-D", self.data, "-l", self.log,
                          "-o", opts, "-w", "-t", "60", "start")
        self.started = True
        sock = os.path.join(self.sockdir, ".s.PGSQL.%d" % self.port)
        wait_for(lambda: os.path.exists(sock), 30, "PostgreSQL's socket %s" % sock)
        return self

    def stop(self):
        if self.started:
            subprocess.run(["runuser", "-u", "postgres", "--",
                            os.path.join(self.bindir, "pg_ctl"), "-D", self.data, "-m", "fast",
                            "-w", "-t", "30", "stop"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
            self.started = False
        shutil.rmtree(self.dir, ignore_errors=True)

    def log_tail(self, n=3000):
        try:
            with open(self.log, errors="replace") as f:
                return f.read()[-n:]
        except OSError:
            return ""


class Redis:
    """A redis-server of its own: a unix socket in a temporary directory, no TCP port,
    no persistence (no RDB snapshots, no AOF)."""

    def __init__(self):
        self.binary = shutil.which("redis-server")
        if not self.binary:
            pytest.skip("no redis-server (make deps installs Debian's redis-server)")
        self.dir = tempfile.mkdtemp(prefix="asyncbpf-redis-")
        self.socket = os.path.join(self.dir, "redis.sock")
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen(
            [self.binary, "--port", "0", "--unixsocket", self.socket, "--unixsocketperm", "700",
             "--save", "", "--appendonly", "no", "--dir", self.dir, "--daemonize", "no",
             "--logfile", os.path.join(self.dir, "redis.log")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(lambda: self.proc.poll() is not None or self.ping(), 30,
                 "redis-server to answer PING on %s" % self.socket)
        assert self.proc.poll() is None, "redis-server exited (rc %s)" % self.proc.returncode
        return self

    def ping(self):
        try:
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(2)
            s.connect(self.socket)
            s.sendall(b"PING\r\n")
            ok = s.recv(64).startswith(b"+PONG")
            s.close()
            return ok
        except OSError:
            return False

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


ROTATE_LUA = """
-- each connection's requests go round the paths in turn (wrk: one Lua state per thread)
local paths = {%s}
local i = 0
request = function()
  i = i + 1
  return wrk.format("GET", paths[(i %% #paths) + 1])
end
"""


def wrk_binary():
    path = shutil.which("wrk")
    if not path:
        pytest.skip("no wrk (make deps installs Debian's wrk)")
    return path


class WrkResult:
    def __init__(self, argv, rc, out, err, elapsed):
        self.argv, self.rc, self.out, self.err, self.elapsed = argv, rc, out, err, elapsed
        m = re.search(r"(\d+) requests in ([\d.]+)(\w+)", out)
        self.requests = int(m.group(1)) if m else 0
        m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
        self.bad = int(m.group(1)) if m else 0
        m = re.search(r"Socket errors: (.*)", out)
        self.socket_errors = m.group(1).strip() if m else None

    def describe(self):
        return "\n$ %s\nexit %s after %.1fs\n%s%s" % (" ".join(self.argv), self.rc, self.elapsed,
                                                     self.out, self.err)


def wrk_start(port, paths, seconds, threads=2, connections=8, workdir=None):
    """Starts wrk against 127.0.0.1:port, rotating over paths; returns (Popen, argv)."""
    lua = os.path.join(workdir or tempfile.mkdtemp(prefix="asyncbpf-wrk-"), "rotate.lua")
    with open(lua, "w") as f:
        f.write(ROTATE_LUA % ", ".join('"%s"' % p for p in paths))
    argv = [wrk_binary(), "-t%d" % threads, "-c%d" % connections, "-d%ds" % seconds,
            "--latency", "--timeout", "10s", "-s", lua, "http://127.0.0.1:%d/" % port]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            universal_newlines=True), argv


def wrk_finish(proc, argv, started, timeout):
    out, err = proc.communicate(timeout=timeout)
    return WrkResult(argv, proc.returncode, out, err, time.monotonic() - started)
