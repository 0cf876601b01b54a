"""The --native tests' library workload: `hot` spends its time in a C library. argv: the
mode, matmul (NumPy's matrix product: BLAS) or inflate (zlib.decompress)."""
import json
import sys
import zlib

mode = sys.argv[1]


def hot_matmul():
    import numpy
    a = numpy.random.default_rng(1).random((256, 256))
    while True:
        a @ a


def hot_inflate():
    data = bytes(range(256)) * 40000
    blob = zlib.compress(data, 6)
    while True:
        # room for the whole output up front, and a byte (3.8-3.9 grow a full buffer
        # anyway): growing it by realloc, glibc's copies of 10 MB outweigh inflate itself
        zlib.decompress(blob, 15, len(data) + 1)


print(json.dumps({"mode": mode}))
print("READY", flush=True)
hot_matmul() if mode == "matmul" else hot_inflate()
