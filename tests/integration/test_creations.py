"""A task nobody awaits is drawn under its creator's frames where it was made, then a
"[created by]" marker (creations.py's handler and its jobs); a chain of creations stops
where a task was made by a task running the same coroutine function, so that a server's
requests, each made in the previous one's send path, are never drawn under one another.
On every interpreter."""
import re

import pytest

from helpers import CREATED_BY, Frame, TaskFrame, Workload, record_checked, show, total

SHARE = 0.9
# generations seen after the first one drawn with its creator, at least
LATER = 3


@pytest.fixture(scope="module")
def recorded(interp, root_record_bin):
    with Workload(interp.path, "creations.py", timeout=60) as w:
        r = record_checked(root_record_bin, "-p", w.pid, "-F", 499, "--stats",
                           pids=[w.pid], cpu=3.0)
        yield r, w


def generation(s, prefix):
    """N of the sample's task named PREFIX-N, else None."""
    m = [re.fullmatch(re.escape(prefix) + r"-(\d+)", t) for t in s.tasks()]
    return next((int(x.group(1)) for x in m if x), None)


def later_generations(r, w, prefix):
    """The samples of tasks PREFIX-N from the first N drawn with its creator on: those made
    before the creation probe was in place have no link (how many depends on how long the
    recorder took to start, seconds on a loaded machine); after it, every one must."""
    mine = [s for s in r.of_pid(w.pid) if generation(s, prefix) is not None]
    gens = sorted({generation(s, prefix) for s in mine})
    linked = sorted({generation(s, prefix) for s in mine if CREATED_BY in s.frames})
    assert linked and len([g for g in gens if g > linked[0]]) >= LATER, (
        "%s generations seen: %s, drawn with their creator: %s" % (prefix, gens, linked)
        + r.describe())
    return [s for s in mine if generation(s, prefix) >= linked[0]]


def names(s):
    """The sample's frames as qualnames, task frames and markers."""
    return [str(f) if isinstance(f, TaskFrame) else f.qualname if hasattr(f, "qualname")
            else f for f in s.frames]


def test_job_under_creation_site(recorded):
    """At least 90% of the jobs' samples: <task the-handler>, the handler's frames where
    it made the job (the workload's own record of them), [created by], <task job-N>."""
    r, w = recorded
    site = w.fact("site")

    jobs = [s for s in later_generations(r, w, "job") if "job" in s.qualnames()]
    assert total(jobs) >= 20, "too few samples in job()" + r.describe()

    def path(s):
        out = names(s)
        start = out.index("<task the-handler>") if "<task the-handler>" in out else 0
        return out[start:start + len(site) + 4]

    bad = [s for s in jobs if path(s) != ["<task the-handler>"] + site + [
        CREATED_BY, "<task job-%d>" % generation(s, "job"), "job"]]
    assert total(bad) <= (1 - SHARE) * total(jobs), (
        "%d of %d job samples not under %s" % (total(bad), total(jobs), ";".join(site))
        + show(bad, header="offending stacks"))


def test_requests_not_nested(recorded):
    """No sample holds two request tasks; each request's samples show it alone. A leaf
    request() frame at its def line is the next request's coroutine being made (3.11+ run
    its first instruction in a frame of its own): truth, not nesting."""
    r, w = recorded
    reqs = [s for s in r.of_pid(w.pid) if "request" in s.qualnames()]
    assert total(reqs) >= 20, "too few samples in request()" + r.describe()
    made = w.fact("request_def")

    def nests(s):
        f = s.frames
        # the leaf a coroutine being made, not a request running under another (3.11+)
        if isinstance(f[-1], Frame) and f[-1].qualname == "request" and f[-1].line == made:
            f = f[:-1]
        return [getattr(x, "qualname", None) for x in f].count("request") > 1
    nested = [s for s in reqs if nests(s) or "[created by]" in s.frames]
    assert not nested, "requests drawn under requests" + show(nested, header="offending")
    stopped = [l for l in r.err_lines() if l.startswith("creation chains stopped: ")]
    assert stopped and int(stopped[0].split()[3]) > 0, (
        "--stats counts no chain stopped: the rule was never needed?" + r.describe())


OUTER = 4  # SITE_OUTER: a cut site's outermost frames kept


def test_deep_site_cut_counted(recorded):
    """A creation site deeper than 24 frames: its SITE_OUTER (4) outermost frames, from the
    creator's coroutine down, "[N more frames]", then the innermost frames down to the
    create call; N and the frames shown add up to the site the workload recorded."""
    r, w = recorded
    site = w.fact("deep_site")
    deep = later_generations(r, w, "deep")
    assert total(deep) >= 10, "too few samples of the deep jobs" + r.describe()

    def check(s):
        out = names(s)
        if "<task deep-spawner>" not in out:
            return "no <task deep-spawner>"
        at = out.index("<task deep-spawner>") + 1
        end = out.index(CREATED_BY, at) if CREATED_BY in out[at:] else None
        if end is None:
            return "no [created by] after the spawner"
        got = out[at:end]
        m = re.fullmatch(r"\[(\d+) more frames\]", got[OUTER]) if len(got) > OUTER else None
        if not m:
            return "no cut marker after the %d outermost frames: %s" % (OUTER, got[:OUTER + 1])
        inner = got[OUTER + 1:]
        whole = got[:OUTER] + ["?"] * int(m.group(1)) + inner
        if len(whole) != len(site) or got[:OUTER] != site[:OUTER] or inner != site[-len(inner):]:
            return "%d frames shown + %s left out != the %d recorded" % (
                len(got) - 1, m.group(1), len(site))
        return None

    bad = [(check(s), s) for s in deep]
    bad = [(why, s) for why, s in bad if why]
    assert total([s for _, s in bad]) <= (1 - SHARE) * total(deep), (
        "deep creation sites shown wrong, e.g. %s" % (bad[0][0] if bad else "")
        + show([s for _, s in bad], header="offending"))
