"""Work an asyncio task hands to a concurrent.futures.ThreadPoolExecutor thread
(loop.run_in_executor with the loop's default executor or one of its own,
asyncio.to_thread) is drawn under the task that awaits it: a CPU sample of the worker
reads

    PROCESS;[thread work];<task ROOT>;...;<task OWNER>;OWNER's coroutines down to the
    one that awaits the executor's future (offload_X; asyncio's to_thread);<thread
    NAME>;the submitted function;...

(NAME the worker's Python name, the pool's own frames left out), and a sample that
cannot be proven to belong to a task is drawn as before, never under a task: work
submitted from a plain thread, and work its task stopped waiting for (wait_for's
timeout, task.cancel(): an orphan, counted in --stats as thread work unlinked).
tests/workloads/pool_work.py runs one named task per mechanism, each handing a function
of its own to its pool; four tasks sharing a 2-thread pool with short items (churn); two
tasks that let go of their work (orphans); a plain thread submitting to a pool of its
own. It measures each function's CPU time, notes the threads that ran it and who
submitted it. One recording of every interpreter until each function has burnt WORK_CPU
seconds."""
import re

import pytest

from helpers import show, total
from workthreads import (WorkRun, fn_names, frame_faults, faults_text, interp_params,
                         linked_to, record_work, started, tally, wrong_task)

FREQ = 199
# CPU time each function burns while sampled: about 60 samples at FREQ
WORK_CPU = 0.3
MIN_SAMPLES = 30
LINKED_SHARE = 0.95
# asyncbpf-record's arguments besides -p and -F
ARGS = ["--stats"]
# (mechanism, task, function) of pool_work.py's MECHS, for the test ids
MECHS = [("default", "run-default", "burn_default"), ("own", "run-own", "burn_own"),
         ("to_thread", "to-thread", "burn_to_thread")]
CHURN_FNS = ["churn_work_%d" % k for k in range(4)]
# the churn is sampled at least this long, and runs at least this many items meanwhile
# (issue 26's acceptance: 200 short items from 4 tasks on 2 threads, 30 s)
CHURN_SECONDS = 30
CHURN_ITEMS = 200
# (how the task let go, task, function, the function's part after it did)
ORPHANS = [("wait_for", "orphan-owner", "burn_orphan", "orphan_left"),
           ("cancel", "cancel-victim", "burn_cancelled", "cancelled_left")]
PLAIN_FN = "burn_plain_submit"


def progress(w, now):
    """{what: CPU seconds burnt since sampling began} of what the recording waits for:
    each MECHS function, the plain thread's, each orphan's part after its task let go,
    and the churn functions together."""
    cpu = {fn: now["cpu"][fn] - w.before["cpu"][fn] for fn in now["cpu"]}
    out = {t["fn"]: cpu[t["fn"]] for t in w.all("task")}
    out[PLAIN_FN] = cpu[PLAIN_FN]
    out.update((o["left"], cpu[o["left"]]) for o in w.all("orphan"))
    out["churn"] = sum(cpu[c["fn"]] for c in w.all("churn"))
    return {k: round(v, 3) for k, v in out.items()}


def churn_items(w, now):
    """The churn items each load began since sampling began, all four tasks together."""
    return sum(now["calls"][fn] - w.before["calls"][fn] for fn in CHURN_FNS)


def churn_long(w, now, seconds):
    """CHURN_SECONDS sampled and CHURN_ITEMS churn items run meanwhile"""
    return seconds >= CHURN_SECONDS and churn_items(w, now) >= CHURN_ITEMS


@pytest.fixture(scope="module")
def recorded(root_record_bin):
    """(Recording, {interpreter id: workload}): one recording of pool_work.py on every
    interpreter; the workloads are stopped while the recorder writes its output (11 busy
    processes on 2 CPUs starve it: a minute here)."""
    with started("pool_work.py") as pairs:
        loads = [w for _, w in pairs]
        r = record_work(root_record_bin, loads, FREQ, ARGS, WORK_CPU, progress, pause=True,
                        until=churn_long)
        assert r.rc == 0, "asyncbpf-record failed" + r.describe()
        yield r, {i.id: w for i, w in pairs}


class Run(WorkRun):
    """One interpreter's part of the recording, and what its workload saw: besides
    WorkRun's, its churn and orphan tasks, and who submitted each function."""

    def __init__(self, r, w, interp):
        super().__init__(r, w, interp)
        self.churn = {c["fn"]: c for c in w.all("churn")}
        self.orphans = {o["fn"]: o for o in w.all("orphan")}
        # every task the workload named but wl-main, which awaits them all
        self.named = set(self.tasks) | {c["name"] for c in self.churn.values()} | {
            o["name"] for o in self.orphans.values()} | {"canceller", "announce"}

    def check_submitters(self, fn, who):
        """Asserts that the workload saw fn submitted by who alone."""
        got = self.w.after["submitters"][fn]
        assert got == [who], "workload: %s was submitted by %s, not %s alone" % (fn, got, who)

    def submitted_by(self, fn):
        """Who submitted fn, as the workload saw, for truth()."""
        return ", submitted by %s" % self.w.after["submitters"].get(fn)


