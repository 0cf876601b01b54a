"""make demo, shortened (5 s of load, at 499 Hz for enough samples on a busy machine):
each route's problem shows under that route's
chain of tasks, in the pprof file it writes and in the summary it prints."""
import os
import subprocess

import pytest

from helpers import REPO, Frame, Sample, TaskFrame, run_tool, show, total

DEMO = os.path.join(REPO, "tools", "demo.sh")
REPORT = os.path.join(REPO, "build", "asyncbpf-report")
PYTHON = "/usr/bin/python3"

# route task, the tasks below it, and what marks a sample of the route's problem: the
# last service frame and, below it, a frame of the problem's code
PROBLEMS = {
    "decompression spin": (["POST /ingest", "ingest-batch", "decode-block"],
                           "inflate", None),
    "synchronous logging": (["POST /checkout", "price-order", "price-lines"],
                            "price_lines", "/logging/__init__.py"),
    "NumPy one window at a time": (["GET /report", "build-report", "region-summary"],
                                   "moving_average", None),
}


def problem_samples(samples, leaf, below):
    """Samples in which the service's function leaf runs (itself, or, with below, code
    from that file that it called)."""
    out = []
    for s in samples:
        frames = [f for f in s.frames if isinstance(f, Frame)]
        mine = [i for i, f in enumerate(frames) if f.qualname == leaf
                and f.filename.endswith("/examples/demo/service.py")]
        if not mine:
            continue
        rest = frames[mine[-1] + 1:]
        if below is None or any(f.filename.endswith(below) for f in rest):
            out.append(s)
    return out


def task_chain_ok(s, chain, leaf):
    """The stack runs through the route's task, then exactly the chain's tasks, and the
    leaf is in the last task's frames."""
    tasks = s.tasks()
    if chain[0] not in tasks or tasks[tasks.index(chain[0]):] != chain:
        return False
    last = max(i for i, f in enumerate(s.frames)
               if isinstance(f, TaskFrame) and f.name == chain[-1])
    return any(isinstance(f, Frame) and f.qualname == leaf for f in s.frames[last + 1:])


@pytest.fixture(scope="module")
def demo(root_record_bin, tmp_path_factory):
    if not os.access(REPORT, os.X_OK):
        pytest.skip("build/asyncbpf-report not built (run make)")
    for mod, pkg in (("aiohttp", "python3-aiohttp"), ("numpy", "python3-numpy")):
        p = subprocess.run([PYTHON, "-c", "import " + mod], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        if p.returncode:
            pytest.skip("%s cannot import %s (Debian's %s; make deps)" % (PYTHON, mod, pkg))
    out = tmp_path_factory.mktemp("demo")
    env = dict(os.environ, DEMO_SECONDS="5", DEMO_FREQ="499", DEMO_OUT=str(out))
    p = subprocess.run([DEMO], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                       timeout=300, universal_newlines=True)
    assert p.returncode == 0, "demo failed (exit %d):\n%s\n%s" % (p.returncode, p.stdout,
                                                                  p.stderr)
    conv = run_tool(REPORT, "-o", str(out / "demo.collapsed"), str(out / "demo.pb.gz"))
    assert conv.rc == 0, conv.describe()
    with open(str(out / "demo.collapsed")) as f:
        samples = [Sample(l) for l in f.read().splitlines() if l.strip()]
    return p.stdout, samples, out


def test_demo_writes_pprof_and_html(demo):
    _, samples, out = demo
    assert samples, "no samples in demo.pb.gz"
    with open(str(out / "demo.html")) as f:
        html = f.read()
    assert "<html" in html.lower() and "POST /ingest" in html, "demo.html lacks the stacks"


@pytest.mark.parametrize("problem", sorted(PROBLEMS))
def test_demo_problem_under_its_route(demo, problem):
    stdout, samples, _ = demo
    chain, leaf, below = PROBLEMS[problem]
    mine = problem_samples(samples, leaf, below)
    assert mine, "no sample of %s (%s)" % (problem, leaf) + show(samples, 10)
    good = [s for s in mine if task_chain_ok(s, chain, leaf)]
    other_routes = [s for s in mine
                    if any(c[0] in s.tasks() for c, _, _ in PROBLEMS.values() if c != chain)]
    assert not other_routes, "%s under another route" % leaf + show(other_routes)
    assert total(good) >= 0.8 * total(mine), (
        "%d of %d samples of %s are not under %s" % (total(mine) - total(good), total(mine),
                                                    leaf, " -> ".join(chain))
        + show([s for s in mine if s not in good], header="offending"))
    # the printed summary shows it under the route too
    section = stdout.split("\n%s:" % chain[0], 1)
    assert len(section) == 2, "no %s section in the summary:\n%s" % (chain[0], stdout)
    body = section[1].split("\n\n", 1)[0]
    want = " > ".join("<%s>" % t for t in chain[1:])
    assert leaf in body and all("<%s>" % t in body for t in chain[1:]), (
        "the summary does not show %s under %s (%s):\n%s" % (leaf, chain[0], want, stdout))


def test_demo_native_below_numpy(demo):
    """The demo records with --native: below GET /report's moving_average, what NumPy runs
    in C (its extension's frames, libc's) is there, and the summary names it."""
    from helpers import NativeFrame
    stdout, samples, _ = demo
    mine = problem_samples(samples, "moving_average", None)
    native = [s for s in mine if any(isinstance(f, NativeFrame) and "_multiarray_umath" in f
                                     for f in s.frames)]
    assert total(native) >= 0.5 * total(mine), (
        "%d of %d moving_average samples show NumPy's C frames" % (total(native), total(mine))
        + show(mine))
    section = stdout.split("\nGET /report:", 1)[1].split("\n\n", 1)[0]
    assert "  running: " in section, stdout
