"""A small service for `make demo`: an asyncio loop serving fake requests whose hot path
is handle_request -> render_page -> checksum, and a "reports" thread crunching numbers.

Prints READY once running; runs until killed.
"""
import asyncio
import ctypes
import threading
import time


def checksum(data):
    h = 0
    for b in data:
        h = (h * 31 + b) & 0xFFFFFFFF
    return h


def render_page(n):
    body = ("item %d\n" % n).encode() * 300
    return checksum(body)


async def handle_request(n):
    await asyncio.sleep(0.001)
    return render_page(n)


async def serve():
    n = 0
    while True:
        await asyncio.gather(*(handle_request(n + i) for i in range(20)))
        n += 20


def crunch_reports():
    try:
        ctypes.CDLL(None).prctl(15, b"reports", 0, 0, 0)  # PR_SET_NAME: OS thread name
    except (OSError, AttributeError):
        pass
    while True:
        sum(i * i for i in range(20000))
        time.sleep(0.005)


def main():
    threading.Thread(target=crunch_reports, daemon=True).start()
    print("READY", flush=True)
    asyncio.run(serve())


if __name__ == "__main__":
    main()
