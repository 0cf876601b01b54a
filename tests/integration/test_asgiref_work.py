"""Work a task hands to a thread through asgiref's sync_to_async is drawn under the task
that awaits it: sync_to_async submits asgiref's thread_handler to a
concurrent.futures.ThreadPoolExecutor with loop.run_in_executor and awaits the future
through asyncio.wait_for(future, None), so the executor's link applies as is. A CPU sample
of the worker reads

    PROCESS;[thread work];<task ROOT>;...;<task OWNER>;handler_X;offload_X;
    SyncToAsync.__call__;wait_for;<thread NAME>;thread_handler;burn_X;...

(thread_handler is the submitted function, asgiref's own wrapper; it calls burn_X through
Context.run, a C function: no frame). tests/workloads/asgiref_work.py runs four named
tasks, each awaiting a sync_to_async function of its own: two thread sensitive (asgiref's
one-thread executor: their items queue behind each other on one thread), two not (the
loop's default executor, whose threads pass between them). One recording of every
interpreter that imports asgiref (Debian 12's python3.11 with python3-asgiref, pyenv's
with the same pure-Python asgiref; sid's tree has no asgiref), until each function has
burnt WORK_CPU seconds; the others are skipped with the workload's reason."""
import os

import pytest

from helpers import show, total
from workthreads import (WorkRun, fn_names, frame_faults, faults_text, interp_params,
                         linked_to, record_work, started, tally, wrong_task)

FREQ = 199
# CPU time each function burns while sampled: about 80 samples at FREQ
WORK_CPU = 0.4
MIN_SAMPLES = 40
LINKED_SHARE = 0.95
ARGS = ["--stats"]
# (task, function) of asgiref_work.py's TASKS, for the test ids
TASKS = [("s2a-alpha", "burn_alpha"), ("s2a-beta", "burn_beta"),
         ("s2a-gamma", "burn_gamma"), ("s2a-delta", "burn_delta")]
# asgiref's wrapper, the function the executor runs, first after <thread NAME>
HANDLER = "thread_handler"

# Debian's asgiref: pure Python, imports nothing outside the standard library
DEBIAN_PACKAGES = "/usr/lib/python3/dist-packages"


def asgiref_dir(tmp):
    """A directory holding only a link to Debian's asgiref, or None without it."""
    src = os.path.join(DEBIAN_PACKAGES, "asgiref")
    if not os.path.isdir(src):
        return None
    os.symlink(src, os.path.join(tmp, "asgiref"))
    return tmp


@pytest.fixture(scope="module")
def recorded(root_record_bin, tmp_path_factory):
    """(Recording or None, {interpreter id: workload}): one recording of asgiref_work.py
    on every interpreter that imports asgiref; the others' workloads say why not, and
    end."""
    extra = asgiref_dir(str(tmp_path_factory.mktemp("asgiref")))
    with started("asgiref_work.py", *([extra] if extra else [])) as pairs:
        by_id = {i.id: w for i, w in pairs}
        busy = [w for _, w in pairs if w.fact("asgiref") is None]
        for _, w in pairs:
            if w not in busy:
                w.__exit__(None, None, None)
        if not busy:
            yield None, by_id
            return
        r = record_work(root_record_bin, busy, FREQ, ARGS, WORK_CPU, pause=True)
        assert r.rc == 0, "asyncbpf-record failed" + r.describe()
        yield r, by_id


@pytest.fixture
def run(recorded, python):
    r, loads = recorded
    w = loads[python.id]
    if w.fact("asgiref") is not None:
        pytest.skip("%s: %s" % (python.id, w.fact("asgiref")))
    return WorkRun(r, w, python)


def mine(run, task, fn):
    assert run.tasks[task]["fn"] == fn, run.tasks
    out = run.of_fn(fn)
    assert total(out) >= MIN_SAMPLES, "%s: only %d samples of %s (%s); %s" % (
        run.interp.id, total(out), fn, run.truth(fn), run.stats) + run.r.describe()
    return out


