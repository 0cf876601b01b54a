"""An order service for `make demo`, built like many aiohttp services: each request runs
in its own task, and the handlers fan work out to further tasks. Three routes each hide
a problem of the kind a flat profile shows without saying where it comes from:

  POST /ingest    uploads of zlib-compressed batches. inflate() feeds the decompressor
                  chunk by chunk and waits for the end of the stream; on a truncated
                  block it never comes, and the loop spins on empty chunks until its
                  watchdog gives up.
  POST /checkout  prices orders and writes an audit line per order line, synchronously,
                  through a handler that formats a timestamp and flushes to disk each
                  time: the event loop waits on logging.
  GET  /report    per-region statistics computed with NumPy one window at a time, the
                  result grown with np.append: quadratic, where one vectorised call
                  would do.

Each route's work runs in a chain of named tasks (handler -> task -> task -> leaf),
and a middleware names each request's task after its route, so a stacked stack reads
`<task connection>; ...; <task POST /ingest>; ...; <task ingest-batch>; ...;
<task decode-block>; ...; inflate`.

Usage: service.py [--host 127.0.0.1] [--port 0] [--port-file FILE] [--log-file FILE]
Once the server accepts connections, the port it bound and its pid are written to
--port-file. SIGINT or SIGTERM stop it gracefully.
"""
import argparse
import asyncio
import logging
import os
import socket
import struct
import sys
import zlib

import numpy as np
from aiohttp import web

audit = logging.getLogger("checkout.audit")

# -- POST /ingest ------------------------------------------------------------------------

CHUNK = 4096
MAX_POLLS = 100_000  # the watchdog


def inflate(blob):
    """Decompresses a zlib stream the way it arrives from a socket, chunk by chunk."""
    d = zlib.decompressobj()
    out = []
    pos = polls = 0
    while not d.eof:
        chunk = blob[pos:pos + CHUNK]
        pos += len(chunk)
        data = d.decompress(chunk)
        if data:
            out.append(data)
        polls += 1
        if polls > MAX_POLLS:
            raise ValueError("stream ended early")
    return b"".join(out)


def split_blocks(body):
    """The upload format: blocks, each a 4-byte big-endian length and a zlib stream."""
    blocks, pos = [], 0
    while pos + 4 <= len(body):
        (n,) = struct.unpack_from(">I", body, pos)
        blocks.append(body[pos + 4:pos + 4 + n])
        pos += 4 + n
    return blocks


async def decode_block(block):
    await asyncio.sleep(0)  # schema lookup
    try:
        return inflate(block).count(b"\n")
    except ValueError:
        return -1


async def ingest_batch(blocks):
    tasks = [asyncio.create_task(decode_block(b), name="decode-block") for b in blocks]
    counts = await asyncio.gather(*tasks)
    return {"records": sum(c for c in counts if c > 0),
            "rejected": sum(1 for c in counts if c < 0)}


async def ingest(request):
    blocks = split_blocks(await request.read())
    result = await asyncio.create_task(ingest_batch(blocks), name="ingest-batch")
    return web.json_response(result)


# -- POST /checkout ----------------------------------------------------------------------

def price_line(line):
    price = line["unit_price"] * line["qty"]
    if line["qty"] >= 10:
        price *= 0.95
    return round(price, 2)


async def price_lines(order):
    total = 0.0
    for line in order["lines"]:
        price = price_line(line)
        total += price
        audit.info("order %s line %s: %r -> %.2f", order["id"], line["sku"], line, price)
    return total


async def price_order(order):
    await asyncio.sleep(0)  # stock check
    return await asyncio.create_task(price_lines(order), name="price-lines")


async def checkout(request):
    orders = (await request.json())["orders"]
    async with asyncio.TaskGroup() as tg:
        tasks = [tg.create_task(price_order(o), name="price-order") for o in orders]
    return web.json_response({"totals": [t.result() for t in tasks]})


# -- GET /report -------------------------------------------------------------------------

WINDOW = 24


def moving_average(series, window):
    out = np.array([])
    for i in range(len(series) - window + 1):
        out = np.append(out, series[i:i + window].mean())
    return out


def load_series(region):
    rng = np.random.default_rng(region)
    return rng.normal(100.0, 15.0, 1200)


async def region_summary(region):
    series = load_series(region)
    await asyncio.sleep(0)  # cache lookup
    smooth = moving_average(series, WINDOW)
    return {"region": region, "peak": float(smooth.max()), "low": float(smooth.min())}


async def build_report(regions):
    tasks = [asyncio.create_task(region_summary(r), name="region-summary") for r in regions]
    return await asyncio.gather(*tasks)


async def report(request):
    n = int(request.query.get("regions", "3"))
    rows = await asyncio.create_task(build_report(range(n)), name="build-report")
    return web.json_response({"regions": rows})


# -- the service -------------------------------------------------------------------------

@web.middleware
async def name_tasks(request, handler):
    """Names the task that runs this request after its route, as tracing middlewares do,
    and the task that serves its connection (aiohttp names neither)."""
    route = request.match_info.route.resource
    asyncio.current_task().set_name(
        "%s %s" % (request.method, route.canonical if route else request.path))
    request.task.set_name("connection")
    return await handler(request)


def setup_audit_log(path):
    h = logging.FileHandler(path)
    h.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    audit.addHandler(h)
    audit.setLevel(logging.INFO)
    audit.propagate = False


def make_app():
    app = web.Application(middlewares=[name_tasks])
    app.add_routes([web.post("/ingest", ingest), web.post("/checkout", checkout),
                    web.get("/report", report)])
    return app


async def serve(sock, port_file):
    runner = web.AppRunner(make_app(), handle_signals=True)
    await runner.setup()
    await web.SockSite(runner, sock).start()
    if port_file:
        tmp = port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d %d\n" % (sock.getsockname()[1], os.getpid()))
        os.rename(tmp, port_file)
    print("listening on http://%s:%d" % sock.getsockname()[:2], flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--log-file", default=os.devnull)
    args = ap.parse_args()
    setup_audit_log(args.log_file)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    try:
        asyncio.run(serve(sock, args.port_file))
    except (KeyboardInterrupt, web.GracefulExit):
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
