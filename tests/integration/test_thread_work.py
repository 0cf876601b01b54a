"""Work a task hands to anyio's worker threads (anyio.to_thread.run_sync, as FastAPI and
Starlette run a `def` endpoint) is drawn under the task that awaits it: a CPU sample of
the worker reads

    PROCESS;[thread work];<task ROOT>;...;<task OWNER>;OWNER's coroutines down to anyio's
    run_sync_in_worker_thread;<thread AnyIO worker thread>;the submitted function;...

([thread work] in place of the thread frame, `<thread NAME>` the worker by its Python
name, the pool's own frames left out), and a sample that cannot be proven to belong to a
task is drawn as before, never under a task. tests/workloads/thread_work.py runs three
named tasks, each handing a function of its own (burn_X) to anyio's pool, whose threads
pass from task to task, and a plain thread (burn_plain) outside any task; it measures
each function's CPU time and notes the threads that ran it. One recording of every
interpreter that imports anyio (Debian 12's python3.11 with anyio 3.6, pyenv's with the
same pure-Python anyio, the sid tree's with anyio 4) until each function has burnt WORK_CPU seconds; the others are skipped
with the workload's reason."""
import pytest

from helpers import show, total
from workthreads import (WorkRun, anyio_dir, frame_faults, faults_text, interp_params,
                         linked_to, record_work, started, tally, wrong_task)

FREQ = 199
# CPU time each function burns while sampled: about 80 samples at FREQ
WORK_CPU = 0.4
MIN_SAMPLES = 40
LINKED_SHARE = 0.95
WORKER_NAME = "AnyIO worker thread"
# the last of the awaiting task's frames: anyio's own, whatever class it is in
ANYIO_AWAIT = "run_sync_in_worker_thread"
# asyncbpf-record's arguments besides -p and -F
ARGS = ["--stats"]
# (task, function) of thread_work.py's TASKS, for the test ids
TASKS = [("req-alpha", "burn_alpha"), ("req-beta", "burn_beta"), ("req-gamma", "burn_gamma")]


@pytest.fixture(scope="module")
def recorded(root_record_bin, tmp_path_factory):
    """{interpreter id: (Recording, workload)}: one recording of thread_work.py on every
    interpreter that imports anyio; the others' workloads say why not, and end."""
    extra = anyio_dir(str(tmp_path_factory.mktemp("anyio")))
    with started("thread_work.py", *([extra] if extra else [])) as pairs:
        by_id = {i.id: w for i, w in pairs}
        busy = [w for _, w in pairs if w.fact("anyio") is None]
        for _, w in pairs:
            if w not in busy:
                w.__exit__(None, None, None)
        if not busy:
            yield None, by_id
            return
        r = record_work(root_record_bin, busy, FREQ, ARGS, WORK_CPU)
        assert r.rc == 0, "asyncbpf-record failed" + r.describe()
        yield r, by_id


@pytest.fixture
def run(recorded, python):
    r, loads = recorded
    w = loads[python.id]
    if w.fact("anyio") is not None:
        pytest.skip("%s: %s" % (python.id, w.fact("anyio")))
    return WorkRun(r, w, python)


@pytest.mark.parametrize("pair", TASKS, ids=[t for t, _ in TASKS])
@pytest.mark.parametrize("python", interp_params())
def test_work_under_owner(run, pair):
    """At least 95% of the samples of a task's function run by a worker are drawn under
    that task: [thread work], <task OWNER> the last task before <thread ...>, the
    function after it."""
    task, fn = pair
    assert run.tasks[task]["fn"] == fn, run.tasks
    mine = run.of_fn(fn)
    n = total(mine)
    assert n >= MIN_SAMPLES, "only %d samples of %s (%s); %s" % (
        n, fn, run.truth(fn), run.stats) + run.r.describe()
    linked = [s for s in mine if linked_to(s, task, fn)]
    k = total(linked)
    assert k >= LINKED_SHARE * n, (
        "%s on %s: %d of %d samples of %s (%.1f%%, need %d%%) linked under <task %s> "
        "([thread work], <task %s> the last task before <thread ...>, %s after it); "
        "drawn: %s.\n%s; %s" % (
            task, run.interp.id, k, n, fn, 100.0 * k / n, 100 * LINKED_SHARE, task, task, fn,
            tally(mine, task, fn), run.truth(fn), run.stats)
        + show([s for s in mine if s not in linked], n=6, header="samples not linked"))


