"""Spins in spin_before_exec() for SECONDS, then execs PYTHON running spin.py (same
pid, new image). Prints its own stack and the pid as facts first."""
import os
import sys
import time

import _wl


def spin_before_exec(seconds, python):
    _wl.fact(stack=_wl.stack_of_caller(), pid=os.getpid())
    _wl.ready()
    end = time.monotonic() + seconds
    while time.monotonic() < end: pass  # BUSY
    here = os.path.dirname(os.path.abspath(__file__))
    os.execv(python, [python, "-u", os.path.join(here, "spin.py")])


if __name__ == "__main__":
    spin_before_exec(float(sys.argv[1]), sys.argv[2])
