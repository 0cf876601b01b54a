"""An aiohttp web service on Debian's own aiohttp and redis (redis.asyncio), against
the redis-server the test started; records its own truth (_svc.py) and writes it at exit.

    svc_aiohttp.py --truth FILE --redis SOCKET

Serves on a socket bound here to 127.0.0.1 and a free port; prints {"port": N},
{"versions": {...}}, then READY.

Routes, all under a middleware (stamp, which signs each response in sign_response):
  /items    LRANGE, then items_to_json
  /stats    asyncio.TaskGroup (3.11+; else gather) of 3 children named NAME_LATIN1_100,
            each an HGETALL then tally_counters; then asyncio.gather of 3 unnamed
            children, each merge_counters
  /offload  asyncio.to_thread(hash_blob) (the loop's default executor, asyncio_N
            threads) and run_in_executor into a ThreadPoolExecutor of its own
            (compress_blob)
  /ff       a fire-and-forget asyncio.create_task named NAME_EMOJI (refresh_cache: a GET,
            then rebuild_index), not awaited
plus _svc.py's named background tasks (warm_cache, compact_stats, sweep_sessions).
"""
import asyncio
import concurrent.futures
import contextvars
import functools
import json
import socket
import sys
import time

import redis.asyncio as aioredis
import redis.asyncio.connection as aioredis_connection
from aiohttp import web

from _svc import (LEDGER, NAME_EMOJI, NAME_LATIN1_100, NAMES, V, arguments, count_request,
                  request_span, serve_as, start_background, time_tasks, timed, versions,
                  watch_stop, write_truth)

ARGS = arguments(__doc__.splitlines()[0], [(("--redis",), {"required": True})])

EXECUTOR = concurrent.futures.ThreadPoolExecutor(max_workers=2)
BLOB = bytes(range(256)) * 24
FF_TASKS = set()
REDIS = {}

# -- CPU helpers: each a pure-Python loop, charging its own CPU time to its name


def items_to_json(items):
    t0 = time.thread_time()
    parts = []
    for _ in range(10):
        parts = []
        for raw in items:
            s = raw.decode()
            parts.append('{"sku":"%s","len":%d,"upper":"%s"}' % (s, len(s), s.upper()))
    out = "[" + ",".join(parts) + "]"
    LEDGER.charge(t0)
    return out


def tally_counters(fields):
    t0 = time.thread_time()
    acc = 0
    for _ in range(60):
        for k, v in fields.items():
            acc = (acc * 31 + len(k) + int(v)) & 0xFFFFFFFF
    LEDGER.charge(t0)
    return acc


def merge_counters(seed):
    t0 = time.thread_time()
    merged = {}
    for i in range(5000):
        key = (seed * 7 + i * 13) % 61
        merged[key] = merged.get(key, 0) + i
    LEDGER.charge(t0)
    return len(merged)


def hash_blob(blob):
    t0 = time.thread_time()
    h = 2166136261
    for b in blob:
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    LEDGER.charge(t0)
    return h


def compress_blob(blob):
    t0 = time.thread_time()
    out, prev, run = [], None, 0
    for b in blob:
        if b == prev:
            run += 1
        else:
            if prev is not None:
                out.append((prev, run))
            prev, run = b, 1
    LEDGER.charge(t0)
    return len(out)


def rebuild_index(top):
    t0 = time.thread_time()
    index = {}
    for i in range(6000):
        index[i % 257] = (index.get(i % 257, 0) + i * top) & 0xFFFF
    LEDGER.charge(t0)
    return len(index)


def sign_response(path, status):
    t0 = time.thread_time()
    h = status
    for _ in range(200):
        for ch in path:
            h = (h * 131 + ord(ch)) & 0xFFFFFFFF
    LEDGER.charge(t0)
    return "%08x" % h

# -- the app


