"""Real parts for tests, benchmarks and the demo: a private Postfix on loopback, an SMTP
sink standing in for the members' servers, and a throw-away PostgreSQL server.

Nothing here is used by the milter, the API or the worker in production.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from pathlib import Path


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(
    condition: Callable[[], object], timeout: float = 20.0, interval: float = 0.05
) -> object:
    """Poll ``condition`` until it returns something true; raise TimeoutError otherwise."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"condition not met within {timeout} s")
        time.sleep(interval)


def wait_for_port(port: int, host: str = "127.0.0.1", timeout: float = 20.0) -> None:
    def _open() -> bool:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return True
        except OSError:
            return False

    wait_for(_open, timeout)


class GrowingFile:
    """A file read as it grows (a log, the counting sink's events): each read gives the
    whole lines written since the last one, so that a poller does not read it all again."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0

    def new_lines(self) -> bytes:
        """The complete lines added since the last call (b"" while the file is missing)."""
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                chunk = f.read()
        except FileNotFoundError:
            return b""
        end = chunk.rfind(b"\n") + 1
        self.offset += end
        return chunk[:end]
