"""Thread frames carry Python's own name of each thread (threading's Thread.name), as the
thread itself read it (tests/workloads/thread_names.py): threading.Thread names of any
kind and length, a Thread subclass naming itself, ThreadPoolExecutor's, asyncio's default
executor's (run_in_executor, to_thread), AnyIO's worker thread where anyio is installed;
a thread threading did not start shows its OS name. Every sample of each of them, on
every interpreter (one recording of all at once); and a renamed thread's samples carry
its new name once a second has passed."""
import contextlib
import signal
import subprocess
import time

import pytest

from helpers import (INTERPRETERS, INTERPRETERS_AVAILABLE, RECORD_TIMEOUT, TIMEOUT_SCALE,
                     Recording, Workload, interp_params, show, start_all, total, wait_cpu,
                     wait_sampling)

FREQ = 199
# CPU time each burning thread runs while sampled: about 60 samples at FREQ
WORKER_CPU = 0.3
# the renamed thread after the rename: its pause (no CPU), EARLY seconds of CPU at most,
# then at least this much more in spin_renamed_late
LATE_CPU = 0.5
EARLY = 1.25  # thread_names.py's EARLY
MIN_SAMPLES = 20
NAME_CHARS = 255  # longer names are cut to 254 characters and "…"
# threads whose work a task awaits: drawn under the task, found by the function they run
LINKED = {"to_thread": "spin_to_thread", "anyio": "spin_anyio"}
KINDS = ["plain", "unicode", "long", "semicolon", "subclass", "pool-prefixed", "pool-default",
         "run_in_executor", "to_thread", "anyio", "raw"]


def shown(name, sep=";"):
    """A Python name as a thread frame shows it: cut, and in collapsed output with the
    separator ';' replaced."""
    if len(name) > NAME_CHARS:
        name = name[:NAME_CHARS - 1] + "…"
    return name.replace(sep, "_") if sep else name


def expected(t):
    """The name a thread's frames should carry: Python's, else (a thread not started by
    threading) its OS name."""
    return t["comm"] if t["kind"] == "raw" else t["name"]


def record_rename(binary, loads, *args):
    """Records loads (thread_names.py) until each of their threads has burnt WORKER_CPU,
    has each rename its thread, and records until those threads have burnt LATE_CPU past
    their early phase. Each load's "renamed" fact goes to its .renamed."""
    threads = [(w.pid, t["tid"]) for w in loads for t in w.all("thread")]
    renamed = [(w.pid, t["tid"]) for w in loads for t in w.all("thread")
               if t["kind"] == "renamed"]
    argv = [binary, "-p", ",".join(str(w.pid) for w in loads), "-F", str(FREQ),
            "--stats"] + list(args)
    timeout = RECORD_TIMEOUT * TIMEOUT_SCALE
    t0 = time.monotonic()
    rec = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_sampling(rec, timeout)
        wait_cpu(threads, WORKER_CPU, timeout, "CPU time sampled")
        for w in loads:
            w.send("rename")
        wait_cpu(renamed, EARLY + LATE_CPU, timeout, "CPU time after the rename")
        for w in loads:
            w.renamed = w.proc.stdout.readline().decode()  # printed before its early phase
        rec.send_signal(signal.SIGINT)
        out, err = rec.communicate(timeout=timeout)
    finally:
        if rec.poll() is None:
            rec.kill()
            rec.wait()
    out, err = out.decode("utf-8", errors="replace"), err.decode("utf-8", errors="replace")
    return Recording(argv, rec.returncode, out, err, time.monotonic() - t0)



@pytest.fixture(scope="module")
def recorded(root_record_bin):
    """One recording of thread_names.py on every interpreter at once."""
    interps = [i for i in INTERPRETERS if not i.missing]
    if not interps:
        pytest.skip("no supported interpreter installed")
    with contextlib.ExitStack() as stack:
        loads = start_all(stack, [Workload(i.path, "thread_names.py", timeout=60, stdin=True)
                                  for i in interps])
        r = record_rename(root_record_bin, loads)
    assert r.rc == 0, "asyncbpf-record failed" + r.describe()
    stats = next((l for l in r.err_lines() if l.startswith("thread names: ")), None)
    return r, stats, {i.id: w for i, w in zip(interps, loads)}


class Run:
    pass


@pytest.fixture
def run(recorded, python):
    r, stats, loads = recorded
    run = Run()
    run.w, run.r, run.interp, run.stats = loads[python.id], r, python, stats
    run.threads = {t["kind"]: t for t in run.w.all("thread")}
    run.mine = r.of_pid(run.w.pid)
    return run


def of_tid(run, tid):
    return [s for s in run.mine if s.tid == tid]


