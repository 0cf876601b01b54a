"""Spins in spin() for SECONDS (argument; default forever; "stdin": until a line or the
end of input arrives on stdin) after printing READY, then exits 0. SECONDS cpu: seconds
of its own CPU time, however long a loaded machine makes that last. Runs on any Python 3."""
import select
import sys
import time

import _wl


def spin(seconds, clock=time.monotonic):
    _wl.fact(stack=_wl.stack_of_caller())
    _wl.ready()
    if seconds == "stdin":
        while not select.select([sys.stdin], [], [], 0)[0]:
            for _ in range(20000): pass  # BUSY
        return
    end = clock() + float(seconds)
    while clock() < end: pass  # BUSY


if __name__ == "__main__":
    spin(sys.argv[1] if len(sys.argv) > 1 else "inf",
         time.process_time if sys.argv[2:] == ["cpu"] else time.monotonic)