@pytest.mark.parametrize("pair", TASKS, ids=[t for t, _ in TASKS])
@pytest.mark.parametrize("python", interp_params())
def test_work_under_owner(run, pair):
    """At least 95% of the samples of a task's sync_to_async function are drawn under
    that task: [thread work], <task OWNER> the last task before <thread ...>, the
    function after it."""
    task, fn = pair
    samples = mine(run, task, fn)
    n = total(samples)
    linked = [s for s in samples if linked_to(s, task, fn)]
    k = total(linked)
    assert k >= LINKED_SHARE * n, (
        "%s on %s: %d of %d samples of %s (%.1f%%, need %d%%) linked under <task %s>; "
        "drawn: %s.\n%s; %s" % (
            task, run.interp.id, k, n, fn, 100.0 * k / n, 100 * LINKED_SHARE, task,
            tally(samples, task, fn), run.truth(fn), run.stats)
        + show([s for s in samples if s not in linked], n=6, header="samples not linked"))


@pytest.mark.parametrize("pair", TASKS, ids=[t for t, _ in TASKS])
@pytest.mark.parametrize("python", interp_params())
def test_work_frames(run, pair):
    """A linked sample shows the owner's coroutines (handler_X first after <task OWNER>,
    offload_X, SyncToAsync.__call__) down to asyncio's wait_for, then <thread NAME> with
    the Python name of a thread that ran the function, then asgiref's thread_handler and
    the function: the pool's own frames left out."""
    task, fn = pair
    t = run.tasks[task]
    linked = [s for s in run.of_fn(fn) if linked_to(s, task, fn)]
    assert linked, "%s on %s: no sample of %s linked under <task %s>, nothing to check; " \
        "drawn: %s" % (task, run.interp.id, fn, task, tally(run.of_fn(fn), task, fn))
    # frame_faults wants fn first after <thread>: check thread_handler there, and the
    # rest with it as the function
    bad = frame_faults(linked, task, HANDLER, t["via"], t["awaits"], run.names(fn))
    for s in linked:
        m = s.thread_mark()
        if fn_names(s, s.frames[m + 1:])[:2] != [HANDLER, fn]:
            bad.setdefault("not %s then %s first after <thread>" % (HANDLER, fn),
                           []).append(s)
    assert not bad, "%s on %s: of %d linked samples of %s:\n%s" % (
        task, run.interp.id, total(linked), fn, faults_text(bad))


@pytest.mark.parametrize("pair", TASKS, ids=[t for t, _ in TASKS])
@pytest.mark.parametrize("python", interp_params())
def test_work_under_no_other_task(run, pair):
    """No sample of a task's function is drawn under another task, though the thread
    sensitive tasks' items queue on one thread and the others' share the default
    executor's."""
    task, fn = pair
    samples = mine(run, task, fn)
    wrong = wrong_task(samples, task, fn, set(run.tasks) - {task})
    assert not wrong, "%s on %s: %d of %d samples of %s under a task other than %s; drawn: " \
        "%s.\n%s" % (task, run.interp.id, total(wrong), total(samples), fn, task,
                     tally(samples, task, fn), run.truth(fn)) + show(
                         wrong, n=6, header="samples under another task")


@pytest.mark.parametrize("pair", TASKS, ids=[t for t, _ in TASKS])
@pytest.mark.parametrize("python", interp_params())
def test_unlinked_drawn_as_before(run, pair):
    """A sample of a task's function not linked is drawn as before: the frame of one of
    the threads that ran it, with its Python name, and no task."""
    task, fn = pair
    samples = [s for s in run.of_fn(fn) if not s.thread_work]
    tids, names = set(run.tids(fn)), run.w.after["names"]
    bad = [s for s in samples if s.tid not in tids or s.tname != names[str(s.tid)] or
           s.tasks()]
    assert not bad, "%s on %s: %d of %d samples of %s drawn without [thread work] are not " \
        "of a thread that ran it by its Python name, or show a task.\n%s" % (
            task, run.interp.id, total(bad), total(samples), fn, run.truth(fn)) + show(
                bad, n=6, header="offending samples")


@pytest.mark.parametrize("python", interp_params())
def test_sensitive_share_a_thread(run):
    """The workload does what the tests assume: the thread sensitive tasks' functions
    ran in one thread, the same for both (asgiref's one-thread executor)."""
    sens = [t["fn"] for t in run.tasks.values() if t["sensitive"]]
    tids = {fn: run.tids(fn) for fn in sens}
    assert len(sens) == 2 and all(len(t) == 1 for t in tids.values()) and \
        len({t[0] for t in tids.values()}) == 1, "workload: thread sensitive functions " \
        "ran in threads %s" % tids
