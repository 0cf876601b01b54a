"""A process with more tasks than the largest container objread walks (65,536 slots): its
task set, a WeakSet of 30,000 tasks, has a table of 131,072 slots, which snapshots once
refused ("cannot list asyncio tasks: Invalid argument", and no task shown). A short wall
recording of many_tasks.py must list every one of its tasks at each tick."""
import re

import pytest

from helpers import INTERPRETERS, Workload, run_tool

N = 30000
LISTED = re.compile(r"^wall tasks per tick: ([\d.]+) listed", re.M)


def interp_311():
    """3.8-3.13 keep tasks in a WeakSet; 3.11 is the one the issue measured."""
    return next((i for i in INTERPRETERS if not i.missing and i.version[:2] == (3, 11)),
                None)


def test_snapshot_lists_30000_tasks(root_record_bin, tmp_path):
    interp = interp_311()
    if interp is None:
        pytest.skip("no Python 3.11 interpreter")
    with Workload(interp.path, "many_tasks.py", N, timeout=60) as w:
        busy = w.fact("busy")
        r = run_tool(root_record_bin, "--mode", "wall", "-p", w.pid, "-d", "1", "--stats",
                     "-o", tmp_path / "out.txt", timeout=60)
    text = r.out + r.err
    assert r.rc == 0, "recorder failed" + r.describe()
    assert "cannot list asyncio tasks" not in text, "snapshot refused" + r.describe()
    m = LISTED.search(text)
    assert m, "no wall tasks line in the stats" + r.describe()
    # the N idle tasks, the busy ones and main: every tick lists them all
    assert float(m.group(1)) >= N + busy, "tasks missing" + r.describe()
