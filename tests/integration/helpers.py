"""Helpers for the integration tests: interpreter discovery, workloads, running
asyncbpf-record and parsing its collapsed output."""
import atexit
import glob
import json
import os
import re
import selectors
import shutil
import signal
import subprocess
import tempfile
import threading
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The build to test: build/, or another variant of it (make test-sanitize: build-san/).
BUILD = os.path.join(REPO, os.environ.get("ASYNCBPF_BUILD") or "build")
RECORD = os.path.join(BUILD, "asyncbpf-record")
TASKS = os.path.join(BUILD, "asyncbpf-tasks")


def _asan_build():
    try:
        with open(RECORD, "rb") as f:
            return b"__asan_init" in f.read()
    except OSError:
        return False


# AddressSanitizer keeps freed memory in a quarantine (256 MiB by default) and adds shadow
# pages, so RSS says nothing about the recorder's own growth in that build; LeakSanitizer
# checks leaks at exit instead (a leak makes the exit status non-zero).
ASAN = _asan_build()
# Comma-separated interpreter ids or their prefixes ("pyenv-3.8,pyenv-3.13"): the tests
# run only these; the others are reported as skipped.
SELECTED = [s.strip() for s in os.environ.get("ASYNCBPF_INTERPRETERS", "").split(",") if s.strip()]
WORKLOADS = os.path.join(REPO, "tests", "workloads")
SUPPORTED_MINORS = range(8, 16)  # 3.8 .. 3.15
PROG = "asyncbpf-record: "
# Start-up and run timeouts are multiplied by this: an emulated guest (make test-kernels)
# runs Python about 10 times slower, fork and exec about 40 times.
TIMEOUT_SCALE = float(os.environ.get("ASYNCBPF_TIMEOUT_SCALE") or 1)
# Debian's own builds (stripped, _asyncio a separate module) run in chroots that
# tools/trees.sh builds and caches (make trees); tree name -> the minors run in it
CACHE = os.environ.get("ASYNCBPF_CACHE") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "asyncbpf")
TREES = os.path.join(CACHE, "trees")
# (3.13s last: tests that take any one interpreter take the last or the one before it)
TREE_PYTHONS = {"sid": (14, 15, 13), "trixie": (13,)}
TREE_RUN = os.path.join(REPO, "tools", "tree-run.sh")
# How long a recording may take beyond its own -d before it counts as hung: loading and
# verifying the BPF programs took 25 s on the loaded 2-core machine the suite runs on
# (other builds and test runs beside it), a sanitizer build is slower still.
RECORD_TIMEOUT = 180


def named_pids(line):
    """The pids a message names: "pid N" or a /proc/N/ path (a number elsewhere in it,
    a count or an address, is not a pid, and may equal one of another process)."""
    return {int(a or b) for a, b in re.findall(r"\bpid (\d+)|/proc/(\d+)/", line)}


def wait_for(cond, timeout, what, interval=0.05):
    """Polls cond() until it returns something true, and returns that; after timeout
    seconds fails with what was waited for (a condition, never a guessed delay: the
    machine these tests run on may be loaded); what may be a function, called then."""
    deadline = time.monotonic() + timeout
    while True:
        got = cond()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %gs waiting for %s"
                                 % (timeout, what() if callable(what) else what))
        time.sleep(interval)


def proc_exe(pid):
    """The image pid runs (/proc/PID/exe), or None once it is gone."""
    try:
        return os.readlink("/proc/%d/exe" % pid)
    except OSError:
        return None


def cpu_seconds(who):
    """CPU time a process has run, all its threads, or one thread given as (pid, tid),
    from schedstat (nanoseconds, not the tick-sampled utime); None once it is gone."""
    pid, tid = who if isinstance(who, tuple) else (who, None)
    paths = (["/proc/%d/task/%d/schedstat" % (pid, tid)] if tid else
             glob.glob("/proc/%d/task/*/schedstat" % pid))
    total = 0
    for path in paths:
        try:
            with open(path) as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            if tid:
                return None  # a thread of a process may end meanwhile, and take its time along
    if not paths or not os.path.exists("/proc/%d" % pid):
        return None
    return total / 1e9


def wait_cpu(who, seconds, timeout, what="CPU time"):
    """Waits until each of who (pids, or (pid, tid) for one thread) has run `seconds`
    more CPU time than when called. A sampler at F Hz then took about F * seconds samples
    of each, however loaded the machine (a busy machine stretches wall time, not CPU
    time)."""
    who = list(who)
    base = {w: cpu_seconds(w) for w in who}
    gone = [w for w, c in base.items() if c is None]
    assert not gone, "%s gone before running %s" % (gone, what)

    def done():
        now = {w: cpu_seconds(w) for w in who}
        ended = [w for w, c in now.items() if c is None]
        assert not ended, "%s exited while waiting for %s" % (ended, what)
        return all(now[w] - base[w] >= seconds for w in who)
    wait_for(done, timeout, "%gs of %s in each of %s" % (seconds, what, who), 0.1)


def online_cpus():
    """How many CPUs are online (the sampler opens one cpu-clock event on each)."""
    try:
        with open("/sys/devices/system/cpu/online") as f:
            spans = f.read().strip().split(",")
        n = 0
        for span in spans:
            a, _, b = span.partition("-")
            n += int(b or a) - int(a) + 1
        return n
    except (OSError, ValueError):
        return len(os.sched_getaffinity(0))