@web.middleware
async def stamp(request, handler):
    with request_span():
        serve_as(request.path)
        count_request(request.path)
        response = await handler(request)
        serve_as(request.path)  # the handler ran in this context, and set it to itself
        response.headers["x-signature"] = sign_response(request.path, response.status)
        return response


async def list_items(request):
    with timed("/items"):
        serve_as("/items")
        items = await REDIS["r"].lrange("items", 0, 149)
        return web.Response(text=items_to_json(items), content_type="application/json")


async def tally_part(k, out):
    NAMES.adopt("taskgroup-child")
    fields = await REDIS["r"].hgetall("counters:%d" % k)
    out[k] = tally_counters(fields)


async def merge_part(k):
    await asyncio.sleep(0)
    return merge_counters(k)


async def stats(request):
    serve_as("/stats")
    sums = {}
    if V >= (3, 11):
        async with asyncio.TaskGroup() as tg:
            for k in range(3):
                tg.create_task(tally_part(k, sums), name=NAME_LATIN1_100)
    else:
        await asyncio.gather(*(NAMES.create(tally_part(k, sums), NAME_LATIN1_100,
                                            "gather-child") for k in range(3)))
    parts = await asyncio.gather(*(merge_part(k) for k in range(3)))
    return web.Response(text=json.dumps({"sums": sums, "parts": parts}),
                        content_type="application/json")


async def offload(request):
    serve_as("/offload")
    loop = asyncio.get_running_loop()
    a = await asyncio.to_thread(hash_blob, BLOB)
    ctx = contextvars.copy_context()
    b = await loop.run_in_executor(EXECUTOR, functools.partial(ctx.run, compress_blob, BLOB))
    return web.Response(text="%d %d" % (a, b))


async def refresh_cache():
    serve_as("/ff")
    top = await REDIS["r"].get("top")
    rebuild_index(int(top))


async def kick_refresh(request):
    serve_as("/ff")
    task = NAMES.create(refresh_cache(), NAME_EMOJI, "fire-and-forget")
    FF_TASKS.add(task)
    task.add_done_callback(FF_TASKS.discard)
    return web.Response(text="kicked")


async def setup_redis():
    # a pool that makes a request wait for a free connection (the default one fails with
    # "Too many connections" once max_connections are in use)
    pool = aioredis.BlockingConnectionPool(
        connection_class=aioredis_connection.UnixDomainSocketConnection, path=ARGS.redis,
        max_connections=16, timeout=30)
    r = aioredis.Redis(connection_pool=pool)
    await r.flushdb()
    await r.rpush("items", *["sku-%05d-blue-widget" % i for i in range(300)])
    for k in range(3):
        await r.hset("counters:%d" % k, mapping={"c%03d" % i: i * (k + 1) for i in range(40)})
    await r.set("top", 997)
    return r


async def main():
    time_tasks(asyncio.get_running_loop(), "RequestHandler._handle_request")
    REDIS["r"] = await setup_redis()
    background = start_background()
    app = web.Application(middlewares=[stamp])
    app.router.add_get("/items", list_items)
    app.router.add_get("/stats", stats)
    app.router.add_get("/offload", offload)
    app.router.add_get("/ff", kick_refresh)
    runner = web.AppRunner(app, handle_signals=False, access_log=None)
    await runner.setup()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    site = web.SockSite(runner, sock)
    await site.start()
    loop = asyncio.get_running_loop()
    done = asyncio.Event()
    watch_stop(loop, done.set)
    print(json.dumps({"port": sock.getsockname()[1]}))
    print(json.dumps({"versions": versions("aiohttp", "redis")}))
    print("READY", flush=True)
    await done.wait()
    write_truth(ARGS.truth, service="aiohttp", versions=versions("aiohttp", "redis"))
    for t in background:
        t.cancel()
    await runner.cleanup()
    r = REDIS["r"]
    await (r.aclose() if hasattr(r, "aclose") else r.close())  # redis 5 renamed it


if __name__ == "__main__":
    asyncio.run(main())
    EXECUTOR.shutdown(wait=False)
    sys.exit(0)
