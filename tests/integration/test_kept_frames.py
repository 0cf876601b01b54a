"""A suspended awaiter's frames are kept across samples while it awaits the same pending
task (bpf/pywalk.h, pw_kept): kept_frames.py's awaiters await a new task every few
milliseconds, mostly at the address of the one they awaited before (and with its
coroutine's), through a different function each time. Every sample must show the awaiting
functions of its own round (by the spinning function's name), never a round before's,
and the keeping must have been used (else this tests nothing). One recording of every
interpreter with the default options, and one with --no-origins: there no creation is
watched, a new task at a freed one's address keeps the freed one's numbers until a
snapshot, so frames must not be kept (they were, and showed a round before's awaiters
on every interpreter); its chains may stop short (a task not yet seen by a snapshot),
but never show another round's frames."""
import contextlib
import re

import pytest

from helpers import Frame, interp_params, record_checked, show, start_everywhere

FREQ = 499
RECORD_SECONDS = 6
SPIN_RE = re.compile(r"^spin_(\d)_(\d)$")
# --no-origins: at least this many samples must show their awaiters' frames
MIN_SHOWN = 10


MODES = {"default": [], "no-origins": ["--no-origins"]}


@pytest.fixture(scope="module", params=list(MODES))
def recorded(root_record_bin, request):
    with contextlib.ExitStack() as stack:
        interps, loads = start_everywhere(stack, "kept_frames.py")
        r = record_checked(root_record_bin, "-p", ",".join(str(w.pid) for w in loads),
                           "-F", FREQ, "--stats", *MODES[request.param],
                           pids=[w.pid for w in loads], min_seconds=RECORD_SECONDS)
        yield r, {i.id: w for i, w in zip(interps, loads)}, request.param



def test_frames_kept(recorded):
    """The recording took awaiters' frames from the kept ones, and walked and kept them
    again as the awaited tasks changed; with --no-origins it kept none."""
    r, _, mode = recorded
    line = next((l for l in r.err_lines() if l.startswith("awaiters' frames kept:")), None)
    assert line, "no awaiters' frames line in --stats" + r.describe()
    hits, fills = (int(n) for n in re.findall(r"(\d+) walk", line))
    if mode == "no-origins":
        assert hits == 0 and fills == 0, line + r.describe()
    else:
        assert hits > 0 and fills > 0, line + r.describe()


@pytest.mark.parametrize("python", interp_params())
def test_awaiters_of_their_round(recorded, python):
    r, loads, mode = recorded
    w = loads[python.id]
    checked, wrong, whole = [], [], []
    for s in r.of_pid(w.pid):
        spins = [f for f in s.frames if isinstance(f, Frame) and SPIN_RE.match(f.qualname)]
        if not spins:
            continue
        outer, inner = SPIN_RE.match(spins[-1].qualname).groups()
        names = s.qualnames()
        want = ["via_" + outer, "await_" + inner]
        other = ["via_%d" % k for k in range(3) if str(k) != outer] + [
            "await_%d" % k for k in range(3) if str(k) != inner]
        checked.append(s)
        mixed = any(f in names for f in other)
        if not mixed and s.tasks() == ["outer", "parent", "child"] and all(
                f in names for f in want):
            whole.append(s)
        elif mixed or mode == "default":
            wrong.append(s)
    n = sum(s.count for s in checked)
    assert n >= 50, "too few samples in the spinning children" + show(r.of_pid(w.pid), n=8)
    assert not wrong, "samples under another round's awaiters%s" % (
        "" if mode == "no-origins" else ", or without them") + show(
            wrong, n=8, header="offending stacks")
    # --no-origins: chains cut short are allowed, but enough must show awaiters' frames
    # for the check of those frames to test something
    assert sum(s.count for s in whole) >= MIN_SHOWN, (
        "%d of %d samples show their whole chain" % (sum(s.count for s in whole), n) +
        show(checked, n=8))
    # an awaiter awaiting a task at the address of the one it awaited before: else a
    # check by address alone would pass too (3.13's allocator gives no such address)
    reused = w.fact("reused")
    if reused < 0.1:
        pytest.skip("right, but the address check is not exercised: %.2f of the awaited "
                    "tasks took the address of their awaiter's last" % reused)
