"""CPU-bound chain: <module> -> main -> recurse x30 -> Worker.outer -> Worker.middle -> inner.

From inside inner it prints {"stack": [...]} (ground truth from sys._getframe) and READY,
then spins in inner's busy loop until killed.
"""
import _wl
from chain_lib import inner

DEPTH = 30


class Worker:
    def outer(self, limit, probe):
        return self.middle(limit, probe)

    def middle(self, limit, probe):
        return inner(limit, probe)


def recurse(n, limit, probe):
    if n > 1:
        return recurse(n - 1, limit, probe)
    return Worker().outer(limit, probe)


def report():
    _wl.fact(stack=_wl.stack_of_caller(1))
    _wl.ready()


def main():
    recurse(DEPTH, -1, report)


main()
