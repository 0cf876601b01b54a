"""A FastAPI service on Debian's own FastAPI, Starlette, anyio, uvicorn and asyncpg,
against the PostgreSQL the test started; records its own truth (_svc.py) and writes it
at exit.

    svc_fastapi.py --truth FILE --pg-host SOCKET_DIR_OR_HOST --pg-port PORT

uvicorn runs programmatically, with asyncio's loop and the h11 protocol (uvloop and
httptools, where installed, would change what the loop thread runs from one interpreter
to the next), on a socket bound here to 127.0.0.1 and a free port. Prints
{"port": N}, {"versions": {...}}, then READY.

Routes, all under a BaseHTTPMiddleware (whose dispatch, stamp, signs each response in
sign_response):
  /users    async: an asyncpg query (a pool), then rows_to_json
  /report   async: an anyio TaskGroup of 3 children named NAME_CJK_LONG, each a query
            then checksum_report; then asyncio.gather of 3 unnamed children, each
            summarize_rows
  /sync     a plain def endpoint (FastAPI runs it in anyio's thread pool): crunch_stats
  /offload  async: asyncio.to_thread(hash_blob) (the loop's default executor,
            asyncio_N threads) and run_in_executor into a ThreadPoolExecutor of its own
            (compress_blob)
  /bg       async: a BackgroundTasks task, write_audit (an INSERT, then audit_digest),
            run after the response
  /bgsync   async: a BackgroundTasks task that is a plain def, tally_audit (Starlette
            runs it in anyio's thread pool after the response, in the request's task)
  /ff       async: a fire-and-forget asyncio.create_task named NAME_EMOJI
            (refresh_cache: a query, then rebuild_index), not awaited
plus _svc.py's named background tasks (warm_cache, compact_stats, sweep_sessions).
"""
import asyncio
import concurrent.futures
import contextlib
import contextvars
import functools
import json
import socket
import sys
import time

import anyio
import asyncpg
import uvicorn
from fastapi import BackgroundTasks, FastAPI, Response
from starlette.middleware.base import BaseHTTPMiddleware

from _svc import (LEDGER, NAME_CJK_LONG, NAME_EMOJI, NAMES, arguments, count_request,
                  request_span, serve_as, start_background, time_tasks, timed, versions,
                  watch_stop, write_truth)

ARGS = arguments(__doc__.splitlines()[0], [
    (("--pg-host",), {"required": True}),
    (("--pg-port",), {"type": int, "required": True}),
])

app = FastAPI()
POOL = {}
EXECUTOR = concurrent.futures.ThreadPoolExecutor(max_workers=2)
BLOB = bytes(range(256)) * 24
FF_TASKS = set()

# -- CPU helpers: each a pure-Python loop, charging its own CPU time to its name


def rows_to_json(rows):
    t0 = time.thread_time()
    parts = []
    for _ in range(12):
        parts = []
        for r in rows:
            parts.append('{"id":%d,"name":"%s","email":"%s","score":%d}'
                         % (r[0], r[1], r[2], r[3]))
    out = "[" + ",".join(parts) + "]"
    LEDGER.charge(t0)
    return out


def checksum_report(values):
    t0 = time.thread_time()
    acc = 0
    for _ in range(24):
        for v in values:
            acc = (acc * 31 + v) & 0xFFFFFFFF
    LEDGER.charge(t0)
    return acc


def summarize_rows(seed):
    t0 = time.thread_time()
    lo, hi, total = None, None, 0
    for i in range(5000):
        v = (seed * 7 + i * 13) % 997
        total += v
        if lo is None or v < lo:
            lo = v
        if hi is None or v > hi:
            hi = v
    LEDGER.charge(t0)
    return (lo, hi, total)


def crunch_stats(n):
    t0 = time.thread_time()
    buckets = [0] * 64
    for i in range(n):
        buckets[(i * 2654435761) % 64] += i & 7
    LEDGER.charge(t0)
    return sum(buckets)


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


def audit_digest(text):
    t0 = time.thread_time()
    h = 0
    for _ in range(40):
        for ch in text:
            h = (h * 33 ^ ord(ch)) & 0xFFFFFFFF
    LEDGER.charge(t0)
    return h


def tally_audit(note):
    """The /bgsync route's background task, itself a helper: run in a worker thread."""
    serve_as("/bgsync")
    t0 = time.thread_time()
    counts = [0] * 32
    for i in range(7000):
        counts[(i * 40503 + len(note)) % 32] += i & 3
    LEDGER.charge(t0)
    return sum(counts)


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


async def stamp(request, call_next):
    serve_as(request.url.path)
    count_request(request.url.path)
    response = await call_next(request)
    serve_as(request.url.path)  # (the endpoint ran in a child task: its context's copy)
    response.headers["x-signature"] = sign_response(request.url.path, response.status_code)
    return response


app.add_middleware(BaseHTTPMiddleware, dispatch=stamp)


@app.get("/users")
async def list_users():
    with timed("/users"):
        serve_as("/users")
        rows = await POOL["pool"].fetch(
            "SELECT id, name, email, score FROM users ORDER BY id LIMIT 150")
        return Response(rows_to_json(rows), media_type="application/json")


