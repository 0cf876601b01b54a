"""Drives the demo service with real HTTP requests (aiohttp's client): a few workers per
route, each sending its next request when the previous one is answered, for --seconds
or until the service stops. One upload batch in three carries a truncated block.

Usage: load.py --url http://127.0.0.1:PORT [--seconds 10] [--workers 2]
Waits up to 30 s for the service to accept connections; prints the requests per route.
"""
import argparse
import asyncio
import itertools
import json
import random
import struct
import sys
import time
import zlib

import aiohttp


def upload_body(rng, truncated):
    blocks = []
    for b in range(6):
        lines = "".join("sensor=%d value=%.3f ts=%d\n" % (rng.randrange(500), rng.random(), i)
                        for i in range(400)).encode()
        z = zlib.compress(lines)
        if truncated and b == 3:
            z = z[: len(z) // 2]
        blocks.append(struct.pack(">I", len(z)) + z)
    return b"".join(blocks)


def checkout_body(rng, n):
    orders = [{"id": "o%d-%d" % (n, k),
               "lines": [{"sku": "sku-%04d" % rng.randrange(10000), "qty": rng.randrange(1, 20),
                          "unit_price": round(rng.uniform(1, 90), 2)} for _ in range(150)]}
              for k in range(8)]
    return json.dumps({"orders": orders})


async def wait_ready(url, deadline):
    host, port = url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
    while True:
        try:
            _, w = await asyncio.open_connection(host, int(port))
            w.close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise SystemExit("load: %s does not accept connections" % url)
            await asyncio.sleep(0.1)


async def worker(session, url, route, counts, until, seed):
    rng = random.Random(seed)
    uploads = [upload_body(rng, truncated=(i % 3 == 0)) for i in range(8)]
    for n in itertools.count():
        if time.monotonic() >= until:
            return
        if route == "ingest":
            req = session.post(url + "/ingest", data=uploads[n % len(uploads)])
        elif route == "checkout":
            req = session.post(url + "/checkout", data=checkout_body(rng, n),
                               headers={"Content-Type": "application/json"})
        else:
            req = session.get(url + "/report", params={"regions": "2"})
        try:
            async with req as resp:
                await resp.read()
        except aiohttp.ClientConnectionError:
            return  # the service stopped
        counts[route, resp.status] = counts.get((route, resp.status), 0) + 1


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    await wait_ready(args.url, time.monotonic() + 30)
    counts = {}
    until = time.monotonic() + args.seconds
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        await asyncio.gather(*(worker(session, args.url, route, counts, until, k)
                               for route in ("ingest", "checkout", "report")
                               for k in range(args.workers)))
    print("load: " + ", ".join("%s %d: %d" % (r, s, n) for (r, s), n in sorted(counts.items())),
          flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(asyncio.run(main()))
    except KeyboardInterrupt:
        sys.exit(130)
