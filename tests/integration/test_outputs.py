"""Output formats of asyncbpf-record and what asyncbpf-report does with them, checked by
other programs: go tool pprof reads the pprof output, headless Chromium drives the HTML
flame graph, speedscope's schema and speedscope itself load the speedscope output.

One recording of async_patterns.py in pprof (a Python >= 3.11 if there is one) and one in
collapsed (another interpreter) serve every test; -o's extension is checked on four short
recordings of one more workload."""
import collections
import contextlib
import json
import os
import re
import shutil
import subprocess

import pytest

from helpers import (INTERPRETERS_AVAILABLE, REPO, Frame, Sample, Workload, record_checked,
                     record_sampled, run_tool)

REPORT = os.path.join(REPO, "build", "asyncbpf-report")
BROWSER = os.path.join(REPO, "tests", "browser")
FREQ = 499
SECONDS = 3


def pick_interpreters():
    """A Python with co_qualname (3.11+) for the pprof recording, another for collapsed."""
    interps = sorted(INTERPRETERS_AVAILABLE, key=lambda i: (not i.id.startswith("pyenv"),
                                                             -i.version[1]))
    if not interps:
        pytest.skip("no Python interpreter available (see the skipped interpreter tests)")
    first = interps[0]
    others = [i for i in interps if i.version[:2] != first.version[:2]]
    return first, (others[-1] if others else first)


def go_env(tmp):
    env = dict(os.environ, PPROF_TMPDIR=str(tmp), GOTOOLCHAIN="local")
    env.setdefault("HOME", str(tmp))
    return env


def need_go():
    if not shutil.which("go"):
        pytest.skip("go not installed (Debian golang-go; make deps)")


def go_pprof(tmp, *args):
    need_go()
    p = subprocess.run(["go", "tool", "pprof"] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True, timeout=120,
                       env=go_env(tmp))
    assert p.returncode == 0, "go tool pprof %s failed: %s" % (" ".join(args), p.stderr)
    return p.stdout