@pytest.mark.parametrize("pair", TASKS, ids=[t for t, _ in TASKS])
@pytest.mark.parametrize("python", interp_params())
def test_work_frames(run, pair):
    """A linked sample shows the owner's own coroutines (handler_X, then offload_X, first
    after <task OWNER>) down to anyio's run_sync_in_worker_thread, then <thread NAME> with
    the Python name of the threads that ran the function (AnyIO worker thread), then the
    function first: the pool's own frames (WorkerThread.run, threading's _bootstrap*)
    left out."""
    task, fn = pair
    via = run.tasks[task]["via"]
    mine = run.of_fn(fn)
    linked = [s for s in mine if linked_to(s, task, fn)]
    assert linked, "%s on %s: none of %d samples of %s is linked under <task %s>, nothing " \
        "to check; drawn: %s" % (task, run.interp.id, total(mine), fn, task,
                                  tally(mine, task, fn))
    names = run.names(fn)
    assert names == [WORKER_NAME], "workload: %s ran in threads named %s" % (fn, names)
    bad = frame_faults(linked, task, fn, via, ANYIO_AWAIT, names)
    assert not bad, "%s on %s: of %d linked samples of %s:\n%s" % (
        task, run.interp.id, total(linked), fn, faults_text(bad))


@pytest.mark.parametrize("pair", TASKS, ids=[t for t, _ in TASKS])
@pytest.mark.parametrize("python", interp_params())
def test_work_under_no_other_task(run, pair):
    """No sample of a task's function is drawn under any other task: every one that has
    task frames has its owner last before <thread ...>, and no other request task."""
    task, fn = pair
    others = set(run.tasks) - {task}
    mine = run.of_fn(fn)
    assert total(mine) >= MIN_SAMPLES, "only %d samples of %s (%s)" % (
        total(mine), fn, run.truth(fn))
    wrong = wrong_task(mine, task, fn, others)
    assert not wrong, "%s on %s: %d of %d samples of %s under a task other than %s; drawn: " \
        "%s.\n%s" % (task, run.interp.id, total(wrong), total(mine), fn, task,
                     tally(mine, task, fn), run.truth(fn)) + show(
                         wrong, n=6, header="samples under another task")


@pytest.mark.parametrize("pair", TASKS, ids=[t for t, _ in TASKS])
@pytest.mark.parametrize("python", interp_params())
def test_unlinked_drawn_as_before(run, pair):
    """A sample of a task's function not linked is drawn as before: the frame of one of
    the threads that ran it (the workload's tids), with their Python name, and no task."""
    task, fn = pair
    mine = [s for s in run.of_fn(fn) if not s.thread_work]
    tids = set(run.tids(fn))
    bad = [s for s in mine if s.tid not in tids or s.tname != WORKER_NAME or s.tasks()]
    assert not bad, "%s on %s: %d of %d samples of %s drawn without [thread work] are not " \
        "of a thread %s (%s) or show a task.\n%s" % (
            task, run.interp.id, total(bad), total(mine), fn, sorted(tids), WORKER_NAME,
            run.truth(fn)) + show(bad, n=6, header="offending samples")


@pytest.mark.parametrize("python", interp_params())
def test_plain_thread_alone(run):
    """The plain thread, started outside any task, is never drawn under one: each sample
    of burn_plain has its own thread frame (its name and tid), no [thread work], no task."""
    plain = run.w.fact("plain")
    fn = plain["fn"]
    mine = run.of_fn(fn)
    assert total(mine) >= MIN_SAMPLES, "only %d samples of %s (%s)" % (
        total(mine), fn, run.truth(fn)) + run.r.describe()
    tids = run.tids(fn)
    assert len(tids) == 1, "workload: %s ran in threads %s" % (fn, tids)
    bad = [s for s in mine if s.thread_work or s.tasks() or s.tid != tids[0] or
           s.tname != plain["name"]]
    assert not bad, "%s on %s: %d of %d samples of %s not drawn under its own thread %r " \
        "(tid %d) alone" % (fn, run.interp.id, total(bad), total(mine), fn, plain["name"],
                            tids[0]) + show(bad, n=6, header="offending samples")
