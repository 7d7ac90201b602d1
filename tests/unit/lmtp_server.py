"""mtaplugin's LMTP front end on a real socket, in a thread of the test process (Exim's
way in, and the Postfix safety net's)."""

from __future__ import annotations

import asyncio
import smtplib
import threading
from pathlib import Path

from mtaplugin.config import InetSocket, UnixSocket
from mtaplugin.engine import ListEngine
from mtaplugin.frontends.lmtp import make_controller


class LmtpServer:
    def __init__(self, path: Path | int, engine: ListEngine) -> None:
        """On a unix socket at ``path``, or on 127.0.0.1 port ``path``."""
        self.path = path
        self.loop = asyncio.new_event_loop()
        spec = InetSocket("127.0.0.1", path) if isinstance(path, int) else UnixSocket(str(path))
        self.controller = make_controller(spec, engine, self.loop, 1_000_000)
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def __enter__(self) -> LmtpServer:
        self.controller.begin()
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.controller.end()
        self.loop.close()

    def client(self) -> smtplib.LMTP:
        if isinstance(self.path, int):
            lmtp = smtplib.LMTP("127.0.0.1", self.path)
        else:
            lmtp = smtplib.LMTP(str(self.path))
        lmtp.ehlo("exim.test")
        return lmtp
