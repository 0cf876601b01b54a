"""A 300-deep recursion of one function whose innermost call spins; deeper than the
sampler keeps, so every sample must come out truncated.

Prints {"depth": N, "stack": [...]} (ground truth from inside the innermost call) and
READY, then spins until killed.
"""
import sys

import _wl

DEPTH = 300


def recurse(n):
    if n > 1:
        return recurse(n - 1)  # CALL
    _wl.fact(depth=DEPTH, stack=_wl.stack_of_caller())
    _wl.ready()
    while True: n += 1  # BUSY


if __name__ == "__main__":
    recurse(int(sys.argv[1]) if len(sys.argv) > 1 else DEPTH)