@pytest.mark.parametrize("python", interp_params())
@pytest.mark.parametrize("kind", KINDS)
def test_thread_named(run, kind):
    """Every sample of the thread carries its name (100%), and there are enough of them."""
    if kind not in run.threads:
        if kind == "anyio":
            pytest.skip("%s: %s" % (run.interp.id, run.w.fact("anyio")))
        if kind == "to_thread" and run.interp.version < (3, 9):
            pytest.skip("asyncio.to_thread is new in 3.9")
        pytest.fail("thread_names.py reported no %s thread: %s" % (kind, run.w.all("thread")))
    t = run.threads[kind]
    mine = of_tid(run, t["tid"])
    if kind in LINKED:
        # its work is drawn under the task awaiting it, where the worker is named by a
        # <thread NAME> frame and no tid: its samples are those of the function it runs
        mine = [s for s in run.mine if LINKED[kind] in s.qualnames()]
    assert total(mine) >= MIN_SAMPLES, "only %d samples of the %s thread (tid %d)" % (
        total(mine), kind, t["tid"]) + run.r.describe()
    want = shown(expected(t))
    bad = [s for s in mine if s.tname != want]
    assert not bad, ("%d of %d samples of the %s thread (tid %d) are not named %r (Python: "
                     "%r, OS: %r); %s" % (total(bad), total(mine), kind, t["tid"], want,
                                          t["name"], t["comm"], run.stats)
                     + show(bad, header="offending stacks"))


@pytest.mark.parametrize("python", interp_params())
def test_names_are_pythons(run):
    """Guards the workload: each thread's Python name differs from its OS name, so that
    the names above cannot have come from the OS (3.14+ gives threading's threads its
    name cut to 15 bytes as their OS name)."""
    same = [t for k, t in run.threads.items()
            if k not in ("raw", "run_in_executor", "to_thread") and t["name"] == t["comm"]]
    assert not same, "Python names that are OS names too: %s" % same
    raw = run.threads["raw"]
    assert raw["comm"] == "raw-os-named" and raw["name"].startswith("Dummy-"), raw


@pytest.mark.parametrize("python", interp_params())
def test_renamed_thread(run):
    """Samples burnt before the rename carry the old name, those burnt EARLY seconds after
    it the new one (names are read again once a second); each sample carries one of the
    two."""
    t = run.threads["renamed"]
    new = run.w.renamed
    mine = of_tid(run, t["tid"])
    phases = {p: [s for s in mine if p in s.qualnames()]
              for p in ("spin_old", "spin_renamed_early", "spin_renamed_late")}
    old_name, new_name = t["name"], "after-rename-worker-thread"
    assert new_name in new, "thread_names.py did not report the rename: %r" % new
    msg = ["%s: %d samples %s" % (p, total(v), sorted({s.tname for s in v}))
           for p, v in phases.items()]
    assert total(phases["spin_old"]) >= MIN_SAMPLES, msg
    assert total(phases["spin_renamed_late"]) >= MIN_SAMPLES, msg
    bad = ([s for s in phases["spin_old"] if s.tname != old_name] +
           [s for s in phases["spin_renamed_late"] if s.tname != new_name] +
           [s for s in mine if s.tname not in (old_name, new_name)])
    assert not bad, "%s; %s" % (msg, run.stats) + show(bad, header="offending stacks")


def test_stats_line(recorded):
    """--stats says how many samples Python named and how many fell back on a failed read."""
    r, stats, loads = recorded
    assert stats, "no 'thread names:' line in --stats" + r.describe()
    named = int(stats.split()[2])
    workers = sum(total(s for s in r.of_pid(w.pid) if s.tid == t["tid"])
                  for w in loads.values() for t in w.all("thread") if t["kind"] != "raw")
    assert named >= workers, "%s, but %d samples of the named threads" % (stats, workers)


def test_pprof_thread_label(root_record_bin, tmp_path):
    """The pprof output's thread label is each thread's Python name too (uncut by ';'),
    read by go tool pprof; on one interpreter (the newest)."""
    from test_outputs import go_pprof, need_go, parse_traces

    need_go()
    if not INTERPRETERS_AVAILABLE:
        pytest.skip("no Python interpreter available (see the skipped interpreter tests)")
    interp = max(INTERPRETERS_AVAILABLE, key=lambda i: i.version)
    pb = str(tmp_path / "names.pb.gz")
    with Workload(interp.path, "thread_names.py", timeout=60, stdin=True) as w:
        r = record_rename(root_record_bin, [w], "-o", pb)
    assert r.rc == 0, "asyncbpf-record failed" + r.describe()
    by_tid = {t["tid"]: t for t in w.all("thread") if t["kind"] != "renamed"}
    linked = {t["kind"]: t for t in w.all("thread") if t["kind"] in LINKED}
    seen, bad = set(), []
    traces = parse_traces(go_pprof(tmp_path, "-sample_index=samples", "-traces", pb))
    for count, labels, names in traces:
        # a task's work in a worker thread: the worker's name, no tid
        kind = [k for k, fn in LINKED.items() if k in linked and fn in names]
        t = linked[kind[0]] if kind and "tid" not in labels else by_tid.get(
            int(labels.get("tid", 0)))
        if t:
            seen.add(t["tid"])
            if labels.get("thread") != shown(expected(t), sep=None):
                bad.append((labels, names[:2]))
    assert not bad, "pprof thread labels differ from Python's names: %s" % bad[:5]
    missing = [t for tid, t in by_tid.items() if tid not in seen]
    assert not missing, "no pprof sample of threads %s" % missing
