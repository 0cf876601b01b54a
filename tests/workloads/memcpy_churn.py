"""Memory that changes under a reader: for argv[1] seconds, waves of asyncio tasks are
created and freed, each running a chain of coroutines and plain calls of varying depth
(frames and thread-stack chunks come and go), and garbage is allocated and dropped.
Prints READY, then at the end {"result": N, "expected": N}: the work's checksum and the
same computed without asyncio."""
import asyncio
import json
import sys
import time


def plain(d, x):
    return plain(d - 1, x + d) if d else x


async def deep(d, x):
    if d:
        return await deep(d - 1, x + 1)
    await asyncio.sleep(0)
    return plain(x % 50, x)


async def wave(w):
    garbage = [bytearray(4096) for _ in range(w % 64)]
    got = await asyncio.gather(*(deep(5 + (w + k) % 90, w + k) for k in range(20)))
    del garbage
    return sum(got)


def expected_wave(w):
    total = 0
    for k in range(20):
        x = w + k + 5 + (w + k) % 90
        total += plain(x % 50, x)
    return total


async def main(seconds):
    end = time.monotonic() + seconds
    total = expected = waves = 0
    while time.monotonic() < end:
        total += await asyncio.ensure_future(wave(waves))
        expected += expected_wave(waves)
        waves += 1
    return total, expected, waves


if __name__ == "__main__":
    print("READY", flush=True)
    total, expected, waves = asyncio.new_event_loop().run_until_complete(
        main(float(sys.argv[1])))
    print(json.dumps({"result": total, "expected": expected, "waves": waves}), flush=True)