def _fdinfos(pid):
    """[(link target, fdinfo text)] of pid's descriptors (those that vanish are left out)."""
    out = []
    try:
        fds = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return out
    for fd in fds:
        try:
            target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
            with open("/proc/%d/fdinfo/%s" % (pid, fd)) as f:
                out.append((target, f.read()))
        except OSError:
            continue
    return out


def is_sampling(pid):
    """Whether asyncbpf-record pid samples: a cpu-clock perf event attached on every
    online CPU. Kernels that describe perf links in fdinfo (6.6+) tell these from the
    uprobes on task creation, which are perf events too and are attached earlier, while
    the first processes are examined; on older ones any perf event has to do."""
    fds = _fdinfos(pid)
    perf_links = [i for t, i in fds if t == "anon_inode:bpf_link"
                  and re.search(r"^link_type:\s*perf$", i, re.M)]
    if any(re.search(r"^event_type:", i, re.M) for i in perf_links):
        events = [i for i in perf_links if re.search(r"^event_type:\s*event$", i, re.M)]
        return len(events) >= online_cpus()
    return any("perf_event" in t for t, _ in fds)


def wait_sampling(rec, timeout=RECORD_TIMEOUT):
    """Returns rec (a Popen of asyncbpf-record) once it samples: loading and verifying
    the BPF programs takes seconds, many on a loaded machine; a sanitizer build is
    slower still."""
    try:
        wait_for(lambda: rec.poll() is not None or is_sampling(rec.pid), timeout,
                 "asyncbpf-record (pid %d) to sample on every CPU" % rec.pid)
        if rec.poll() is None:
            return rec
    except AssertionError as e:
        why = str(e)
    else:
        why = "asyncbpf-record exited before sampling"
    rec.kill()
    out, err = rec.communicate()
    raise AssertionError("%s (rc %s): %s" % (why, rec.returncode,
                                             err.decode(errors="replace")[-2000:]))


class StderrLines:
    """Reads a Popen's stderr (bytes) in a thread, so that a test can wait for a line
    while the process runs; text() is everything read, once the process has ended."""

    def __init__(self, proc):
        self.lines, self.times = [], []
        self.thread = threading.Thread(target=self._read, args=(proc.stderr,), daemon=True)
        self.thread.start()

    def _read(self, f):
        for line in f:
            self.times.append(time.monotonic())
            self.lines.append(line.decode(errors="replace"))

    def find(self, pattern):
        """The first line read so far that matches the regular expression, or None."""
        return next((l for l in list(self.lines) if re.search(pattern, l)), None)

    def when(self, pattern):
        """When (time.monotonic()) the first line matching pattern was read, or None."""
        return next((t for t, l in zip(list(self.times), list(self.lines))
                     if re.search(pattern, l)), None)

    def text(self, timeout=30):
        self.thread.join(timeout)
        return "".join(self.lines)


