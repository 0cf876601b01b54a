"""A code object freed and another made at its address never names a sample wrongly:
code_reuse.py compiles dyn_L<N> (defined at line N of "<dyn>", calling only itself and
burn()) afresh every 0.15 s, and CPython hands the new code object the block of the one
two rounds before, which another function via<K> called. Every frame shown in "<dyn>" must
be a dyn_L<N> at line N or N+1, called by the via<K> its N names or itself and calling only
itself or burn(); a frame that cannot be proven is [unknown], counted. On 3.12+ the sampler leaves code objects unread where the code-version
counter allows and userspace proves them (user/cpython/codever.c): the recording must
have proven frames that way. One recording of every interpreter at once."""
import contextlib
import re

import pytest

from helpers import Frame, interp_params, record_checked, show, start_everywhere, total

FREQ = 999
RECORD_SECONDS = 6
DYN = "<dyn>"
DYN_RE = re.compile(r"^dyn_L(\d+)$")
MIN_DYN = 20


@pytest.fixture(scope="module")
def recorded(root_record_bin):
    with contextlib.ExitStack() as stack:
        interps, loads = start_everywhere(stack, "code_reuse.py")
        r = record_checked(root_record_bin, "-p", ",".join(str(w.pid) for w in loads),
                           "-F", FREQ, "--stats", pids=[w.pid for w in loads],
                           min_seconds=RECORD_SECONDS)
        yield r, {i.id: (i, w) for i, w in zip(interps, loads)}


def wrong(s):
    """Why a frame of s in <dyn> is not one the source has there, or None: dyn_L<N> lies
    at lines N and N+1, is called by via<(N - 1) // 8> or itself, and calls itself or
    burn()."""
    fr = s.frames
    for k, f in enumerate(fr):
        if not isinstance(f, Frame) or f.filename != DYN:
            continue
        m = DYN_RE.match(f.qualname)
        if not m:
            return "%s in %s" % (f.qualname, DYN)
        n = int(m.group(1))
        if f.line not in (n, n + 1):
            return "%s at line %d" % (f.qualname, f.line)
        up = fr[k - 1] if k else None
        via = "via%d" % ((n - 1) // 8)
        if not isinstance(up, Frame) or up.qualname not in (via, f.qualname):
            return "%s called by %s, not %s" % (f.qualname, up, via)
        down = fr[k + 1] if k + 1 < len(fr) else None
        if isinstance(down, Frame) and down.qualname not in ("burn", f.qualname):
            return "%s calls %s" % (f.qualname, down.qualname)
    return None


@pytest.mark.parametrize("python", interp_params())
def test_reused_code_never_misnamed(recorded, python):
    r, loads = recorded
    if python.id not in loads:
        pytest.skip("%s not started" % python.id)
    _, w = loads[python.id]
    if not w.fact("reused"):
        pytest.skip("%s reused no code object's address in %d rounds: nothing to test"
                    % (python.id, w.fact("made")))
    mine = r.of_pid(w.pid)
    dyn = [s for s in mine if any(isinstance(f, Frame) and f.filename == DYN for f in s.frames)]
    assert total(dyn) >= MIN_DYN, "%d samples in %s" % (total(dyn), DYN) + r.describe()
    bad = [(why, s) for why, s in ((wrong(s), s) for s in dyn) if why]
    assert not bad, "frames that name the wrong function (%s, ...)" % bad[0][0] + show(
        [s for _, s in bad], header="offending")


def test_proven_by_version(recorded):
    """On 3.12+ the sampler left code objects unread and they were proven; frames not
    proven are counted with the [unknown] ones."""
    r, loads = recorded
    line = next((l for l in r.err_lines() if l.startswith("frames proven by code version:")),
                None)
    assert line, "no code-version line in --stats" + r.describe()
    proven, unproven = (int(x) for x in re.match(
        r"frames proven by code version: (\d+) .*shown \[unknown\]: (\d+)", line).groups())
    unknown = int(re.search(r"^unknown frames: (\d+)", "\n".join(r.err_lines()), re.M).group(1))
    assert unproven <= unknown, line + r.describe()
    if not any(i.version >= (3, 12) for i, _ in loads.values()):
        pytest.skip("no interpreter 3.12+ running: code objects are read everywhere")
    assert proven > 0, line + r.describe()
    # every 3.12+ of the suite has its model (Debian's 3.13 micros: one each, make layouts
    # with HEADER_TREES); a new micro whose runtime structs differ is named here
    read = next(l for l in r.err_lines() if l.startswith("processes 3.12+ with their code"))
    assert read.split(": ")[1].startswith("0 "), read + r.describe()
