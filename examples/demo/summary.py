"""Prints the heaviest stacked stacks of each route of the demo service from a recording
in collapsed format (asyncbpf-report -o FILE.collapsed converts a pprof file).

Each stack is shown from the route's task down, one `<task NAME>` per task, with the
service's own frames and the function that was running (with --native, a C function of
NumPy, zlib or libc below the Python frames); then the route's heaviest running
functions:

  <POST /ingest> > ingest > <ingest-batch> > ingest_batch > <decode-block> > decode_block > inflate

Usage: summary.py FILE.collapsed [--top 3]
"""
import argparse
import collections
import os
import re

ROUTES = ("POST /ingest", "POST /checkout", "GET /report")
FRAME = re.compile(r"^(.+?) \((.*):(-?\d+)\)$")
HIDDEN = {"name_tasks"}  # the middleware, in every route's stack


def compact(frames):
    """The route's part of a stack: task names, the service's frames, the first
    library function each calls, and the running function; other library frames are
    shown as one "...". Nested functions are named by their innermost name."""
    out = []
    last_mine = False
    for i, f in enumerate(frames):
        task = re.match(r"^<task (.*)>$", f)
        m = FRAME.match(f)
        if task:
            out.append("<%s>" % task.group(1))
            last_mine = False
            continue
        name = m.group(1).split(".<locals>.")[-1] if m else f
        if name in HIDDEN:
            continue
        mine = bool(m) and os.path.basename(m.group(2)) == "service.py"
        if mine or last_mine or i == len(frames) - 1:
            out.append(name)
        elif out[-1] != "...":
            out.append("...")
        last_mine = mine
    return " > ".join(out)


def leaf_name(frame):
    """A frame as the running function: a Python frame's qualname, or a native frame."""
    m = FRAME.match(frame)
    return m.group(1).split(".<locals>.")[-1] if m else frame


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("collapsed")
    ap.add_argument("--top", type=int, default=3)
    args = ap.parse_args()
    per_route = {r: collections.Counter() for r in ROUTES}
    # the running function of each route's samples, below the service's last frame
    running = {r: collections.Counter() for r in ROUTES}
    total = 0
    with open(args.collapsed) as f:
        for line in f:
            stack, _, n = line.rstrip("\n").rpartition(" ")
            if not n.isdigit():
                continue
            n = int(n)
            total += n
            frames = stack.split(";")
            for r in ROUTES:
                if "<task %s>" % r in frames:
                    i = frames.index("<task %s>" % r)
                    per_route[r][compact(frames[i:])] += n
                    running[r][leaf_name(frames[-1])] += n
    if not total:
        raise SystemExit("summary: no samples in %s" % args.collapsed)
    print("%d samples; the heaviest stacks of each route, from the route's task down to "
          "the running function (<task name>, then its frames):" % total)
    for r in ROUTES:
        c = per_route[r]
        print("\n%s: %d samples, %.0f%%" % (r, sum(c.values()), 100.0 * sum(c.values()) / total))
        for stack, n in c.most_common(args.top):
            print("  %5.1f%%  %s" % (100.0 * n / total, stack))
        top = running[r].most_common(args.top + 2)
        print("  running: " + ", ".join("%s %.1f%%" % (f, 100.0 * n / total) for f, n in top))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
