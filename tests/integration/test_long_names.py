"""A task's `<task NAME>` frame is the name the task held, whatever its length and kind:
long names whole up to 255 characters (a longer one cut with "…"), Latin-1, UCS-2 and
UCS-4 names in UTF-8, a renamed task under the names it had; automatic names (Task-N,
anyio's module.qualname) shown as the coroutine they run unless --task-ids. Checked on
every interpreter against the names the workload gave (long_names.py)."""
import re

import pytest

from helpers import Workload, record_checked

CUT = "\u2026"
MAX = 255


@pytest.fixture(scope="module")
def names_load(interp):
    with Workload(interp.path, "long_names.py", timeout=60) as w:
        yield w


def shown(name):
    return name[:MAX] + CUT if len(name) > MAX else name


def renamed_ok(name):
    """A name busy_renamed held: its first, or one its formula gives."""
    m = re.fullmatch(r"renamed-(\d+)-(r*)", name)
    return name == "renamed-0-first" or bool(m and len(m.group(2)) == 40 + int(m.group(1)) % 7)


def by_coroutine(samples):
    """{busy coroutine: [task names of each sample in it]}"""
    out = {}
    for s in samples:
        busy = [q for q in s.qualnames() if isinstance(q, str) and q.startswith("busy_")]
        if busy:
            out.setdefault(busy[0], []).append((s.tasks(), s.count))
    return out


@pytest.fixture(scope="module")
def default_rec(names_load, root_record_bin):
    return record_checked(root_record_bin, "-p", names_load.pid, "-F", 499, "--stats",
                          pids=[names_load.pid], cpu=1.5)


def test_names_whole(names_load, default_rec):
    """Each busy task's samples show exactly its name (grouped when automatic)."""
    given = names_load.fact("names")
    want = {k: shown(v) for k, v in given.items()}
    want["busy_unnamed"] = "busy_unnamed"
    want["busy_anyio_style"] = "busy_anyio_style"
    got = by_coroutine(default_rec.of_pid(names_load.pid))
    bad = []
    for k, name in sorted(want.items()):
        if k not in got:
            bad.append("%s: no sample" % k)
            continue
        for tasks, n in got[k]:
            if tasks != [name]:
                bad.append("%s: %d samples under %r, want %r" % (k, n, tasks, name))
    assert not bad, "\n  ".join(["wrong task names:"] + bad) + default_rec.describe()


def test_renamed(names_load, default_rec):
    """The renamed task shows only names it held, and more than one of them."""
    got = by_coroutine(default_rec.of_pid(names_load.pid)).get("busy_renamed", [])
    assert got, "no sample in busy_renamed" + default_rec.describe()
    names = {t for tasks, _ in got for t in tasks}
    bad = sorted(n for n in names if not renamed_ok(n))
    assert not bad, "names busy_renamed never held: %r" % bad + default_rec.describe()
    assert len(names) >= 2, "one name across renames: %r" % names + default_rec.describe()


def test_none_unreadable(default_rec):
    """--stats counts the names shown as "?": none here, every task holds its name."""
    m = re.search(r"^task names unreadable: (\d+)", default_rec.err, re.M)
    assert m, "--stats says nothing of unreadable names" + default_rec.describe()
    assert m.group(1) == "0", default_rec.describe()


def test_task_ids(names_load, root_record_bin):
    """--task-ids shows automatic names as the tasks hold them."""
    rec = record_checked(root_record_bin, "-p", names_load.pid, "-F", 499, "--task-ids",
                         pids=[names_load.pid], cpu=0.8)
    got = by_coroutine(rec.of_pid(names_load.pid))
    want = {"busy_unnamed": names_load.fact("names")["busy_unnamed"],
            "busy_anyio_style": names_load.fact("names")["busy_anyio_style"]}
    assert want["busy_unnamed"].startswith("Task-"), want
    for k, name in want.items():
        assert k in got, "no sample in %s" % k + rec.describe()
        names = {tuple(t) for t, _ in got[k]}
        assert names == {(name,)}, "%s under %r, want %r" % (k, names, name) + rec.describe()
