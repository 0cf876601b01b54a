"""make bench-kernels, inside a guest (tests/kernels/guest-cost.sh): the BPF walker's
cost per sample (asyncbpf-record --stats) on a 60-frame synchronous stack and on the
chain workload, under Debian's python3.11 and pyenv's 3.12, ROUNDS recordings each; on a
kernel with bpf_loop, each also with the bounded-loop walker (ASYNCBPF_TEST_BOUNDED=1),
so that a kernel's own cost and the walker variant's can be told apart. Writes
RESULTS/cost.txt: one line per recording, "workload interpreter median_ns mean_ns
walker"."""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "integration"))
from helpers import RECORD, Workload, record  # noqa: E402

RESULTS = sys.argv[1]
ROUNDS = int(os.environ.get("ASYNCBPF_COST_ROUNDS", "3"))
PYTHONS = [("debian-3.11", "/usr/bin/python3.11"),
           ("pyenv-3.12", os.environ.get("ASYNCBPF_GUEST_PYENV",
                                         "/root/.pyenv/versions/3.12.1/bin/python3.12"))]
WORKLOADS = [("deep60", "deep.py", 60), ("chain", "chain.py")]


def one(python, workload, bounded=False):
    prefix = ["env", "ASYNCBPF_TEST_BOUNDED=1"] if bounded else []
    with Workload(python, *workload[1:]) as w:
        r = record(RECORD, "-p", w.pid, "-d", 5, "-F", 999, "--stats", "-o", "/dev/null",
                   timeout=120, prefix=prefix)
    if r.rc != 0:
        return None, "asyncbpf-record failed (%d): %s" % (r.rc, r.err.strip()[-300:])
    md = re.search(r"^median read time per sample: (\d+) ns", r.err, re.M)
    mean = re.search(r"^walk time per python sample: (\d+) ns", r.err, re.M)
    walker = re.search(r"^bpf walker: (.*)$", r.err, re.M)
    if not (md and mean and walker):
        return None, "no cost in --stats: %s" % r.err.strip()[-300:]
    return (md.group(1), mean.group(1), walker.group(1).split(" ")[0]), None


def main():
    with open(os.path.join(RESULTS, "cost.txt"), "w") as out:
        for _ in range(ROUNDS):
            for name, python in PYTHONS:
                if not os.access(python, os.X_OK):
                    out.write("# no %s\n" % python)
                    continue
                for wl in WORKLOADS:
                    got, err = one(python, wl)
                    if not err and got[2] == "bpf_loop":
                        out.write("%s %s %s %s %s\n" % ((wl[0], name) + got))
                        got, err = one(python, wl, bounded=True)
                    if err:
                        out.write("# %s %s: %s\n" % (wl[0], name, err.replace("\n", " ")))
                        return 1
                    out.write("%s %s %s %s %s\n" % ((wl[0], name) + got))
                    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
