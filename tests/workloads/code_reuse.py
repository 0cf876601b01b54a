"""Code objects freed and made again at the same address while samples name them
(3.8+): round n compiles a function dyn_L<N>, defined at line N of "<dyn>", and runs it
through via<K>: three calls of itself (given as an argument), then BURN seconds of CPU in
burn(); then drops it. N = 1 + 8K + 4(n % 2) with K = (n // 2) % 5, so a frame's name says
which via<K> must call it. Odd rounds' functions have a longer body: two sizes of code
object in turn, each size's block going from a function to the one two rounds later, which
another via<K> calls. Before READY it tells how often a function got a freed one's
address in a first 40 rounds: {"made": 40, "reused": count}. Then runs until killed."""
import time

from _wl import fact, ready

# a round's CPU: long enough for a profiler to name the function while it lives
BURN = 0.15


def burn():
    end = time.perf_counter() + BURN
    while time.perf_counter() < end:
        pass


def line_of(n):
    return 1 + 8 * ((n // 2) % 5) + 4 * (n % 2)


def make(n):
    name = "dyn_L%d" % line_of(n)
    pad = "a = k; " + "a = a + k; " * 12 if n % 2 else ""
    src = "\n" * (line_of(n) - 1) + "def %s(k, me):\n    %sreturn me(k - 1, me) if k else burn()\n" % (
        name, pad)
    ns = {"burn": burn}
    exec(compile(src, "<dyn>", "exec"), ns)
    # out of the globals it holds: no cycle, so freed as soon as dropped (3.13+ would
    # leave the cycle to the collector)
    return ns.pop(name)


def via0(f):
    f(3, f)


def via1(f):
    f(3, f)


def via2(f):
    f(3, f)


def via3(f):
    f(3, f)


def via4(f):
    f(3, f)


VIA = [via0, via1, via2, via3, via4]


def run(n):
    VIA[(n // 2) % 5](make(n))


def main():
    global BURN
    seen, reused, burn_for = set(), 0, BURN
    BURN = 0
    for n in range(40):
        f = make(n)
        reused += id(f.__code__) in seen
        seen.add(id(f.__code__))
        VIA[(n // 2) % 5](f)
        del f
    BURN = burn_for
    fact(made=40, reused=reused)
    ready()
    n = 0
    while True:
        run(n)
        n += 1


if __name__ == "__main__":
    main()
