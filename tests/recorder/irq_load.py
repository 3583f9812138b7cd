"""Makes interrupts for the IRQ tests: direct-I/O writes to a real block
device (hard IRQs, BLOCK softirqs) and loopback TCP (NET_RX softirqs).
Removes what it wrote, on every path."""

from __future__ import annotations

import os
import socket
import sys
import tempfile
import threading

CHUNK = 4096
WRITES = 1500
LOOPBACK_BYTES = 32 << 20


def direct_io(directory: str) -> None:
    fd_path = tempfile.mktemp(prefix="launchgap-irq-", dir=directory)
    buf = bytearray(CHUNK)
    try:
        fd = os.open(fd_path, os.O_WRONLY | os.O_CREAT | os.O_DIRECT, 0o600)
        try:
            view = memoryview(__import__("mmap").mmap(-1, CHUNK))
            view[:] = buf
            for i in range(WRITES):
                os.pwrite(fd, view, i * CHUNK)
        finally:
            os.close(fd)
    finally:
        if os.path.exists(fd_path):
            os.unlink(fd_path)


def loopback() -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def sink() -> None:
        conn, _ = server.accept()
        with conn:
            while conn.recv(1 << 16):
                pass

    t = threading.Thread(target=sink)
    t.start()
    with socket.create_connection(("127.0.0.1", port)) as client:
        payload = b"x" * (1 << 16)
        for _ in range(LOOPBACK_BYTES // len(payload)):
            client.sendall(payload)
    t.join()
    server.close()


if __name__ == "__main__":
    direct_io(sys.argv[1] if len(sys.argv) > 1 else "/var/tmp")
    loopback()