@pytest.fixture
def run(recorded, python):
    r, loads = recorded
    return Run(r, loads[python.id], python)


def mech(run, name):
    """(task, fn, the task's facts) of a mechanism; skips to_thread where it does not
    exist."""
    task, fn = next((t, f) for m, t, f in MECHS if m == name)
    if name == "to_thread" and run.w.fact("to_thread"):
        pytest.skip(run.w.fact("to_thread"))
    t = run.tasks[task]
    assert t["fn"] == fn, run.tasks
    run.check_submitters(fn, task)
    return task, fn, t


def enough(run, samples, fn):
    n = total(samples)
    assert n >= MIN_SAMPLES, "%s: only %d samples of %s (%s); %s" % (
        run.interp.id, n, fn, run.truth(fn), run.stats) + run.r.describe()


MECH_IDS = [m for m, _, _ in MECHS]


@pytest.mark.parametrize("how", MECH_IDS)
@pytest.mark.parametrize("python", interp_params())
def test_work_under_owner(run, how):
    """At least 95% of the samples of a task's function run by a pool's worker are drawn
    under that task: [thread work], <task OWNER> the last task before <thread ...>, the
    function after it."""
    task, fn, _ = mech(run, how)
    mine = run.of_fn(fn)
    enough(run, mine, fn)
    n = total(mine)
    linked = [s for s in mine if linked_to(s, task, fn)]
    k = total(linked)
    assert k >= LINKED_SHARE * n, (
        "%s (%s) on %s: %d of %d samples of %s (%.1f%%, need %d%%) linked under <task %s> "
        "([thread work], <task %s> the last task before <thread ...>, %s after it); "
        "drawn: %s.\n%s; %s" % (
            task, how, run.interp.id, k, n, fn, 100.0 * k / n, 100 * LINKED_SHARE, task,
            task, fn, tally(mine, task, fn), run.truth(fn), run.stats)
        + show([s for s in mine if s not in linked], n=4, header="samples not linked"))


@pytest.mark.parametrize("how", MECH_IDS)
@pytest.mark.parametrize("python", interp_params())
def test_work_frames(run, how):
    """A linked sample shows the owner's own coroutines (handler_X first after <task
    OWNER>, then offload_X) down to the one that awaits the executor's future (offload_X;
    asyncio's to_thread), then <thread NAME> with the Python name of one of the threads
    that ran the function, then the function first: the pool's own frames (_WorkItem.run,
    _worker, WorkerContext.run, threading's run and _bootstrap*) left out."""
    task, fn, t = mech(run, how)
    via, awaits = t["via"], t["awaits"]
    mine = run.of_fn(fn)
    linked = [s for s in mine if linked_to(s, task, fn)]
    assert linked, "%s (%s) on %s: none of %d samples of %s is linked under <task %s>, " \
        "nothing to check; drawn: %s" % (task, how, run.interp.id, total(mine), fn, task,
                                          tally(mine, task, fn))
    names = run.names(fn)
    bad = frame_faults(linked, task, fn, via, awaits, names)
    assert not bad, "%s (%s) on %s: of %d linked samples of %s:\n%s" % (
        task, how, run.interp.id, total(linked), fn, faults_text(bad))


@pytest.mark.parametrize("how", MECH_IDS)
@pytest.mark.parametrize("python", interp_params())
def test_work_under_no_other_task(run, how):
    """No sample of a task's function is drawn under any other task: every one that has
    task frames or [thread work] is linked under its owner."""
    task, fn, _ = mech(run, how)
    mine = run.of_fn(fn)
    enough(run, mine, fn)
    wrong = wrong_task(mine, task, fn)
    assert not wrong, "%s (%s) on %s: %d of %d samples of %s under a task other than %s; " \
        "drawn: %s.\n%s" % (task, how, run.interp.id, total(wrong), total(mine), fn, task,
                            tally(mine, task, fn), run.truth(fn)) + show(
                                wrong, n=6, header="samples under another task")


