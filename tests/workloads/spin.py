"""Spins in spin() for SECONDS (argument; default forever) after printing READY, then
exits 0. Runs on any Python 3."""
import sys
import time

import _wl


def spin(seconds):
    _wl.fact(stack=_wl.stack_of_caller())
    _wl.ready()
    end = time.monotonic() + seconds
    while time.monotonic() < end: pass  # BUSY


if __name__ == "__main__":
    spin(float(sys.argv[1]) if len(sys.argv) > 1 else float("inf"))
