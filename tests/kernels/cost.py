"""make bench-kernels: the BPF walker's cost per sample on each kernel picked
(ASYNCBPF_KERNELS, default bullseye,trixie), booted ASYNCBPF_COST_BOOTS times each (default
2) in alternation so that the host's noise falls on all alike, each boot running
guest_cost.py. Prints and writes build/kernels/cost.txt: per kernel, workload,
interpreter and walker the median over recordings of --stats' median and mean cost per
sample, and its ratio to the last kernel picked with bpf_loop (a kernel with bpf_loop
runs the bounded-loop walker too: the variant's own cost, apart from the kernel's). A
benchmark: it asserts nothing about times."""
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fetch  # noqa: E402
import vm  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.dirname(HERE)), "build", "kernels")


def main():
    suites = [s for s in os.environ.get("ASYNCBPF_KERNELS", "bullseye,trixie").split(",") if s]
    boots = int(os.environ.get("ASYNCBPF_COST_BOOTS", "2"))
    trees = {}
    for s in suites:
        try:
            trees[s] = fetch.fetch(s)
        except fetch.Unavailable as e:
            print("bench-kernels: %s's kernel cannot be fetched: %s" % (s, e), file=sys.stderr)
            return 2
    rows = {}  # (suite, workload, python) -> [(median, mean)]
    for b in range(boots):
        order = suites if b % 2 == 0 else suites[::-1]
        for s in order:
            res = os.path.join(OUT, "cost-%s-%d" % (s, b))
            subprocess.run(["rm", "-rf", res], check=True)
            rc = vm.boot(trees[s], res, [os.path.join(HERE, "guest-cost.sh")])
            try:
                with open(os.path.join(res, "cost.txt")) as f:
                    lines = f.read().splitlines()
            except OSError:
                lines = []
            errs = [l for l in lines if l.startswith("# ") and "failed" in l or "no cost" in l]
            if rc != 0 or errs or not lines:
                print("bench-kernels: %s (boot %d) failed (exit %s): %s; see %s" % (
                    s, b, rc, "; ".join(errs) or "no results", res), file=sys.stderr)
                return 1
            for l in lines:
                if l.startswith("#"):
                    continue
                wl, py, md, mean, w = l.split()
                rows.setdefault((s, wl, py, w), []).append((int(md), int(mean)))
            print("%s boot %d: %d recordings" % (s, b, len(lines)), flush=True)
    base = suites[-1]
    out = ["kernel workload interpreter n median_ns mean_ns ratio_median ratio_mean walker"]
    for (s, wl, py, w), v in sorted(rows.items()):
        md = statistics.median(x[0] for x in v)
        mean = statistics.median(x[1] for x in v)
        ref = rows.get((base, wl, py, "bpf_loop"))
        rm = md / statistics.median(x[0] for x in ref) if ref else float("nan")
        rn = mean / statistics.median(x[1] for x in ref) if ref else float("nan")
        out.append("%s %s %s %d %.0f %.0f %.2f %.2f %s" % (s, wl, py, len(v), md, mean, rm, rn,
                                                          w))
    text = "\n".join(out) + "\n"
    with open(os.path.join(OUT, "cost.txt"), "w") as f:
        f.write(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
