"""Spins in spin_before_exec() for SECONDS, or until a line arrives on stdin when SECONDS
is "stdin", then execs PYTHON running spin.py (same pid, new image). Prints its own stack
and the pid as facts first."""
import os
import select
import sys
import time

import _wl


def spin_before_exec(seconds, python):
    _wl.fact(stack=_wl.stack_of_caller(), pid=os.getpid())
    _wl.ready()
    if seconds == "stdin":
        while not select.select([sys.stdin], [], [], 0)[0]:
            for _ in range(20000): pass  # BUSY
    else:
        end = time.monotonic() + float(seconds)
        while time.monotonic() < end: pass  # BUSY
    here = os.path.dirname(os.path.abspath(__file__))
    os.execv(python, [python, "-u", os.path.join(here, "spin.py")])


if __name__ == "__main__":
    spin_before_exec(sys.argv[1], sys.argv[2])
