"""A task that outlives the task that awaited it (a cancelled await of a shield): its samples
keep the awaiter, named, in front of it, as a creator is kept in front of a
fire-and-forget child. The awaiter is known only from a snapshot of memory, so it is the
snapshot's link that must name it once it is gone. One recording of every interpreter."""
import contextlib

import pytest

from helpers import (INTERPRETERS, TaskFrame, Workload, interp_params, record_checked,
                     show, start_all, wait_links)

LONG_AWAITER = "awaiter-long-" + "\u00e9" * 50 + "-" + "\u6570" * 30
AWAIT_SECONDS = 4  # the awaiter stops waiting this long after the recorder saw it wait
RECORD_SECONDS = 8  # from then on
FREQ = 199



@pytest.fixture(scope="module")
def recorded(root_record_bin):
    interps = [i for i in INTERPRETERS if not i.missing]
    if not interps:
        pytest.skip("no supported interpreter installed")
    with contextlib.ExitStack() as stack:
        loads = start_all(stack, [Workload(i.path, "ended_awaiter.py", AWAIT_SECONDS,
                                           timeout=60, stdin=True) for i in interps])
        def go(rec):
            # the awaiter's time runs from when the recorder's snapshots hold both awaits
            # (each orphan linked to its awaiter), however long loading and
            # examining eleven processes took
            wait_links(rec, {w.pid: 3 for w in loads})
            for w in loads:
                w.send("go")
        r = record_checked(root_record_bin, "-p", ",".join(str(w.pid) for w in loads),
                           "-F", FREQ, pids=[w.pid for w in loads],
                           min_seconds=RECORD_SECONDS, ready=go)
        yield r, {i.id: w for i, w in zip(interps, loads)}


def orphan_paths(r, w, child="orphan"):
    """The task names of each sample of the orphan, with whether the awaiter's own
    frames are in it (it is still waiting)."""
    out = []
    for s in r.of_pid(w.pid):
        tasks = s.tasks()
        if child not in tasks:
            continue
        at = [k for k, f in enumerate(s.frames) if isinstance(f, TaskFrame)]
        waiting = len(at) > 1 and at[1] - at[0] > 1
        out.append((tasks, waiting, s))
    return out


# orphan-3's awaiter has asyncio's automatic name: shown, gone, by its coroutine's qualname
@pytest.mark.parametrize("pair", [("awaiter", "orphan"), (LONG_AWAITER, "orphan-2"),
                                  ("awaiter", "orphan-3")],
                         ids=["short", "long", "automatic"])
@pytest.mark.parametrize("python", interp_params())
def test_ended_awaiter_named(recorded, python, pair):
    """Named in front of its orphan, also when its name is too long for a link (the
    name is then kept where the walk keeps long names)."""
    r, loads = recorded
    paths = orphan_paths(r, loads[python.id], pair[1])
    assert paths, "no samples of the orphan task" + r.describe()
    wrong = [s for tasks, _, s in paths if tasks != list(pair)]
    assert not wrong, "orphan samples without the awaiter, named, in front of it" + show(
        wrong, n=8, header="offending stacks")
    assert any(waiting for _, waiting, _ in paths), (
        "no sample of the awaiter still waiting: the recording began after it stopped"
        + show([s for _, _, s in paths], n=8, header="orphan stacks"))
    assert any(not waiting for _, waiting, _ in paths), (
        "no sample after the awaiter stopped waiting (%d s after the start)" % AWAIT_SECONDS
        + show([s for _, _, s in paths], n=8, header="orphan stacks"))
