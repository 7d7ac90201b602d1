"""An in-memory MTA for the outbox's tests: a :class:`~mtaplugin.outbox.Transport` that
keeps what it is given, as the aiosmtpd sink does, without a socket.

It answers as smtplib reports a real MTA's replies: ``refuse`` maps a recipient to its
reply (``"451 4.2.0 try later"``: deferred; ``"550 ..."``: refused; ``"421 ..."``: the MTA
hangs up, and the recipients after it are never named).  ``before_send`` and
``after_send`` are called with the number of each transaction (from 1), before the MTA
answers and after it took the copy: a test raises there to break the connection
(:class:`~mtaplugin.relay.smtp.ConnectionLost`) or to stand for a crash.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from mtaplugin.bounces import verp
from mtaplugin.relay.smtp import ConnectionLost, Replies, Unreachable
from mtaplugin.testing.sink import Received

Hook = Callable[[int], None]


class FakeTransport:
    def __init__(self, max_recipients: int = 500) -> None:
        self.max_recipients = max_recipients
        self.messages: list[Received] = []
        #: recipient → SMTP reply, to refuse some addresses
        self.refuse: dict[str, str] = {}
        #: when set, no connection can be opened (the text says why)
        self.unreachable = ""
        self.before_send: Hook | None = None
        self.after_send: Hook | None = None
        #: connections opened, resets between rows, transactions begun
        self.connects = 0
        self.resets = 0
        self.transactions = 0
        self._lock = threading.Lock()

    def open(self) -> FakeConnection:
        return FakeConnection(self)

    def recipients(self) -> set[str]:
        with self._lock:
            return {r for m in self.messages for r in m.recipients}

    def to(self, address: str) -> list[Received]:
        with self._lock:
            return [m for m in self.messages if address in m.recipients]

    def _begin(self) -> int:
        with self._lock:
            self.transactions += 1
            return self.transactions

    def _keep(self, message: Received) -> None:
        with self._lock:
            self.messages.append(message)


class FakeConnection:
    def __init__(self, mta: FakeTransport) -> None:
        self.mta = mta
        self.connected = False

    def send(
        self, mail_from: str, recipients: list[str], raw: bytes, *, xverp: bool = False
    ) -> Replies:
        """One transaction; with ``xverp``, as Postfix does: one transaction taken, and
        each recipient's copy leaves with its own VERPed sender."""
        mta = self.mta
        if not self.connected:
            if mta.unreachable:
                raise Unreachable(mta.unreachable)
            mta.connects += 1
            self.connected = True
        number = mta._begin()
        if mta.before_send is not None:
            try:
                mta.before_send(number)
            except ConnectionLost:
                self.connected = False
                raise
        replies = Replies()
        refused: dict[str, str] = {}
        hung_up = False
        for rcpt in recipients:
            reply = mta.refuse.get(rcpt.lower(), "")
            if reply:
                refused[rcpt] = reply
            if reply.startswith("421"):  # the MTA hangs up: no data goes
                hung_up = True
                break
        for rcpt, text in refused.items():
            (replies.refused if text.startswith("5") else replies.deferred)[rcpt] = text
        if hung_up:
            self.connected = False
            replies.untried = [r for r in recipients if r not in refused]
            return replies
        replies.accepted = [r for r in recipients if r not in refused]
        if replies.accepted:
            if xverp:
                for rcpt in replies.accepted:
                    r = rcpt.lower()
                    mta._keep(Received(verp.encode(mail_from, r), (r,), raw))
            else:
                mta._keep(Received(mail_from, tuple(r.lower() for r in replies.accepted), raw))
            if mta.after_send is not None:
                mta.after_send(number)
        return replies

    def reset(self) -> None:
        if self.connected:
            self.mta.resets += 1

    def drop(self) -> None:
        self.connected = False

    def close(self) -> None:
        self.connected = False