def bpftool_json(*args):
    p = subprocess.run(["bpftool", "-j"] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    assert p.returncode == 0, "bpftool %s: %s" % (" ".join(args), p.stderr.decode())
    return json.loads(p.stdout.decode() or "null")


def bpf_map_ids(pid):
    """Ids of the BPF maps pid holds open."""
    ids = set()
    for target, info in _fdinfos(pid):
        m = re.search(r"^map_id:\s*(\d+)", info, re.M)
        if target == "anon_inode:bpf-map" and m:
            ids.add(int(m.group(1)))
    return ids


def _entry_pid(name, entry):
    key = entry.get("formatted", entry)["key"] if "formatted" in entry else entry["key"]
    if isinstance(key, list):  # raw bytes as hex strings, little endian
        raw = bytes(int(b, 16) for b in key)
        return int.from_bytes(raw[4:8] if name == "tstates" else raw[:4], "little")
    if isinstance(key, dict):
        return int(key["pid"])
    return int(key) >> 32 if name == "tstates" else int(key)


def map_entry_pids(pid, names):
    """{map name: [pid of each entry]} of asyncbpf-record pid's per-process BPF maps
    among names (procs, tstates, coro_task, task_serials, task_links)."""
    out = {}
    for mid in bpf_map_ids(pid):
        info = bpftool_json("map", "show", "id", str(mid))
        name = info.get("name")
        if name in names:
            out[name] = [_entry_pid(name, e) for e in bpftool_json("map", "dump", "id", str(mid))]
    return out


def tracked_pids(rec_pid):
    """The processes asyncbpf-record rec_pid profiles now: the keys of its procs map
    (needs bpftool)."""
    return set(map_entry_pids(rec_pid, ("procs",)).get("procs", ()))


def wait_tracked(rec, pids, timeout=RECORD_TIMEOUT):
    """Waits until asyncbpf-record rec (a Popen) has examined pids and profiles them."""
    if not shutil.which("bpftool"):
        pytest.skip("no bpftool (make deps): it shows which processes the recorder profiles")
    pids = set(pids)

    def done():
        assert rec.poll() is None, "asyncbpf-record exited (rc %s) while waiting for it to " \
            "profile pids %s" % (rec.returncode, sorted(pids))
        return pids <= tracked_pids(rec.pid)
    wait_for(done, timeout, "asyncbpf-record to examine and profile pids %s" % sorted(pids), 0.2)


def wait_links(rec, counts, timeout=RECORD_TIMEOUT):
    """Waits until asyncbpf-record rec (a Popen) holds at least counts[pid] task links
    (awaiter or creation) of each pid: its snapshots have seen those awaits."""
    if not shutil.which("bpftool"):
        pytest.skip("no bpftool (make deps): it shows which task links the recorder holds")
    have = {}

    def done():
        assert rec.poll() is None, "asyncbpf-record exited (rc %s) while waiting for its " \
            "task links" % rec.returncode
        pids = map_entry_pids(rec.pid, ("task_links",)).get("task_links", [])
        have.update({p: pids.count(p) for p in counts})
        return all(have[p] >= n for p, n in counts.items())
    wait_for(done, timeout, lambda: "asyncbpf-record to link tasks: want %s, have %s"
             % (counts, have), 0.2)


def selected(id):
    return not SELECTED or any(id == s or id.startswith((s + ".", s + "-")) for s in SELECTED)


class Interp:
    def __init__(self, id, path=None, missing=None, tree=None, inner=None):
        self.id = id
        self.path = path
        # a Debian tree's interpreter: path is a wrapper that runs inner in tree (tree_run)
        self.tree, self.inner = tree, inner
        self.missing = missing  # reason to skip, or None
        if not missing and not selected(id):
            self.missing = "not selected by ASYNCBPF_INTERPRETERS=%s" % ",".join(SELECTED)
        self.version = None
        if path and not missing:
            try:
                out = subprocess.run(
                    [path, "-c", "import sys; print('%d %d %d' % sys.version_info[:3])"],
                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30 * TIMEOUT_SCALE,
                    universal_newlines=True, cwd=WORKLOADS)  # a tree has this directory
                words = out.stdout.split()
                if len(words) != 3 or not all(w.isdigit() for w in words):
                    raise ValueError(" ".join(out.stdout.strip().splitlines()[-2:]))
                self.version = tuple(int(x) for x in words)
            except (OSError, ValueError, subprocess.SubprocessError) as e:
                self.missing = "%s does not run: %s" % (path, e)

    @property
    def exe(self):
        """The image /proc/PID/exe shows for it: for a tree's, not its wrapper but the
        tree's binary (seen from here, in the tree's directory)."""
        if self.tree:
            return os.path.realpath(os.path.join(self.tree, self.inner.lstrip("/")))
        return os.path.realpath(self.path)

    @property
    def has_qualname(self):
        return self.version >= (3, 11)

    def __repr__(self):
        return self.id


def pyenv_roots():
    roots = []
    if os.environ.get("PYENV_ROOT"):
        roots.append(os.environ["PYENV_ROOT"])
    if shutil.which("pyenv"):
        try:
            out = subprocess.run(["pyenv", "root"], stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, universal_newlines=True,
                                 timeout=30)
            if out.returncode == 0 and out.stdout.strip():
                roots.append(out.stdout.strip())
        except (OSError, subprocess.SubprocessError):
            pass
    roots.append(os.path.expanduser("~/.pyenv"))
    seen, out = set(), []
    for r in roots:
        r = os.path.realpath(r)
        if r not in seen and os.path.isdir(os.path.join(r, "versions")):
            seen.add(r)
            out.append(r)
    return out


def _pyenv_versions():
    """{(major, minor): [(version string, python path)]} of every pyenv CPython."""
    found = {}
    for root in pyenv_roots():
        for d in sorted(glob.glob(os.path.join(root, "versions", "*"))):
            m = re.match(r"^(\d+)\.(\d+)\.(\d+)$", os.path.basename(d))
            py = os.path.join(d, "bin", "python%s.%s" % m.group(1, 2)) if m else None
            if py and os.access(py, os.X_OK):
                found.setdefault((int(m.group(1)), int(m.group(2))), []).append(
                    (os.path.basename(d), py))
    return found


_wrappers = []


def _wrapper_dir():
    if not _wrappers:
        _wrappers.append(tempfile.mkdtemp(prefix="asyncbpf-trees-"))
        atexit.register(shutil.rmtree, _wrappers[0], True)
    return _wrappers[0]


def tree_run(tree, *argv):
    """argv run inside a Debian tree: own mount namespace, chroot (tools/tree-run.sh)."""
    return [TREE_RUN, tree] + [str(a) for a in argv]


def _tree_missing(name):
    d = os.path.join(TREES, name)
    if os.path.isfile(os.path.join(d, ".asyncbpf-tree")):
        return None
    try:
        with open(os.path.join(TREES, name + ".failed")) as f:
            return "no Debian %s tree: %s" % (name, f.readline().strip())
    except OSError:
        return "no Debian %s tree in %s (make trees builds it)" % (name, TREES)


def discover_tree_interpreters():
    """Each tree's /usr/bin/python3.N as `TREE-3.N`, run through a wrapper named
    python3.N (the name the process gets) that execs tools/tree-run.sh."""
    out = []
    for name, minors in TREE_PYTHONS.items():
        why = _tree_missing(name)
        tree = os.path.realpath(os.path.join(TREES, name))
        for minor in minors:
            id, exe = "%s-3.%d" % (name, minor), "python3.%d" % minor
            if not why and not os.access(os.path.join(tree, "usr/bin", exe), os.X_OK):
                why_py = "the Debian %s tree %s has no /usr/bin/%s" % (name, tree, exe)
            else:
                why_py = why
            if why_py or not selected(id):
                out.append(Interp(id, missing=why_py))
                continue
            d = os.path.join(_wrapper_dir(), id)
            os.mkdir(d)
            path = os.path.join(d, exe)
            with open(path, "w") as f:
                f.write("#!/bin/sh\nexec %s %s /usr/bin/%s \"$@\"\n" % (TREE_RUN, tree, exe))
            os.chmod(path, 0o755)
            out.append(Interp(id, path, tree=tree, inner="/usr/bin/" + exe))
    return out


def pstree_argv(interp, pid):
    """CPython's own `python3.X -m asyncio pstree PID` (3.14+). For a tree's interpreter it
    runs in the process's own mount namespace and root (nsenter): pstree opens the files
    /proc/PID/maps names, which are paths there."""
    if interp.tree:
        return ["nsenter", "--target=%d" % pid, "--mount", "--root", "--wd=/", interp.inner,
                "-m", "asyncio", "pstree", str(pid)]
    return [interp.path, "-m", "asyncio", "pstree", str(pid)]


def memory_gap(summary, pattern):
    """Why a pattern's link cannot be found in this interpreter's memory, or None: the
    async tests expect a failure there (pytest.xfail), never a pass."""
    if (pattern == "as_completed" and tuple(summary["version"]) >= (3, 14) and
            not summary.get("as_completed_awaited_by")):
        return ("this 3.14's as_completed leaves no fut_awaited_by on the tasks it waits "
                "for (the workload saw none in _asyncio_awaited_by); asyncbpf reads 3.14+ "
                "links from there: they show as roots, as in CPython's own pstree")
    return None


def discover_interpreters():
    """Every supported interpreter: pyenv's 3.8-3.15 (a missing minor is a skipped
    entry), the distribution's /usr/bin/python3.N, then the Debian trees'."""
    found = _pyenv_versions()
    roots = pyenv_roots()
    out = []
    for minor in SUPPORTED_MINORS:
        vers = found.get((3, minor))
        if not vers:
            where = " or ".join(roots) if roots else "$PYENV_ROOT, `pyenv root`, ~/.pyenv"
            out.append(Interp("pyenv-3.%d" % minor,
                              missing="no pyenv CPython 3.%d under %s" % (minor, where)))
        for ver, py in vers or ():
            out.append(Interp("pyenv-" + ver, py))
    distro = []
    for py in sorted(glob.glob("/usr/bin/python3.*")):
        m = re.match(r"^python3\.(\d+)$", os.path.basename(py))
        if m and int(m.group(1)) in SUPPORTED_MINORS and os.access(py, os.X_OK):
            distro.append(Interp("debian-3." + m.group(1), py))
    out += distro or [Interp("debian-python3", missing="no /usr/bin/python3.N (3.8-3.15)")]
    # more interpreters by hand, e.g. one built from source
    for py in filter(None, os.environ.get("ASYNCBPF_EXTRA_PYTHONS", "").split(":")):
        out.append(Interp("extra-" + py.strip("/").replace("/", "-"), py)
                   if os.access(py, os.X_OK) else
                   Interp("extra-" + py, missing="ASYNCBPF_EXTRA_PYTHONS: %s is not executable"
                          % py))
    return out + discover_tree_interpreters()


def discover_unsupported():
    """pyenv's CPython 3.6 and 3.7, too old for asyncbpf."""
    found = _pyenv_versions()
    out = []
    for minor in (6, 7):
        vers = found.get((3, minor))
        if not vers:
            out.append(Interp("pyenv-3.%d" % minor, missing="no pyenv CPython 3.%d" % minor))
        for ver, py in vers or ():
            out.append(Interp("pyenv-" + ver, py))
    return out


def available(interps):
    return [i for i in interps if not i.missing]


INTERPRETERS = discover_interpreters()
INTERPRETERS_AVAILABLE = available(INTERPRETERS)
UNSUPPORTED = discover_unsupported()


def interp_params():
    """One pytest.param per interpreter, skipped with its reason when it is missing."""
    return [pytest.param(i, id=i.id, marks=[pytest.mark.skip(reason=i.missing)]
                         if i.missing else []) for i in INTERPRETERS]


class Workload:
    """Runs a workload under an interpreter (`python -u`), waits for READY, collects the
    JSON facts printed before it, and kills the process on exit. reap=True waits for the
    process in the background so that it does not linger as a zombie when it exits."""

    def __init__(self, python, script, *args, timeout=30, reap=False, stdin=False):
        self.argv = [python, "-u", os.path.join(WORKLOADS, script)] + [str(a) for a in args]
        self.timeout = timeout * TIMEOUT_SCALE
        self.reap = reap
        self.stdin = stdin  # a pipe for send(), else pytest's own stdin
        self.facts = []
        self.proc = None

    @property
    def pid(self):
        return self.proc.pid

    def fact(self, key):
        vals = self.all(key)
        assert vals, "workload %s printed no %r fact: %s" % (self.argv, key, self.facts)
        return vals[0]

    def all(self, key):
        return [f[key] for f in self.facts if key in f]

    def records(self, key):
        """The whole facts (dicts) that have key."""
        return [f for f in self.facts if key in f]

    def __enter__(self):
        self.start()
        try:
            self.wait_ready()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def start(self):
        """Starts the process without waiting for READY (see start_all)."""
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        self.proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, cwd=WORKLOADS, env=env,
                                     stdin=subprocess.PIPE if self.stdin else None)
        return self

    def send(self, line):
        """Writes one line to the workload's stdin (stdin=True)."""
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def wait_ready(self):
        self._wait_ready()
        if self.reap:
            threading.Thread(target=self.proc.wait, daemon=True).start()
        return self

    def _wait_ready(self):
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        buf = b""
        deadline = time.monotonic() + self.timeout
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("workload %s: no READY within %ss"
                                         % (self.argv, self.timeout))
                if not sel.select(left):
                    continue
                chunk = os.read(self.proc.stdout.fileno(), 65536)
                if not chunk:
                    err = self.proc.stderr.read().decode(errors="replace")
                    raise AssertionError("workload %s exited before READY (rc %s): %s"
                                         % (self.argv, self.proc.wait(), err[-2000:]))
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    line = line.decode().strip()
                    if line == "READY":
                        return
                    if line.startswith("{"):
                        self.facts.append(json.loads(line))
        finally:
            sel.close()

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if f:
                f.close()
        return False


