"""Wall-time workload: the main thread blocks in a synchronous socket read on loopback
(in blocked_read); a helper thread accepts the connection and never sends.

usage: wall_block.py
"""
import socket
import threading
import time

from _wl import fact, ready


def serve(listener):
    conn, _ = listener.accept()
    while True:
        time.sleep(3600)
    conn.close()


def blocked_read(sock):
    return sock.recv(1)  # WALL-BLOCK


def main():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    threading.Thread(target=serve, args=(listener,), daemon=True).start()
    sock = socket.create_connection(listener.getsockname())
    fact(blocked="blocked_read")
    ready()
    blocked_read(sock)


main()