@pytest.mark.parametrize("how", MECH_IDS)
@pytest.mark.parametrize("python", interp_params())
def test_unlinked_drawn_as_before(run, how):
    """A sample of a task's function not linked is drawn as before: the frame of one of
    the threads that ran it (the workload's tids), with its Python name, and no task."""
    task, fn, _ = mech(run, how)
    mine = [s for s in run.of_fn(fn) if not s.thread_work]
    tids, names = set(run.tids(fn)), run.w.after["names"]
    bad = [s for s in mine if s.tid not in tids or s.tname != names[str(s.tid)] or s.tasks()]
    assert not bad, "%s (%s) on %s: %d of %d samples of %s drawn without [thread work] are " \
        "not of a thread that ran it (%s) by its Python name, or show a task.\n%s" % (
            task, how, run.interp.id, total(bad), total(mine), fn,
            {t: names[str(t)] for t in sorted(tids)}, run.truth(fn)) + show(
                bad, n=6, header="offending samples")


@pytest.mark.parametrize("python", interp_params())
def test_churn_never_under_another_task(run):
    """Four tasks share a 2-thread pool, items queued behind each other, each thread
    running every task's items in turn, for at least CHURN_SECONDS and CHURN_ITEMS items:
    no sample of churn_work_K is drawn under a task other than churn-K (linked ones have
    <task churn-K> last before <thread ...>)."""
    assert sorted(run.churn) == CHURN_FNS, run.churn
    items = churn_items(run.w, run.w.stop)
    print("%s: churn sampled %.1fs, %d items" % (run.interp.id, run.r.sampled, items))
    assert run.r.sampled >= CHURN_SECONDS and items >= CHURN_ITEMS, "%s: churn sampled " \
        "%.1fs, %d items: the recording should have waited for %ds and %d" % (
            run.interp.id, run.r.sampled, items, CHURN_SECONDS, CHURN_ITEMS)
    shared = {fn: run.tids(fn) for fn in CHURN_FNS}
    assert all(len(t) == 2 for t in shared.values()), "workload: each churn function " \
        "should have run in both of the pool's threads: %s" % shared
    samples, wrong, linked = [], {}, 0
    for fn, c in sorted(run.churn.items()):
        run.check_submitters(fn, c["name"])
        mine = run.of_fn(fn)
        samples += mine
        linked += total(s for s in mine if linked_to(s, c["name"], fn))
        bad = wrong_task(mine, c["name"], fn)
        if bad:
            wrong[fn] = bad
    n = total(samples)
    assert n >= MIN_SAMPLES, "%s: only %d samples of the churn functions (%s)" % (
        run.interp.id, n, "; ".join(run.truth(fn) for fn in CHURN_FNS))
    assert not wrong, "%s: churn samples under a task other than their own (%d linked of " \
        "%d):\n%s" % (run.interp.id, linked, n, "\n".join(
            "  %s (task %s): %d of %d wrong; drawn: %s; %s" % (
                fn, run.churn[fn]["name"], total(v), total(run.of_fn(fn)),
                tally(run.of_fn(fn), run.churn[fn]["name"], fn), run.truth(fn))
            + show(v, n=3, header="    e.g.") for fn, v in wrong.items()))


@pytest.mark.parametrize("how", [h for h, _, _, _ in ORPHANS])
@pytest.mark.parametrize("python", interp_params())
def test_orphan_under_no_task(run, how):
    """Work its task stopped waiting for (wait_for's timeout; task.cancel()) belongs to
    no task: the function's part after the task let go (orphan_left, cancelled_left) is
    never drawn under a task nor as [thread work], while the task lives on; its part
    before, never under another task."""
    _, task, fn, left = next(o for o in ORPHANS if o[0] == how)
    o = run.orphans[fn]
    assert (o["name"], o["left"], o["how"]) == (task, left, how), run.orphans
    run.check_submitters(fn, task)
    after = run.of_fn(left)
    enough(run, after, left)
    counts = run.w.after["orphans"][fn]
    assert counts["stuck"] == 0, "workload: %d calls of %s gave up waiting for %s to let " \
        "go (its loop starved?): %s" % (counts["stuck"], fn, task, counts)
    bad = [s for s in after if s.thread_work or s.tasks()]
    assert not bad, "%s (%s) on %s: %d of %d samples of %s after %s stopped waiting for it " \
        "(%s) drawn under a task; drawn: %s.\n%s; its calls: %s; %s" % (
            fn, how, run.interp.id, total(bad), total(after), fn, task, left,
            tally(after, task, fn), run.truth(left), counts, run.stats) + show(
                bad, n=6, header="samples under a task")
    before = [s for s in run.of_fn(fn) if left not in fn_names(s)]
    wrong = wrong_task(before, task, fn)
    assert not wrong, "%s (%s) on %s: %d of %d samples of %s while %s awaited it under " \
        "another task; drawn: %s" % (fn, how, run.interp.id, total(wrong), total(before),
                                     fn, task, tally(before, task, fn)) + show(
                                         wrong, n=6, header="samples under another task")