def start_all(stack, workloads):
    """Starts every workload at once, then waits for each one's READY; stack (an
    ExitStack) kills them all on exit."""
    for w in workloads:
        w.start()
        stack.callback(w.__exit__, None, None, None)
    for w in workloads:
        w.wait_ready()
    return workloads


def start_everywhere(stack, script, timeout=60):
    """script started under every supported interpreter installed (start_all): the
    interpreters and their workloads; a skip when there is none."""
    interps = INTERPRETERS_AVAILABLE
    if not interps:
        pytest.skip("no supported interpreter installed")
    return interps, start_all(stack, [Workload(i.path, script, timeout=timeout)
                                      for i in interps])


class Proc:
    """A non-Python helper process (sleep, a shell loop, a C fixture), killed on exit."""

    def __init__(self, argv):
        self.argv = argv
        self.proc = None

    @property
    def pid(self):
        return self.proc.pid

    def __enter__(self):
        self.proc = subprocess.Popen(self.argv, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        # Popen returns once the exec succeeded (its error pipe closes on exec): /proc
        # shows the new image, not a fork of pytest's Python. Checked, not assumed.
        exe = os.path.realpath(shutil.which(self.argv[0]) or self.argv[0])
        try:
            wait_for(lambda: self.proc.poll() is not None or proc_exe(self.pid) == exe, 10,
                     "pid %d to show the image %s in /proc" % (self.pid, exe))
        except BaseException:
            self.__exit__()
            raise
        assert self.proc.poll() is None, "%s exited early (rc %s)" % (self.argv,
                                                                       self.proc.returncode)
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        return False


PROC_RE = re.compile(r"^(.*) \(pid (\d+)(?:, container (.*) pid (\d+))?\)$")
CONTAINER_FRAME_RE = re.compile(r"^\[container (.*)\]$")
THREAD_RE = re.compile(r"^(.*) \(tid (\d+)\)$")
FRAME_RE = re.compile(r"^(.+?) \((.*):(-?\d+)\)$")
TRUNCATED = "[truncated]"
# Where [truncated] would be: a read of the target failed, the frames after it are partial.
INCOMPLETE = "[incomplete]"
UNKNOWN = "[unknown]"
NO_TSTATE = "[no Python thread state]"
# Not in the written contract: a thread state with no frame (a thread starting or
# finishing). Accepted, like NO_TSTATE, as a stack's only Python-level frame.
NO_FRAMES = "[no Python frames]"


TASK_RE = re.compile(r"^<task (.*)>$")


class TaskFrame(str):
    """A `<task NAME>` frame of a stacked stack."""

    name = property(lambda s: TASK_RE.match(s).group(1))


# In place of the thread frame: a worker thread's sample drawn under the task that awaits
# the work it runs (anyio.to_thread.run_sync); the thread follows, as a THREAD_MARK_RE
# frame, after that task's frames.
THREAD_WORK = "[thread work]"
THREAD_MARK_RE = re.compile(r"^<thread (.*)>$")
# In place of the thread frame in wall mode: a suspended task's sample
SUSPENDED = "[suspended tasks]"


class ThreadMarker(str):
    """The `<thread NAME>` frame of a [thread work] sample: the worker thread, by its
    Python name; its own frames follow."""

    name = property(lambda s: THREAD_MARK_RE.match(s).group(1))


class NativeFrame(str):
    """A native frame (--native): "symbol" or "library+0xOFFSET"."""


NATIVE_ENDS = "[native stack ends]"
# executable memory of no file: a libffi closure's trampoline (ctypes callbacks)
ANON_CODE = "[anonymous code]"
# code in the vDSO (clock_gettime under time.perf_counter), which has no file to name it
VDSO_RE = re.compile(r"^\[vdso\]\+0x[0-9a-f]+$")
# the frames above made the task below (its creator's frames where it created it)
CREATED_BY = "[created by]"
# wall mode: a suspended task's last frame, when it awaits a pool's job not started
QUEUED = "[queued in thread pool]"
# a creation site's frames not kept
MORE_FRAMES_RE = re.compile(r"^\[\d+ more frames\]$")


class Frame(tuple):
    """(qualname, filename, line) of a Python frame."""

    qualname = property(lambda s: s[0])
    filename = property(lambda s: s[1])
    line = property(lambda s: s[2])


class Sample:
    """One line of collapsed output: frames root first and a count."""

    def __init__(self, raw):
        self.raw = raw
        stack, sep, count = raw.rpartition(" ")
        assert sep and count.isdigit() and int(count) > 0, "bad count in line: %r" % raw
        self.count = int(count)
        parts = stack.split(";")
        m = CONTAINER_FRAME_RE.match(parts[0])
        self.root = m.group(1) if m else None  # --container-frame's label
        if m:
            parts = parts[1:]
        assert len(parts) >= 2, "no process and thread frames in line: %r" % raw
        m = PROC_RE.match(parts[0])
        assert m, "bad process frame %r in line: %.300r" % (parts[0], raw)
        self.comm, self.pid = m.group(1), int(m.group(2))
        # a process in a container: its label and its pid in there
        self.container = m.group(3)
        self.ns_pid = int(m.group(4)) if m.group(4) else None
        # a [thread work] sample names its thread in its <thread NAME> frame, not its tid
        self.thread_work = parts[1] == THREAD_WORK
        # wall mode: a suspended task's stacked stack, no thread
        self.suspended = parts[1] == SUSPENDED
        if self.thread_work or self.suspended:
            self.tname, self.tid = None, None
        else:
            m = THREAD_RE.match(parts[1])
            assert m, "bad thread frame %r in line: %.300r" % (parts[1], raw)
            self.tname, self.tid = m.group(1), int(m.group(2))
        rest = parts[2:]
        self.truncated = bool(rest) and rest[0] == TRUNCATED
        if self.truncated:
            rest = rest[1:]
        self.incomplete = bool(rest) and rest[0] == INCOMPLETE
        if self.incomplete:
            rest = rest[1:]
        self.no_tstate = bool(rest) and rest[-1] == NO_TSTATE
        self.no_frames = bool(rest) and rest[-1] == NO_FRAMES
        if self.no_tstate or self.no_frames:
            rest = rest[:-1]
        self.frames = []  # Frame, or a special string such as [unknown]
        for p in rest:
            m = FRAME_RE.match(p)
            if m:
                self.frames.append(Frame((m.group(1), m.group(2), int(m.group(3)))))
            elif TASK_RE.match(p):
                self.frames.append(TaskFrame(p))
            elif THREAD_MARK_RE.match(p):
                self.frames.append(ThreadMarker(p))
            elif p and (not p.startswith("[") or VDSO_RE.match(p)):
                self.frames.append(NativeFrame(p))
            else:
                # "[unknown native 0x...]" too: the suite runs no code outside ELF files
                # but [anonymous code], so a pc in no module is the unwinder's fault (a
                # library it missed)
                assert p in (UNKNOWN, NATIVE_ENDS, NO_TSTATE, ANON_CODE, CREATED_BY,
                             QUEUED) or MORE_FRAMES_RE.match(p), (
                    "bad frame %r in line: %.300r" % (p, raw))
                self.frames.append(p)
        marks = [f for f in self.frames if isinstance(f, ThreadMarker)]
        assert len(marks) == (1 if self.thread_work else 0), (
            "%s needs one <thread NAME> frame, else none: %.300r" % (THREAD_WORK, raw))
        if marks:
            self.tname = marks[0].name

    @property
    def leaf(self):
        return self.frames[-1] if self.frames else None

    def qualnames(self):
        return [f.qualname if isinstance(f, Frame) else f for f in self.frames]

    def tasks(self):
        """Names of the `<task NAME>` frames, root first."""
        return [f.name for f in self.frames if isinstance(f, TaskFrame)]

    def thread_mark(self):
        """The index in frames of the `<thread NAME>` frame of a [thread work] sample, or
        None."""
        return next((k for k, f in enumerate(self.frames) if isinstance(f, ThreadMarker)),
                    None)

    def short(self, width=700):
        if len(self.raw) <= width:
            return self.raw
        return self.raw[: width // 2] + " ... " + self.raw[-width // 2:]


def total(samples):
    return sum(s.count for s in samples)


def show(samples, n=5, header="stacks"):
    """Heaviest n samples for an assertion message."""
    top = sorted(samples, key=lambda s: -s.count)[:n]
    lines = ["  %s" % s.short() for s in top]
    return "\n%s (%d lines, %d samples; heaviest %d):\n%s" % (
        header, len(samples), total(samples), len(top), "\n".join(lines))


LOST = "[lost samples]"


class Recording:
    def __init__(self, argv, rc, out, err, elapsed):
        self.argv, self.rc, self.out, self.err, self.elapsed = argv, rc, out, err, elapsed
        # "\n" only: a frame may hold characters splitlines() also breaks at
        lines = [l for l in out.split("\n") if l.strip()]
        # samples taken but not recorded: one last line "[lost samples] N", when any
        lost = [l for l in lines if l.startswith(LOST + " ")]
        assert len(lost) <= 1 and (not lost or lines[-1] == lost[0]), (
            "[lost samples] must be one last line: %r" % lost)
        self.lost = int(lost[0].split()[-1]) if lost else 0
        self.samples = [Sample(l) for l in lines if not l.startswith(LOST + " ")]

    def err_lines(self):
        return [l for l in self.err.splitlines() if l.strip()]

    def of_pid(self, pid):
        return [s for s in self.samples if s.pid == pid]

    def describe(self):
        return "\n$ %s\nexit %s after %.1fs; stderr:\n%s%s" % (
            " ".join(self.argv), self.rc, self.elapsed, self.err.rstrip() or "  (empty)",
            show(self.samples))


def record(binary, *args, output=None, timeout=RECORD_TIMEOUT, prefix=()):
    """Runs asyncbpf-record with args; output=PATH adds -o PATH and reads it back."""
    t = run_tool(binary, *args, *(["-o", output] if output else []), timeout=timeout,
                 prefix=prefix)
    out = t.out
    if output and os.path.exists(output):
        assert not out.strip(), "-o given but stdout has output: %.300r" % out
        with open(output, errors="replace") as f:
            out = f.read()
    return Recording(t.argv, t.rc, out, t.err, t.elapsed)


# CPU time a target runs under the sampler in record_sampled(): about 30 samples at 99 Hz
SAMPLED_CPU = 0.3


def record_sampled(binary, *args, pids, cpu=SAMPLED_CPU, min_seconds=0, output=None,
                   timeout=RECORD_TIMEOUT, prefix=(), env=None, ready=None):
    """record() for tests that need samples of pids (running targets), where a -d would
    have to guess how long loading takes and how much CPU a loaded machine leaves them:
    asyncbpf-record runs until it samples (and ready(rec), if given, has returned) and
    each of pids has run `cpu` seconds of CPU since (and at least min_seconds), then gets
    SIGINT (which ends a recording as -d does)."""
    argv = list(prefix) + [binary] + [str(a) for a in args] + (["-o", output] if output else [])
    t0 = time.monotonic()
    rec = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        wait_sampling(rec, timeout)
        if ready:
            ready(rec)
        sampling = time.monotonic()
        wait_cpu(pids, cpu, timeout, "CPU time while sampled")
        time.sleep(max(0, min_seconds - (time.monotonic() - sampling)))
        rec.send_signal(signal.SIGINT)
        out, err = rec.communicate(timeout=timeout)
    finally:
        if rec.poll() is None:
            rec.kill()
            rec.wait()
    out, err = out.decode("utf-8", errors="replace"), err.decode("utf-8", errors="replace")
    if output and os.path.exists(output):
        assert not out.strip(), "-o given but stdout has output: %.300r" % out
        with open(output, errors="replace") as f:
            out = f.read()
    return Recording(argv, rec.returncode, out, err, time.monotonic() - t0)


def record_checked(binary, *args, **kw):
    """record() (record_sampled() given pids=) that must exit 0."""
    r = record_sampled(binary, *args, **kw) if "pids" in kw else record(binary, *args, **kw)
    assert r.rc == 0, "asyncbpf-record failed" + r.describe()
    return r


def marker_line(path, marker):
    """The line number of the only line of path that contains marker."""
    with open(path) as f:
        hits = [i + 1 for i, l in enumerate(f) if marker in l]
    assert len(hits) == 1, "%s: %d lines contain %r" % (path, len(hits), marker)
    return hits[0]


def marker_lines(path, marker):
    with open(path) as f:
        return [i + 1 for i, l in enumerate(f) if marker in l]


def assert_one_error_line(r, rc, *words, prog=PROG):
    """r exited rc with exactly one stderr line, prefixed with prog, containing each of
    words (any case; a tuple of words means any one of them)."""
    lines = r.err_lines()
    assert r.rc == rc, "expected exit %d" % rc + r.describe()
    assert len(lines) == 1, "expected one stderr line" + r.describe()
    assert lines[0].startswith(prog), "stderr line not prefixed with %r" % prog + r.describe()
    for w in words:
        alts = w if isinstance(w, tuple) else (w,)
        assert any(a.lower() in lines[0].lower() for a in alts), (
            "stderr line lacks %s" % " or ".join(map(repr, alts)) + r.describe())


# -- asyncio: workload variants, asyncbpf-tasks and its pstree output -------------------------

class AsyncVariant:
    """An interpreter running async_patterns.py, with asyncio's own loop or uvloop."""

    def __init__(self, interp, uvloop=False, missing=None):
        self.interp = interp
        self.uvloop = uvloop
        self.id = interp.id + ("-uvloop" if uvloop else "")
        self.missing = missing or interp.missing

    def args(self):
        return ["--threads"] + (["--uvloop"] if self.uvloop else [])

    def __repr__(self):
        return self.id


def _uvloop_missing(interp):
    if interp.missing:
        return interp.missing
    p = subprocess.run([interp.path, "-c", "import uvloop"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=30 * TIMEOUT_SCALE)
    if p.returncode:
        return "%s cannot import uvloop (Debian's python3-uvloop; %s)" % (
            interp.id, "make trees" if interp.tree else "make deps")
    return None


# the interpreters Debian builds python3-uvloop for: bookworm's 3.11, sid's 3.14
UVLOOP_IDS = ("debian-3.11", "sid-3.14")


def discover_async_variants():
    """Every interpreter with asyncio's loop, and with uvloop those of UVLOOP_IDS."""
    out = [AsyncVariant(i) for i in INTERPRETERS]
    for id in UVLOOP_IDS:
        found = [i for i in INTERPRETERS if i.id == id or i.id.startswith(id + ".")]
        for i in found or [Interp(id, missing="no %s interpreter" % id)]:
            out.append(AsyncVariant(i, uvloop=True, missing=_uvloop_missing(i)))
    return out


ASYNC_VARIANTS = discover_async_variants()


class ToolRun:
    """The result of running a tool that prints text (not collapsed stacks)."""

    def __init__(self, argv, rc, out, err, elapsed):
        self.argv, self.rc, self.out, self.err, self.elapsed = argv, rc, out, err, elapsed

    def err_lines(self):
        return [l for l in self.err.splitlines() if l.strip()]

    def describe(self, width=6000):
        out = self.out if len(self.out) <= width else self.out[:width] + "\n  [...]"
        return "\n$ %s\nexit %s after %.1fs; stderr:\n%s\nstdout:\n%s" % (
            " ".join(self.argv), self.rc, self.elapsed, self.err.rstrip() or "  (empty)",
            out.rstrip() or "  (empty)")


def run_tool(binary, *args, timeout=RECORD_TIMEOUT, prefix=()):
    argv = list(prefix) + [binary] + [str(a) for a in args]
    timeout *= TIMEOUT_SCALE
    t0 = time.monotonic()
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise AssertionError("%s did not finish within %ss; stderr: %s"
                             % (argv, timeout, (e.stderr or b"").decode(errors="replace")))
    return ToolRun(argv, p.returncode, p.stdout.decode("utf-8", errors="replace"),
                   p.stderr.decode("utf-8", errors="replace"), time.monotonic() - t0)


PSTREE_RE = re.compile(r"^((?:    |│   )*)(└── |├── )(.*)$")


class TreeNode:
    """A line of `python -m asyncio pstree` output: a task `(T) NAME` or a coroutine
    frame `QUALNAME FILE:LINE` (or a bare QUALNAME, as pstree prints a frame with no
    file and line); or asyncbpf-tasks' worker thread `thread NAME (tid N)` (tid: None
    when not shown)."""

    def __init__(self, kind, name, file=None, line=None, raw="", tid=None):
        self.kind, self.name, self.file, self.line, self.raw = kind, name, file, line, raw
        self.tid = tid
        self.children = []
        self.parent = None

    def tasks_below(self):
        """The nearest task nodes under this one."""
        out = []
        for c in self.children:
            out += [c] if c.kind == "task" else c.tasks_below()
        return out

    def parent_task(self):
        p = self.parent
        while p is not None and p.kind != "task":
            p = p.parent
        return p

    def walk(self):
        """This node and those below it, depth first (iterative: trees run thousands deep)."""
        todo = [self]
        while todo:
            n = todo.pop()
            yield n
            todo.extend(reversed(n.children))

    def __repr__(self):
        return self.raw


def parse_pstree(text):
    """The root nodes of pstree-format text. Checks the drawing: depth from the prefix,
    `└── ` for a last child and `├── ` otherwise, and `    ` under a last child, `│   `
    under others."""
    roots, path = [], []
    for raw in text.splitlines():
        if not raw.strip():
            continue
        m = PSTREE_RE.match(raw)
        assert m, "not a pstree line: %r" % raw
        prefix, glyph, body = m.groups()
        depth = len(prefix) // 4
        assert depth <= len(path), "line deeper than its parent: %r" % raw
        if body.startswith("(T) "):
            node = TreeNode("task", body[4:], raw=raw)
        elif body.startswith("thread "):
            tm = re.match(r"^(.*?) ?\(tid (\d+)\)$", body[7:])
            node = (TreeNode("thread", tm.group(1), raw=raw, tid=int(tm.group(2))) if tm
                    else TreeNode("thread", body[7:], raw=raw))
        else:
            assert body.startswith(" ") and body[1:2] != " ", "bad node text: %r" % raw
            label = body[1:]
            func, sp, loc = label.rpartition(" ")
            fm = re.match(r"^(.*):(\d+)$", loc)
            if sp and fm:
                node = TreeNode("coro", func, fm.group(1), int(fm.group(2)), raw=raw)
            else:
                node = TreeNode("coro", label, raw=raw)
        node.glyph, node.prefix = glyph, prefix
        del path[depth:]
        if path:
            node.parent = path[-1]
            path[-1].children.append(node)
        else:
            roots.append(node)
        path.append(node)
    for r in roots:
        for n in r.walk():
            sibs = n.parent.children if n.parent else [n]
            last = n is sibs[-1] if n.parent else True
            assert n.glyph == ("└── " if last else "├── "), (
                "%r: a %s child must be drawn with %r" % (n.raw, "last" if last else "non-last",
                                                         "└── " if last else "├── "))
            for c in n.children:
                assert c.prefix == n.prefix + ("    " if last else "│   "), (
                    "%r: wrong indentation under %r" % (c.raw, n.raw))
    return roots
