"""The --native tests' workload: Python calls a C chain (tests/native/chain.c, through
ctypes) that spins in c_leaf. argv: the library, then the mode: plain (hot -> c_outer ->
c_mid -> c_leaf), callback (hot_cb -> cb_outer -> cb_mid -> py_callback -> c_outer -> ...),
task (an asyncio task chain whose running task calls the chain), thread (a native
thread, unknown to Python, spins in the chain while the main thread sleeps), and through
the C extension chainext: ext (hot_ext -> ext_outer -> ext_mid -> ext_leaf) and
ext-callback (hot_ext_cb -> ext_cb_outer -> ext_cb_mid -> py_ext_callback -> ext_outer
-> ...), and dlopen (hot_dlopen -> c_outer -> ...: every quarter second through a new copy
of the library, loaded then and unlinked at once, so that each is a module new to the
recorder and reachable only through /proc/PID/map_files), anon (hot_anon -> c_anon_outer
-> c_anon_mid -> a spin in anonymous executable memory, as a ctypes callback's
trampoline), reused (hot_reused -> c_outer -> ...: a copy of the library loaded, when
"go" comes on stdin, where anonymous memory was until then: the range it unmapped just
before, which the kernel's top-down search hands out again)."""
import asyncio
import ctypes
import json
import os
import sys

lib = ctypes.CDLL(sys.argv[1])
mode = sys.argv[2]
if mode.startswith("ext"):
    # the C extension (tests/native/chainext.c) sits beside the library
    sys.path.insert(0, os.path.dirname(sys.argv[1]))
    import chainext
lib.c_outer.argtypes = [ctypes.c_uint64]
CALLBACK = ctypes.CFUNCTYPE(None)
N = 20000000


def hot():
    while True:
        lib.c_outer(N)


def py_callback():
    lib.c_outer(N)


callback = CALLBACK(py_callback)


def hot_cb():
    while True:
        lib.cb_outer(callback)


def hot_anon():
    while True:
        assert lib.c_anon_outer(N) == 0, "no executable anonymous page"


def hot_ext():
    while True:
        chainext.ext_outer(N)


def py_ext_callback():
    chainext.ext_outer(N)


def hot_ext_cb():
    while True:
        chainext.ext_cb_outer(py_ext_callback)


def hot_dlopen():
    import shutil
    import tempfile
    import time
    while True:
        tmp = tempfile.mkdtemp(prefix="asyncbpf-dlopen-")
        path = os.path.join(tmp, "libchain.so")
        shutil.copy(sys.argv[1], path)
        fresh = ctypes.CDLL(path)
        os.unlink(path)
        os.rmdir(tmp)
        fresh.c_outer.argtypes = [ctypes.c_uint64]
        end = time.monotonic() + 0.25
        while time.monotonic() < end:
            fresh.c_outer(N // 10)


def load_span(path):
    """Bytes ld.so maps for the ELF file at path: its PT_LOAD segments' page span."""
    import struct
    with open(path, "rb") as f:
        elf = f.read()
    phoff, = struct.unpack_from("<Q", elf, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", elf, 0x36)
    lo, hi = None, 0
    for i in range(phnum):
        p_type, _, _, vaddr, _, _, memsz = struct.unpack_from("<IIQQQQQ", elf,
                                                              phoff + i * phentsize)
        if p_type == 1:
            lo = vaddr if lo is None else min(lo, vaddr)
            hi = max(hi, vaddr + memsz)
    page = os.sysconf("SC_PAGE_SIZE")
    return (hi + page - 1) // page * page - lo // page * page


class Reused:
    """A copy of the library, and anonymous memory of the size ld.so will map for it."""

    def __init__(self):
        import shutil
        import tempfile
        self.tmp = tempfile.mkdtemp(prefix="asyncbpf-reused-")
        self.path = os.path.join(self.tmp, "libchain.so")
        shutil.copy(sys.argv[1], self.path)
        self.span = load_span(self.path)
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.libc.mmap.restype = ctypes.c_void_p
        self.libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                                   ctypes.c_int, ctypes.c_int, ctypes.c_long]
        self.libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        import mmap
        self.at = self.libc.mmap(None, self.span, mmap.PROT_READ | mmap.PROT_WRITE,
                                 mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
        assert self.at not in (None, ctypes.c_void_p(-1).value), "mmap failed"
        ctypes.memset(self.at, 1, self.span)

    def load(self):
        """The library, loaded once "go" comes."""
        import select
        # Python code until the recorder has read the maps with the memory in them
        n = 0
        while not select.select([sys.stdin], [], [], 0)[0]:
            for i in range(10000):
                n += i
        sys.stdin.readline()
        assert self.libc.munmap(self.at, self.span) == 0
        fresh = ctypes.CDLL(self.path)
        with open("/proc/self/maps") as f:
            base = min(int(l.split("-")[0], 16) for l in f if l.rstrip().endswith(self.path))
        os.unlink(self.path)
        os.rmdir(self.tmp)
        print(json.dumps({"base": base}), flush=True)
        fresh.c_outer.argtypes = [ctypes.c_uint64]
        return fresh


def hot_reused(fresh):
    while True:
        fresh.c_outer(N)


async def leaf_task():
    while True:
        lib.c_outer(N)
        await asyncio.sleep(0)


async def outer_task():
    await asyncio.create_task(leaf_task(), name="native-leaf")


async def main():
    await asyncio.create_task(outer_task(), name="native-outer")


if mode == "thread":
    assert lib.start_native_thread() == 0
if mode == "reused":
    reused = Reused()
    print(json.dumps({"region": reused.at, "span": reused.span}))
print(json.dumps({"mode": mode}))
print("READY", flush=True)
if mode == "thread":
    import time
    while True:
        time.sleep(1)
elif mode == "plain":
    hot()
elif mode == "ext":
    hot_ext()
elif mode == "ext-callback":
    hot_ext_cb()
elif mode == "callback":
    hot_cb()
elif mode == "anon":
    hot_anon()
elif mode == "dlopen":
    hot_dlopen()
elif mode == "reused":
    hot_reused(reused.load())
else:
    asyncio.run(main())