@pytest.mark.parametrize("python", interp_params())
def test_plain_submit_alone(run):
    """A plain thread's executor.submit(...).result(), no loop anywhere near: each sample
    of burn_plain_submit has its pool thread's own frame (its Python name and tid), no
    [thread work], no task."""
    p = run.w.fact("plain")
    fn = p["fn"]
    run.check_submitters(fn, "thread " + p["thread"])
    mine = run.of_fn(fn)
    enough(run, mine, fn)
    tids = run.tids(fn)
    names = run.names(fn)
    assert len(tids) == 1 and names == [p["pool"] + "_0"], \
        "workload: %s ran in threads %s %s" % (fn, tids, names)
    bad = [s for s in mine if s.thread_work or s.tasks() or s.tid != tids[0] or
           s.tname != names[0]]
    assert not bad, "%s on %s: %d of %d samples of %s not drawn under its own thread %r " \
        "(tid %d) alone" % (fn, run.interp.id, total(bad), total(mine), fn, names[0],
                            tids[0]) + show(bad, n=6, header="offending samples")


def stat(r, name):
    m = [re.match(r"^%s: (\d+)\b" % re.escape(name), l) for l in r.err_lines()]
    m = [x for x in m if x]
    assert len(m) == 1, "--stats: %d lines '%s: N'" % (len(m), name) + r.describe()
    return int(m[0].group(1))


def test_stats(recorded):
    """--stats counts the [thread work] samples drawn (thread work linked: N, all the
    interpreters together) and the orphans' samples after their task let go among those
    whose item no task awaits (thread work unlinked: at least 95% of them)."""
    r, loads = recorded
    drawn = total(s for s in r.samples if s.thread_work)
    linked = stat(r, "thread work linked")
    assert drawn <= linked <= drawn + r.lost, "--stats: thread work linked: %d, but %d " \
        "[thread work] samples drawn (%d lost)" % (linked, drawn, r.lost)
    left = {i: total(s for s in r.of_pid(w.pid) if {o for _, _, _, o in ORPHANS} &
                     set(fn_names(s))) for i, w in loads.items()}
    unlinked = stat(r, "thread work unlinked")
    n = sum(left.values())
    assert n >= MIN_SAMPLES, "only %d samples of the orphans' work after they let go" % n
    assert unlinked >= LINKED_SHARE * n, (
        "--stats: thread work unlinked: %d, but %d samples of orphaned work (%s after "
        "their task let go) on %s (%s), need %d%% counted" % (
            unlinked, n, " and ".join(o for _, _, _, o in ORPHANS), ", ".join(
                "%s %d" % kv for kv in left.items()), "; ".join(
                    l for l in r.err_lines() if l.startswith("thread")), 100 * LINKED_SHARE))


# --stats' counts of a pool worker's sample by what its link came to, adding up to
# "thread work samples"
OUTCOMES = ["thread work linked", "thread work unlinked", "thread work without a future",
            "thread work task unseen", "thread work unreadable"]


def test_stats_every_outcome(recorded):
    """--stats counts every pool worker's sample in a pool frame outside a task (thread
    work samples: at least those drawn with [thread work] and the plain-submit pool's)
    once, by what its link came to: the five outcomes add up to it. The plain thread's
    items, which no asyncio future stands for, are at least 95% of their samples among
    thread work without a future."""
    r, loads = recorded
    lines = "; ".join(l for l in r.err_lines() if l.startswith("thread"))
    every = stat(r, "thread work samples")
    parts = {o: stat(r, o) for o in OUTCOMES}
    assert sum(parts.values()) == every, "--stats: the outcomes add up to %d, not thread " \
        "work samples' %d: %s" % (sum(parts.values()), every, lines)
    drawn = total(s for s in r.samples if s.thread_work)
    plain = {i: total(s for s in r.of_pid(w.pid) if PLAIN_FN in fn_names(s))
             for i, w in loads.items()}
    n = sum(plain.values())
    assert n >= MIN_SAMPLES, "only %d samples of %s" % (n, PLAIN_FN)
    assert every >= drawn + n - r.lost, "--stats: thread work samples: %d, fewer than the " \
        "%d [thread work] samples and %d of %s drawn (%d lost): %s" % (
            every, drawn, n, PLAIN_FN, r.lost, lines)
    no_future = parts["thread work without a future"]
    assert no_future >= LINKED_SHARE * n, "--stats: thread work without a future: %d, but " \
        "%d samples of %s (%s), submitted from a plain thread: need %d%% counted; %s" % (
            no_future, n, PLAIN_FN, ", ".join("%s %d" % kv for kv in plain.items()),
            100 * LINKED_SHARE, lines)