def report(*args, rc=0):
    if not os.path.exists(REPORT):
        pytest.skip("build/asyncbpf-report not built (run make)")
    p = subprocess.run([REPORT] + [str(a) for a in args], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
    assert p.returncode == rc, "asyncbpf-report %s: exit %d, want %d; stderr: %s" % (
        " ".join(map(str, args)), p.returncode, rc, p.stderr)
    return p


def node(script, *args):
    if not shutil.which("node"):
        pytest.skip("node not installed (make deps)")
    if not os.access("/usr/bin/chromium", os.X_OK) and not os.environ.get("CHROMIUM"):
        pytest.skip("chromium not installed (Debian chromium; make deps)")
    if not os.path.isdir(os.path.join(BROWSER, "node_modules", "playwright-core")):
        pytest.skip("tests/browser/node_modules missing (make deps runs npm ci there)")
    p = subprocess.run(["node", os.path.join(BROWSER, script)] + [str(a) for a in args],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=120, cwd=BROWSER)
    assert p.returncode == 0, "node %s failed: %s" % (script, p.stderr[-3000:])
    return json.loads(p.stdout)


def collapsed_samples(path):
    with open(path) as f:
        return [Sample(l) for l in f.read().splitlines() if l.strip()]


def record_to(binary, *args):
    """asyncbpf-record writing a file (-o in args): exit 0, nothing on stderr or stdout."""
    t = run_tool(binary, *args)
    assert t.rc == 0 and not t.err.strip() and not t.out, "asyncbpf-record %s: exit %d: %s" % (
        " ".join(map(str, args)), t.rc, t.err)


def pprof_names(sample):
    """The frames of a collapsed sample as pprof names them, root first: a Python frame
    by its qualname, other frames by their text."""
    return [re.sub(r" \((.*):(-?\d+)\)$", "", part)
            for part in sample.raw.rpartition(" ")[0].split(";")]


def stack_multiset(pairs):
    return collections.Counter((count, tuple(names)) for count, names in pairs)


def parse_traces(text):
    """go tool pprof -traces: [(count, labels, names root first)]."""
    out = []
    for block in text.split("-----------+-------------------------------------------------------")[1:]:
        labels, names, count = {}, [], None
        for line in block.splitlines():
            if not line.strip():
                continue
            if count is None:
                m = re.match(r"^\s*(\d+)\s{3}(.*)$", line)
                if m:
                    count = int(m.group(1))
                    names.append(m.group(2).strip())
                    continue
                m = re.match(r"^\s*(\w+):\s+(.*)$", line)
                assert m, "unexpected line in go tool pprof -traces: %r" % line
                labels[m.group(1)] = m.group(2).strip()
            else:
                names.append(line.strip())
        if count is not None:
            out.append((count, labels, names[::-1]))
    return out


def parse_report_stacks(text):
    """asyncbpf-report's "Top stacks" section: [(count, frames root first)]."""
    section = text.split("Top stacks (root first):\n", 1)[1]
    out = []
    for line in section.splitlines():
        m = re.match(r"^\s+(\d+)\s+[\d.]+%$", line)
        if m:
            out.append((int(m.group(1)), []))
        elif line.strip():
            out[-1][1].append(line.strip())
    return out


class Rec:
    pass


@pytest.fixture(scope="module")
def recs(root_record_bin, tmp_path_factory):
    """pprof written by asyncbpf-record (interpreter A) and its collapsed conversion by
    asyncbpf-report; collapsed written by asyncbpf-record (interpreter B)."""
    tmp = tmp_path_factory.mktemp("outputs")
    a, b = pick_interpreters()
    r = Rec()
    r.tmp, r.interp, r.interp_b = tmp, a, b
    r.pb = str(tmp / "rec.pb.gz")
    r.txt_b = str(tmp / "b.txt")
    with contextlib.ExitStack() as stack:
        wa = stack.enter_context(Workload(a.path, "async_patterns.py"))
        wb = wa if b is a else stack.enter_context(Workload(b.path, "async_patterns.py"))
        record_to(root_record_bin, "-p", wa.pid, "-F", FREQ, "-d", SECONDS, "-o", r.pb)
        record_checked(root_record_bin, "-p", wb.pid, "-F", FREQ, "-d", SECONDS,
                       output=r.txt_b)
    r.pid = wa.pid
    r.txt = str(tmp / "rec.txt")
    report(r.pb, "-o", r.txt)
    r.samples = collapsed_samples(r.txt)
    assert sum(s.count for s in r.samples) >= 20, "too few samples in %s" % r.txt
    assert all(s.pid == r.pid for s in r.samples)
    return r


def test_pprof_counts_and_labels(recs):
    """go tool pprof -traces and -top on asyncbpf-record's pprof: the same stacks and
    counts as its collapsed conversion, every label per sample, and the metadata."""
    traces = parse_traces(go_pprof(recs.tmp, "-sample_index=samples", "-traces", recs.pb))
    want = stack_multiset((s.count, pprof_names(s)) for s in recs.samples)
    got = stack_multiset((c, names) for c, _, names in traces)
    assert got == want, "go tool pprof -traces differs from the collapsed conversion:\n%s\n%s" % (
        sorted(got.items())[:5], sorted(want.items())[:5])

    tasks = 0
    for count, labels, names in traces:
        assert labels.get("pid") == str(recs.pid), labels
        assert re.match(r"^\d+$", labels.get("tid", "")), labels
        assert labels.get("process") and names[0].startswith(labels["process"] + " (pid ")
        assert labels.get("thread") and names[1].startswith(labels["thread"] + " (tid ")
        task_frames = [n for n in names if n.startswith("<task ")]
        if task_frames:
            tasks += count
            assert labels.get("task") == task_frames[-1][len("<task "):-1], (labels, names)
        else:
            assert "task" not in labels, labels
        assert "container" not in labels  # no container known: no label
    assert tasks > 0, "no sample in an asyncio task"

    top = go_pprof(recs.tmp, "-sample_index=samples", "-top", "-nodefraction=0",
                   "-nodecount=100000", recs.pb)
    total = sum(s.count for s in recs.samples)
    assert re.search(r"accounting for %d, 100%% of %d total" % (total, total), top), top
    flat = collections.Counter()
    for s in recs.samples:
        flat[pprof_names(s)[-1]] += s.count
    for line in top.splitlines():
        m = re.match(r"^\s*(\d+)\s+[\d.]+%\s+[\d.]+%\s+\d+\s+[\d.]+%\s+(.*)$", line)
        if m and int(m.group(1)):
            assert flat[m.group(2)] == int(m.group(1)), (line, flat[m.group(2)])

    raw = go_pprof(recs.tmp, "-raw", recs.pb)
    assert "PeriodType: cpu nanoseconds" in raw and "Period: %d" % (10**9 // FREQ) in raw, raw[:500]
    assert "samples/count cpu/nanoseconds" in raw, raw[:500]
    assert re.search(r"^Comment: lost records: \d+$", raw, re.M), raw[:500]
    assert re.search(r"^Time: \d{4}-", raw, re.M) and re.search(r"^Duration: [\d.]+", raw, re.M)
    # functions carry their first line (co_firstlineno), at or before the sampled line
    starts = re.findall(r"^\s+\d+: 0x0 M=1 (\S+) (\S+):(\d+) s=(\d+)", raw, re.M)
    assert starts, raw[:2000]
    for name, _, line, start in starts:
        assert 0 < int(start) <= int(line), (name, line, start)


def test_pprof_from_collapsed(recs):
    """A collapsed recording converted to pprof by asyncbpf-report reads the same in go
    tool pprof, and converts back to the same collapsed text."""
    pb = str(recs.tmp / "b.pb.gz")
    report(recs.txt_b, "-o", pb)
    samples = collapsed_samples(recs.txt_b)
    traces = parse_traces(go_pprof(recs.tmp, "-sample_index=samples", "-traces", pb))
    assert stack_multiset((c, n) for c, _, n in traces) == stack_multiset(
        (s.count, pprof_names(s)) for s in samples)
    back = str(recs.tmp / "b2.txt")
    report(pb, "-o", back)
    with open(recs.txt_b) as f1, open(back) as f2:
        assert sorted(f1.read().splitlines()) == sorted(f2.read().splitlines())


def test_report_top_stacks_match_pprof(recs):
    """asyncbpf-report's top stacks are go tool pprof's traces, heaviest first."""
    out = report("--top", 0, recs.pb).stdout
    stacks = parse_report_stacks(out)
    total = sum(s.count for s in recs.samples)
    assert re.match(r"^%s: %d samples in %d distinct stacks" % (re.escape(recs.pb), total,
                                                                len(recs.samples)), out), out[:300]
    counts = [c for c, _ in stacks]
    assert counts == sorted(counts, reverse=True)
    traces = parse_traces(go_pprof(recs.tmp, "-sample_index=samples", "-traces", recs.pb))

    def names(frames):
        return [re.sub(r" \((.*):(-?\d+)\)$", "", f) for f in frames]

    assert stack_multiset((c, names(f)) for c, f in stacks) == stack_multiset(
        (c, n) for c, _, n in traces)
    top = sorted((c for c, _, _ in traces), reverse=True)[:10]
    assert counts[:10] == top
    # the default report: 10 stacks, and task paths with the leaf function
    out10 = report(recs.pb).stdout
    assert len(parse_report_stacks(out10)) == min(10, len(stacks))
    assert re.search(r"^\s+\d+\s+[\d.]+%\s+<task [^>]+>.*: \S+$", out10, re.M), out10


def test_report_filters(recs):
    """--task, --pid and --grep keep exactly the stacks they describe."""
    by_task = collections.Counter()
    for s in recs.samples:
        for t in set(s.tasks()):
            by_task[t] += s.count
    task, n = by_task.most_common(1)[0]
    out = report("--task", task, recs.pb).stdout
    assert re.match(r"^.*: %d samples in " % n, out), out[:200]
    out = report("--pid", recs.pid, recs.pb).stdout
    assert re.match(r"^.*: %d samples in " % sum(s.count for s in recs.samples), out)
    out = report("--pid", 1, recs.pb).stdout
    assert re.match(r"^.*: 0 samples in 0 distinct stacks", out), out[:200]
    grep = "^leaf_(direct|shield) "
    n = sum(s.count for s in recs.samples
            if any(isinstance(f, Frame) and re.match(r"leaf_(direct|shield)$", f.qualname)
                   for f in s.frames))
    out = report("--grep", grep, recs.pb).stdout
    assert re.match(r"^.*: %d samples in " % n, out), out[:200]
    filtered = str(recs.tmp / "filtered.txt")
    report("--task", task, "-o", filtered, recs.pb)
    assert all(task in s.tasks() for s in collapsed_samples(filtered))
    bad = report("--grep", "(", recs.pb, rc=1)
    assert bad.stderr.startswith("asyncbpf-report: invalid --grep")


def test_report_bad_input(tmp_path):
    """Bytes that are no profile: one line on stderr, exit 2, nothing written."""
    cases = {"text.txt": b"no count here\n", "trunc.pb.gz": b"\x1f\x8b\x08\x00\x00",
             "proto.pb": b"\x0a\xff\xff\xff\x0f", "nul.txt": b"a;b\x00c 1\n"}
    for name, data in cases.items():
        p = tmp_path / name
        p.write_bytes(data)
        r = report(p, "-o", tmp_path / "out.html", rc=2)
        lines = r.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("asyncbpf-report: %s: " % p), lines
        assert not (tmp_path / "out.html").exists()
    r = report(tmp_path / "missing", rc=2)
    assert "cannot open" in r.stderr
    r = report("--format", "svg", "-o", tmp_path / "x", tmp_path / "missing", rc=1)
    assert "unknown format 'svg'" in r.stderr


def test_html_flamegraph_in_chromium(recs):
    """The HTML page renders offline without console errors; a click zooms into a task
    frame, a search highlights exactly the matching frames, a hover shows the counts."""
    html = str(recs.tmp / "rec.html")
    report(recs.pb, "-o", html)
    with open(html) as f:
        page = f.read()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page), "external reference"
    # the heaviest task that is not the only one at its level: zooming must change widths
    by_task = collections.Counter()
    for s in recs.samples:
        for t in set(s.tasks()):
            by_task[t] += s.count
    total = sum(s.count for s in recs.samples)
    task = next(t for t, n in by_task.most_common() if n < total)
    target = "<task %s>" % task
    # the search runs on the zoomed view: take the heaviest leaf inside the zoomed task
    leaf = collections.Counter()
    for s in recs.samples:
        if isinstance(s.leaf, Frame) and task in s.tasks():
            leaf[s.leaf.qualname] += s.count
    search = "^%s " % re.escape(leaf.most_common(1)[0][0])
    shot = str(recs.tmp / "flame.png")
    r = node("flame.mjs", html, shot, target, search)

    assert r["console"] == [] and r["requests"] == [], (r["console"], r["requests"])
    before = r["before"]
    assert len(before) > 10
    tasks = [f for f in before if "task" in f["cls"].split()]
    python = [f for f in before if "k-y" in f["cls"].split()]
    assert tasks and python
    assert not {f["bg"] for f in tasks} & {f["bg"] for f in python}, "task frames share colours"
    width = r["chartWidth"]
    tw = [f["width"] for f in before if f["name"] == target]
    assert tw and max(tw) < width - 2

    # zoom: the task spans the chart, and only its ancestors and descendants remain
    assert [z["name"] for z in r["zoomed"]] == [target]
    assert abs(r["zoomed"][0]["width"] - width) <= 2
    inside = {"all"}
    for s in recs.samples:
        if task in s.tasks():
            inside.update(s.raw.rpartition(" ")[0].split(";"))
    after = [f["name"] for f in r["afterClick"]]
    assert set(after) <= inside, set(after) - inside
    assert len(after) < len(before)
    n = sum(s.count for s in recs.samples if task in s.tasks())
    assert r["tip"]["shown"] and r["tip"]["text"].startswith(target + "\n%d samples, " % n), r["tip"]

    rx = re.compile(search, re.I)
    hits = [f for f in r["afterSearch"] if rx.search(f["name"])]
    assert hits, "search %r found nothing" % search
    for f in r["afterSearch"]:
        assert ("match" in f["cls"].split()) == bool(rx.search(f["name"])), f
        if rx.search(f["name"]):
            assert f["bg"] == "rgb(200, 0, 255)", f
    assert r["matched"].startswith("matched: ")
    assert len(r["afterReset"]) == len(before)
    assert os.path.getsize(shot) > 10000


def test_speedscope_loads(recs):
    """speedscope's file-format schema accepts the output and speedscope itself imports it,
    one profile per thread, weights summing to the samples times the period."""
    js = str(recs.tmp / "rec.speedscope.json")
    report(recs.pb, "-o", js)
    with open(js) as f:
        doc = json.load(f)
    period = 10**9 // FREQ
    weights = sum(sum(p["weights"]) for p in doc["profiles"])
    assert weights == period * sum(s.count for s in recs.samples)
    threads = {(s.pid, s.tid) for s in recs.samples}
    assert len(doc["profiles"]) == len(threads)
    for p in doc["profiles"]:
        assert p["endValue"] == sum(p["weights"]) and p["unit"] == "nanoseconds"
    r = node("speedscope.mjs", js)
    assert r["valid"], r["errors"]
    assert r["console"] == [] and r["requests"] == [], (r["console"], r["requests"])
    assert r["title"] == "asyncbpf - speedscope", r["title"]
    assert doc["profiles"][0]["name"] in r["text"], r["text"][:500]


def test_output_name_picks_format(root_record_bin, recs, tmp_path):
    """-o's extension picks the format (the fixture's rec.pb.gz and b.txt were written so,
    too); --format wins over it; an unknown one is a usage error. The .json file also
    passes speedscope's schema."""
    with open(recs.pb, "rb") as f:
        assert f.read(2) == b"\x1f\x8b"
    with Workload(recs.interp.path, "spin.py") as w:
        files = {}
        for name in ("x.speedscope.json", "x.html"):
            files[name] = str(tmp_path / name)
            record_to(root_record_bin, "-p", w.pid, "-d", 1, "-o", files[name])
        forced = str(tmp_path / "forced.html")
        t = record_sampled(root_record_bin, "-p", w.pid, "--format", "collapsed", "-o", forced,
                           pids=[w.pid])
        assert t.rc == 0 and not t.err.strip(), "asyncbpf-record failed" + t.describe()
    heads = {n: open(p, "rb").read(64) for n, p in files.items()}
    assert heads["x.speedscope.json"].startswith(b'{"$schema":"https://www.speedscope.app/')
    assert heads["x.html"].startswith(b"<!DOCTYPE html>")
    assert re.match(rb"^\S+ \(pid %d\);" % w.pid, open(forced, "rb").read(64))
    for name in list(files) + [forced]:
        assert oct(os.stat(os.path.join(tmp_path, name)).st_mode & 0o777) == "0o600"
    r = node("speedscope.mjs", files["x.speedscope.json"], "--schema-only")
    assert r["valid"], r["errors"]
    p = subprocess.run([root_record_bin, "--format", "svg", "-d", "1"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True, timeout=30)
    assert p.returncode == 1 and p.stderr.startswith("asyncbpf-record: unknown format 'svg'")