async def checksum_part(k, out):
    NAMES.adopt("anyio-child")
    rows = await POOL["pool"].fetch("SELECT score FROM users WHERE id % 3 = $1 LIMIT 200", k)
    out[k] = checksum_report([r[0] for r in rows])


async def summarize_part(k):
    await asyncio.sleep(0)
    return summarize_rows(k)


@app.get("/report")
async def report():
    serve_as("/report")
    sums = {}
    async with anyio.create_task_group() as tg:
        for k in range(3):
            tg.start_soon(checksum_part, k, sums, name=NAME_CJK_LONG)
    parts = await asyncio.gather(*(summarize_part(k) for k in range(3)))
    return Response(json.dumps({"sums": sums, "parts": parts}), media_type="application/json")


@app.get("/sync")
def sync_stats():
    serve_as("/sync")
    return Response(str(crunch_stats(9000)), media_type="text/plain")


@app.get("/offload")
async def offload():
    serve_as("/offload")
    loop = asyncio.get_running_loop()
    a = await asyncio.to_thread(hash_blob, BLOB)
    ctx = contextvars.copy_context()
    b = await loop.run_in_executor(EXECUTOR, functools.partial(ctx.run, compress_blob, BLOB))
    return Response("%d %d" % (a, b), media_type="text/plain")


async def write_audit(note):
    serve_as("/bg")
    await POOL["pool"].execute("INSERT INTO audit (note) VALUES ($1)", note)
    audit_digest(note * 4)


@app.get("/bg")
async def enqueue_audit(background_tasks: BackgroundTasks):
    serve_as("/bg")
    background_tasks.add_task(write_audit, "audit entry %.6f" % time.time())
    return Response("queued", media_type="text/plain")


@app.get("/bgsync")
async def enqueue_tally(background_tasks: BackgroundTasks):
    serve_as("/bgsync")
    background_tasks.add_task(tally_audit, "tally %.6f" % time.time())
    return Response("queued", media_type="text/plain")


async def refresh_cache():
    serve_as("/ff")
    top = await POOL["pool"].fetchval("SELECT max(score) FROM users")
    rebuild_index(top)


@app.get("/ff")
async def kick_refresh():
    serve_as("/ff")
    task = NAMES.create(refresh_cache(), NAME_EMOJI, "fire-and-forget")
    FF_TASKS.add(task)
    task.add_done_callback(FF_TASKS.discard)
    return Response("kicked", media_type="text/plain")


def timed_requests(asgi):
    """The app, each HTTP request's task timed (request_span) around the whole app."""

    async def timed_app(scope, receive, send):
        if scope["type"] != "http":
            return await asgi(scope, receive, send)
        with request_span():
            await asgi(scope, receive, send)

    return timed_app


class Server(uvicorn.Server):
    """uvicorn's server without its signal handling (0.17 installs loop handlers,
    0.29+ captures signals and raises them again after serve()): the workload stops it
    itself, and then writes its truth."""

    def install_signal_handlers(self):
        pass

    @contextlib.contextmanager
    def capture_signals(self):
        yield


async def setup_db():
    pool = await asyncpg.create_pool(host=ARGS.pg_host, port=ARGS.pg_port, user="postgres",
                                     database="postgres", min_size=4, max_size=8)
    async with pool.acquire() as c:
        await c.execute("DROP TABLE IF EXISTS users; DROP TABLE IF EXISTS audit;"
                        "CREATE TABLE users (id int PRIMARY KEY, name text, email text,"
                        " score int);"
                        "CREATE TABLE audit (id serial PRIMARY KEY, note text)")
        await c.executemany("INSERT INTO users VALUES ($1, $2, $3, $4)",
                            [(i, "user %d" % i, "user%d@example.org" % i, (i * 37) % 1000)
                             for i in range(2000)])
    return pool


async def main():
    time_tasks(asyncio.get_running_loop(), "RequestResponseCycle.run_asgi")
    POOL["pool"] = await setup_db()
    background = start_background()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(timed_requests(app), loop="asyncio", http="h11", lifespan="off",
                            log_level="warning", access_log=False)
    server = Server(config)
    loop = asyncio.get_running_loop()

    def stop():
        if server.should_exit:
            server.force_exit = True
        server.should_exit = True
        loop.call_later(5, setattr, server, "force_exit", True)

    watch_stop(loop, stop)
    serving = loop.create_task(server.serve(sockets=[sock]))
    while not server.started and not serving.done():
        await asyncio.sleep(0.05)
    if serving.done():
        serving.result()
        raise SystemExit("uvicorn did not start")
    print(json.dumps({"port": sock.getsockname()[1]}))
    print(json.dumps({"versions": versions("fastapi", "starlette", "anyio", "uvicorn",
                                           "asyncpg", "h11")}))
    print("READY", flush=True)
    await serving
    write_truth(ARGS.truth, service="fastapi",
                versions=versions("fastapi", "starlette", "anyio", "uvicorn", "asyncpg"))
    for t in background:
        t.cancel()
    await POOL["pool"].close()


if __name__ == "__main__":
    asyncio.run(main())
    EXECUTOR.shutdown(wait=False)
    sys.exit(0)
