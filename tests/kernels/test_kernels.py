"""make test-kernels: Debian's kernels of bullseye (5.10), bookworm (6.1), trixie (6.12)
and sid, each fetched and verified (fetch.py), booted under qemu (vm.py) with the host's
root shared read-only, running the smoke subset (guest_smoke.py) inside. A kernel that
cannot be fetched is skipped with the reason. ASYNCBPF_KERNELS=bullseye,sid picks some.

The guests run side by side, ASYNCBPF_VM_JOBS at a time (default 2): qemu runs both vCPUs
of a guest on one host thread (vm.py), so two guests take the two cores of the machine
make test is measured on, and the longest (sid) starts first."""
import concurrent.futures
import os
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fetch  # noqa: E402
import vm  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
SUITES = ["bullseye", "bookworm", "trixie", "sid"]
PICKED = [s for s in os.environ.get("ASYNCBPF_KERNELS", "").split(",") if s]
OUT = os.path.join(REPO, "build", "kernels")


def picked():
    return [s for s in SUITES if not PICKED or s in PICKED]


def run_guest(suite):
    """Fetches and boots suite's kernel: (release tree, fetch s, boot s, exit status) or
    the exception that stopped it."""
    t0 = time.monotonic()
    try:
        tree = fetch.fetch(suite)
    except fetch.Unavailable as e:
        return e
    t1 = time.monotonic()
    results = os.path.join(OUT, suite)
    subprocess.run(["rm", "-rf", results], check=True)
    os.makedirs(results)
    try:
        rc = vm.boot(tree, results, [os.path.join(HERE, "guest-smoke.sh")])
    except vm.VmError as e:
        return e
    return tree, t1 - t0, time.monotonic() - t1, rc


_guests = {}


def guest(suite):
    """run_guest(suite)'s answer; the first call starts every picked guest."""
    if not _guests:
        jobs = max(1, int(os.environ.get("ASYNCBPF_VM_JOBS", "2")))
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=jobs)
        os.makedirs(OUT, exist_ok=True)
        for s in sorted(picked(), key=lambda s: s != "sid"):
            _guests[s] = pool.submit(run_guest, s)
        pool.shutdown(wait=False)
    return _guests[suite].result()


def report(suite, line):
    with open(os.path.join(OUT, "summary.txt"), "a") as f:
        f.write("%s: %s\n" % (suite, line))


@pytest.mark.parametrize("suite", SUITES)
def test_kernel(suite):
    if PICKED and suite not in PICKED:
        pytest.skip("not in ASYNCBPF_KERNELS=%s" % ",".join(PICKED))
    if os.geteuid() != 0:
        pytest.skip("needs root: the guest runs the profiler as the host's root")
    got = guest(suite)
    if isinstance(got, fetch.Unavailable):
        report(suite, "skipped: %s" % got)
        pytest.skip("%s's kernel cannot be fetched: %s" % (suite, got))
    if isinstance(got, vm.VmError):
        pytest.fail("%s: %s" % (suite, got))
    tree, fetch_s, boot_s, rc = got
    results = os.path.join(OUT, suite)
    cases = []
    try:
        for tc in ET.parse(os.path.join(results, "junit.xml")).iter("testcase"):
            state = "passed"
            for k in ("failure", "error", "skipped"):
                el = tc.find(k)
                if el is not None:
                    state = {"failure": "FAILED", "error": "ERROR", "skipped": "skipped"}[k]
                    if el.get("type") == "pytest.xfail":
                        state = "xfailed (%s)" % el.get("message", "")
            cases.append((tc.get("name"), state))
    except (OSError, ET.ParseError):
        pass
    costs = []
    for name in ("flat-python3.11", "flat-python3.12"):
        try:
            with open(os.path.join(results, "stats-%s.txt" % name)) as f:
                text = f.read()
        except OSError:
            continue
        m = re.search(r"^walk time per python sample: (\d+) ns", text, re.M)
        w = re.search(r"^bpf walker: (.*)$", text, re.M)
        md = re.search(r"^median read time per sample: (\d+) ns", text, re.M)
        if m and w:
            costs.append("%s %s ns per sample (median %s), %s" % (
                name, m.group(1), md.group(1) if md else "?", w.group(1)))
    release = os.path.basename(tree)
    report(suite, "%s: fetch %.0f s, boot and smoke %.0f s; %s; %s" % (
        release, fetch_s, boot_s, ", ".join("%s %s" % c for c in cases) or "no results",
        "; ".join(costs)))
    try:
        with open(os.path.join(results, "pytest.txt")) as f:
            log = f.read()
    except OSError:
        log = "(no pytest output; console: %s/console.log)" % results
    if rc == 124:
        pytest.fail("%s: the guest did not finish in time\n%s" % (suite, log[-3000:]))
    assert rc == 0 and cases and all(s != "FAILED" and s != "ERROR" for _, s in cases), (
        "%s (%s): smoke subset failed (exit %s)\n%s" % (suite, release, rc, log[-6000:]))
