"""An aiosmtpd sink: the members' mail servers, as one loopback SMTP server.

Every transaction is kept in memory (``messages``); with ``maildir`` set, each recipient's
copy is also written to ``<maildir>/<recipient>/new/`` so that a person can look at it.
"""

from __future__ import annotations

import mailbox
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, Envelope, Session


@dataclass(frozen=True)
class Received:
    mail_from: str
    recipients: tuple[str, ...]
    data: bytes


class _Handler:
    def __init__(self, sink: Sink) -> None:
        self.sink = sink

    async def handle_EHLO(
        self,
        server: SMTP,
        session: Session,
        envelope: Envelope,
        hostname: str,
        responses: list[str],
    ) -> list[str]:
        session.host_name = hostname
        self.sink.count("greetings")
        return responses

    async def handle_RSET(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        self.sink.count("resets")
        return "250 OK"

    async def handle_RCPT(
        self, server: SMTP, session: Session, envelope: Envelope, address: str, options: Any
    ) -> str:
        reply = self.sink.refuse.get(address.lower())
        if reply:
            return reply
        envelope.rcpt_tos.append(address)
        return "250 2.1.5 OK"

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        data = envelope.original_content or b""
        msg = Received(
            envelope.mail_from or "", tuple(r.lower() for r in envelope.rcpt_tos), bytes(data)
        )
        self.sink.add(msg)
        return "250 2.0.0 OK: delivered to the sink"


class Sink:
    def __init__(self, port: int, maildir: Path | None = None, host: str = "127.0.0.1") -> None:
        self.port = port
        self.host = host
        self.maildir = maildir
        self.messages: list[Received] = []
        #: recipient → SMTP reply, to make the sink refuse some addresses
        self.refuse: dict[str, str] = {}
        #: EHLO greetings (one per connection from smtplib) and RSETs since ``clear()``
        self.greetings = 0
        self.resets = 0
        self._lock = threading.Lock()
        self._controller = Controller(
            _Handler(self),
            hostname=host,
            port=port,
            server_hostname="sink.test",
            ready_timeout=10,
        )

    def count(self, name: str) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + 1)

    def add(self, msg: Received) -> None:
        with self._lock:
            self.messages.append(msg)
        if self.maildir is not None:
            for rcpt in msg.recipients:
                (self.maildir / rcpt).parent.mkdir(parents=True, exist_ok=True)
                box = mailbox.Maildir(self.maildir / rcpt, create=True)
                box.add(msg.data)

    def start(self) -> Sink:
        self._controller.start()
        return self

    def stop(self) -> None:
        self._controller.stop()

    def clear(self) -> None:
        with self._lock:
            self.messages.clear()
            self.greetings = self.resets = 0

    def to(self, address: str) -> list[Received]:
        """The transactions that carried ``address`` as a recipient."""
        address = address.lower()
        with self._lock:
            return [m for m in self.messages if address in m.recipients]

    def recipients(self) -> set[str]:
        with self._lock:
            return {r for m in self.messages for r in m.recipients}

    def __enter__(self) -> Sink:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
