"""A Python process that segfaults on request, to check that a real fault still reaches
its own handler when the memcpy reader's library is loaded.

Spins (in a short call chain) and reads commands from stdin, one per line:
  install  load argv[1] (a shared library) and call its install(): a SIGSEGV handler
           that prints "own handler" and exits 42
  fault    read address 0 (ctypes.string_at)
Prints READY first, and "installed" after install."""
import ctypes
import os
import select
import sys


def command():
    if not select.select([sys.stdin], [], [], 0)[0]:
        return None
    return sys.stdin.readline().strip()


def spin(depth):
    if depth:
        return spin(depth - 1)
    while True:
        n = 0
        for i in range(20000):
            n += i
        cmd = command()
        if cmd == "install":
            if ctypes.CDLL(sys.argv[1]).install() != 0:
                print("install failed", flush=True)
                os._exit(3)
            print("installed", flush=True)
        elif cmd == "fault":
            ctypes.string_at(0)
        elif cmd == "":
            os._exit(4)  # stdin closed


print("READY", flush=True)
spin(10)
