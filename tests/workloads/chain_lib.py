"""The leaf of chain.py lives in its own module so that file names differ along the stack."""


def inner(limit, probe=None):
    if probe is not None:
        probe()
    n = 0
    while n != limit: n += 1  # BUSY
    return n
