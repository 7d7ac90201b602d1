"""Where the outbox's copies go: a :class:`Transport`, and the SMTP one that submits to the
MTA's re-injection listener.

A delivery pass opens one :class:`Connection` and sends every row of the pass over it,
one transaction per chunk of at most :attr:`Transport.max_recipients` recipients, with
:meth:`Connection.reset` between rows.  The connection is opened at the first transaction
(a pass whose rows all went elsewhere never connects), and opened again after it broke.

A transaction's answer is :class:`Replies`: who was taken (250), who is to be tried again
(4xx), who was refused for good (5xx), and who was never named (the MTA closed the
connection before them).  Two failures are exceptions: :class:`Unreachable` (no
connection could be opened: the rest of the pass waits) and :class:`ConnectionLost` (the
connection broke during the transaction; whether the MTA took the chunk is unknown).
"""

from __future__ import annotations

import contextlib
import re
import smtplib
from dataclasses import dataclass, field
from typing import Protocol

from mtaplugin.config import OutboxSettings

#: a line feed without its carriage return
_BARE_LF = re.compile(rb"(?<!\r)\n")

#: the MAIL FROM parameter asking Postfix to VERP each recipient, with the delimiters
#: ``+`` and ``=`` (``list-bounces+anne=example.org@host``)
XVERP = "XVERP=+="


class Unreachable(Exception):
    """The MTA cannot be reached at all: the rest of the pass waits."""


class ConnectionLost(Exception):
    """The connection broke during a transaction (it was dropped; the next transaction
    opens a new one)."""


@dataclass
class Replies:
    """What the MTA answered to one transaction."""

    accepted: list[str] = field(default_factory=list)
    #: recipient → reply, for 4xx (tried again)
    deferred: dict[str, str] = field(default_factory=dict)
    #: recipient → reply, for 5xx (not tried again)
    refused: dict[str, str] = field(default_factory=dict)
    #: recipients never named, because the MTA closed the connection (421) before them
    untried: list[str] = field(default_factory=list)


class Connection(Protocol):
    """One pass's connection to the MTA."""

    def send(
        self, mail_from: str, recipients: list[str], raw: bytes, *, xverp: bool = False
    ) -> Replies:
        """One transaction; with ``xverp``, ``MAIL FROM:<...> XVERP=+=`` (the MTA writes
        each recipient's VERPed sender).  Raises :class:`Unreachable` or
        :class:`ConnectionLost`."""
        ...

    def reset(self) -> None:
        """Between rows: start afresh (a connection found dead is dropped)."""
        ...

    def drop(self) -> None:
        """Forget the connection without a goodbye (after an error in the middle)."""
        ...

    def close(self) -> None:
        """The pass is over: say goodbye."""
        ...


class Transport(Protocol):
    """Opens one connection per delivery pass."""

    #: at most this many recipients in one transaction
    max_recipients: int

    def open(self) -> Connection: ...


def describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _reply(code: int, text: bytes | str) -> str:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return f"{code} {' '.join(text.split())}"[:200]


def _bucket(replies: Replies, code: int) -> dict[str, str]:
    return replies.refused if 500 <= code < 600 else replies.deferred


@dataclass
class SmtpTransport:
    """SMTP to the MTA's re-injection listener (``[outbound] host``, ``port``), a
    listener without milters that queues what it is given."""

    host: str
    port: int
    timeout: float = 30.0
    max_recipients: int = 500
    client: type[smtplib.SMTP] = smtplib.SMTP

    @classmethod
    def from_settings(cls, out: OutboxSettings) -> SmtpTransport:
        return cls(out.host, out.port, out.timeout, out.max_recipients)

    def open(self) -> SmtpConnection:
        return SmtpConnection(self)


class SmtpConnection:
    """A pass's SMTP connection, opened when first needed."""

    def __init__(self, transport: SmtpTransport) -> None:
        self.transport = transport
        self.smtp: smtplib.SMTP | None = None

    def _connection(self) -> smtplib.SMTP:
        if self.smtp is None or self.smtp.sock is None:
            t = self.transport
            smtp = t.client(timeout=t.timeout)
            try:
                smtp.connect(t.host, t.port)
                smtp.ehlo_or_helo_if_needed()
            except (OSError, smtplib.SMTPException) as exc:
                smtp.close()
                raise Unreachable(describe(exc)) from exc
            self.smtp = smtp
        return self.smtp

    def send(
        self, mail_from: str, recipients: list[str], raw: bytes, *, xverp: bool = False
    ) -> Replies:
        smtp = self._connection()
        # SMTP lines end in CRLF (RFC 5321 2.3.8); Sendmail refuses a bare LF since the
        # SMTP smuggling fixes (421 4.5.0), and notices are rendered with LF line ends.
        raw = _BARE_LF.sub(b"\r\n", raw)
        try:
            return self._transaction(smtp, mail_from, recipients, raw, xverp)
        except (OSError, smtplib.SMTPException) as exc:
            self.drop()
            raise ConnectionLost(describe(exc)) from exc

    @staticmethod
    def _transaction(
        smtp: smtplib.SMTP, mail_from: str, recipients: list[str], raw: bytes, xverp: bool
    ) -> Replies:
        """One SMTP transaction; connection failures propagate (OSError, SMTPException)."""
        replies = Replies()
        ascii_only = mail_from.isascii() and all(r.isascii() for r in recipients)
        options = [] if ascii_only else ["SMTPUTF8"]
        if xverp:
            # Postfix's VERP with the delimiters of mtaplugin.bounces.verp: the sender
            # list-bounces@host becomes list-bounces+anne=example.org@host for anne.
            options.append(XVERP)
        try:
            refused = smtp.sendmail(mail_from, recipients, raw, options)
        except smtplib.SMTPRecipientsRefused as exc:
            refused = exc.recipients  # nothing was sent
            replies.untried = [r for r in recipients if r not in refused]
        except smtplib.SMTPResponseException as exc:  # MAIL FROM or the data refused: all
            reply = _reply(exc.smtp_code, exc.smtp_error)
            _bucket(replies, exc.smtp_code).update(dict.fromkeys(recipients, reply))
            return replies
        except smtplib.SMTPNotSupportedError:
            replies.refused.update(dict.fromkeys(recipients, "the MTA does not offer SMTPUTF8"))
            return replies
        else:
            replies.accepted = [r for r in recipients if r not in refused]
        for rcpt, (code, text) in refused.items():
            _bucket(replies, code)[rcpt] = _reply(code, text)
        return replies

    def reset(self) -> None:
        """RSET; a connection that does not answer 250 is dropped (and the next
        transaction opens a new one)."""
        if self.smtp is None:
            return
        try:
            code = self.smtp.rset()[0]
        except (OSError, smtplib.SMTPException):
            code = 0
        if code != 250:
            self.drop()

    def drop(self) -> None:
        if self.smtp is not None:
            self.smtp.close()
            self.smtp = None

    def close(self) -> None:
        if self.smtp is not None:
            with contextlib.suppress(OSError, smtplib.SMTPException):
                self.smtp.quit()
            self.drop()
