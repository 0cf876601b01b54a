"""Soak (opt-in: ASYNCBPF_SOAK=1, or make soak): asyncbpf-record -a at 999 Hz, then
asyncbpf-agent -a at 999 Hz shipping every 5 s, each for ASYNCBPF_SOAK_SECONDS (default
600) while long-lived workloads churn stacks and tasks and short-lived asyncio processes
come and go (one started every 2 s, each living 6 s). The profiler's RSS, read every
30 s, must stay within 10% of its value after a 60 s warm-up (under ASan, where RSS
means nothing, LeakSanitizer's exit status stands instead). Each curve is printed and
written to build/soak-rss-record.txt and build/soak-rss-agent.txt."""
import contextlib
import os
import signal
import subprocess
import tempfile
import time

import pytest

from helpers import ASAN, INTERPRETERS_AVAILABLE, REPO, Workload, start_all

SECONDS = float(os.environ.get("ASYNCBPF_SOAK_SECONDS") or 600)
PERIOD = 30
WARMUP = 60
SPAWN_EVERY, LIFETIME = 2, 6


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS for pid %d" % pid)


SOAK = pytest.mark.skipif(not os.environ.get("ASYNCBPF_SOAK"),
                          reason="soak runs only with ASYNCBPF_SOAK=1 (make soak): 10 minutes")


def soak(argv, name):
    """Runs argv (a profiler that ends by itself after SECONDS, or at SIGTERM) while the
    workloads churn; returns (its exit status, stderr, RSS curve text). The curve is
    also written to build/soak-rss-NAME.txt."""
    if not INTERPRETERS_AVAILABLE:
        pytest.skip("no supported interpreter installed")
    interps = sorted(INTERPRETERS_AVAILABLE, key=lambda i: i.version)
    tmp = tempfile.mkdtemp(prefix="asyncbpf-soak-")
    curve, spawned = [], 0
    with contextlib.ExitStack() as stack:
        start_all(stack, [Workload(i.path, "churn.py", mode, os.path.join(tmp, i.id + mode))
                          for i in (interps[0], interps[-1]) for mode in ("recurse", "tasks")])
        rec = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        stack.callback(lambda: rec.poll() is None and rec.kill())
        t0 = time.monotonic()
        short = []  # (deadline, workload)
        next_rss, next_spawn = t0 + PERIOD, t0
        while rec.poll() is None:
            now = time.monotonic()
            if now - t0 > SECONDS:
                break  # then it writes the output: more memory, for a moment
            if now >= next_spawn:
                i = interps[spawned % len(interps)]
                w = Workload(i.path, "churn.py", "tasks", os.path.join(tmp, "short"),
                             reap=True).start()
                short.append((now + LIFETIME, w))
                spawned += 1
                next_spawn += SPAWN_EVERY
            for d, w in [x for x in short if x[0] <= now]:
                w.__exit__(None, None, None)
                short.remove((d, w))
            if now >= next_rss:
                with contextlib.suppress(OSError, AssertionError):
                    curve.append((round(now - t0), rss_kib(rec.pid)))
                next_rss += PERIOD
            time.sleep(0.2)
        for _, w in short:
            w.__exit__(None, None, None)
        if rec.poll() is None:
            rec.send_signal(signal.SIGTERM)
        err = rec.communicate(timeout=300)[1].decode(errors="replace")
    text = "\n".join("%4d s  %7d KiB" % p for p in curve)
    with open(os.path.join(REPO, "build", "soak-rss-%s.txt" % name), "w") as f:
        f.write("# %s, %d s, %d short-lived processes\n%s\n"
                % (" ".join(os.path.basename(a) for a in argv), SECONDS, spawned, text))
    print("\nRSS of %s every %d s (%d short-lived processes):\n%s\n%s"
          % (argv[0], PERIOD, spawned, text, err[-3000:]))
    assert rec.returncode == 0, "%s failed (exit %s): %s" % (name, rec.returncode, err)
    return curve, text, err


def assert_flat(curve, text):
    if ASAN:
        return  # RSS means nothing under ASan; LeakSanitizer checked the exit
    base = [r for t, r in curve if t >= WARMUP]
    assert len(base) >= 2, "too few RSS readings: %s" % curve
    assert max(base) <= base[0] * 1.10, "RSS grew more than 10%% after warm-up:\n%s" % text


@SOAK
def test_soak_rss_flat(root_record_bin):
    tmp = tempfile.mkdtemp(prefix="asyncbpf-soak-")
    curve, text, _ = soak([root_record_bin, "-a", "-F", "999", "-d", str(SECONDS), "--stats",
                        "-o", os.path.join(tmp, "out")], "record")
    assert_flat(curve, text)


@SOAK
def test_agent_soak_rss_flat(root_record_bin):
    """asyncbpf-agent -a at 999 Hz, 5 s intervals, to a loopback Pyroscope and a
    directory of 20 files: its RSS stays flat, every profile made was delivered."""
    from pyroscope_rx import Receiver
    from test_agent import AGENT, num, stats

    tmp = tempfile.mkdtemp(prefix="asyncbpf-soak-agent-")
    with Receiver() as rx:
        curve, text, err = soak([AGENT, "-a", "-F", "999", "--interval", "5", "--pyroscope",
                                 rx.url, "--output-dir", tmp, "--keep", "20",
                                 "--stats-interval", "60"], "agent")
        problems = rx.problems()
    assert not problems, problems[:5]
    final = stats(err)[-1]
    assert num(final, "pyroscope.dropped") == 0 and num(final, "files.dropped") == 0, final
    assert num(final, "pyroscope.sent") == num(final, "pyroscope.queued") > 0, final
    assert len(os.listdir(tmp)) == 20
    assert_flat(curve, text)
