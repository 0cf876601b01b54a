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
    blob = zlib.compress(bytes(range(256)) * 40000, 6)
    while True:
        zlib.decompress(blob)


print(json.dumps({"mode": mode}))
print("READY", flush=True)
hot_matmul() if mode == "matmul" else hot_inflate()
