"""For asyncbpf-record -- COMMAND: spins in parent_spin() for a while from its start,
then starts a grandchild through `sh -c "exec python ..."` (a process that execs into
Python after the profiler first saw it), which writes its pid to PIDFILE and spins in
grandchild_spin(). Exits with status 5 once the grandchild has ended.

Usage: spawner.py PIDFILE [SECONDS]
"""
import os
import subprocess
import sys
import time


def parent_spin(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def grandchild_spin(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def main():
    if sys.argv[1] == "--grandchild":
        with open(sys.argv[2] + ".tmp", "w") as f:
            f.write(str(os.getpid()))
        os.rename(sys.argv[2] + ".tmp", sys.argv[2])
        grandchild_spin(float(sys.argv[3]))
        return 0
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 1.5
    parent_spin(seconds)
    subprocess.run(["sh", "-c", 'sleep 0.2; exec "$0" "$@"', sys.executable, __file__,
                    "--grandchild", sys.argv[1], str(seconds)], check=True)
    return 5


if __name__ == "__main__":
    sys.exit(main())
