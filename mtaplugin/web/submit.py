"""Submitting a post written on the web to the MTA, as any mailer submits one.

The post goes by SMTP to the MTA's public listener (``[web] submit_host``,
``submit_port``: port 25 on loopback by default), the one whose milter (Postfix,
Sendmail) or ACL (Exim) decides every post to a list.  So the list's rules decide a web
post as they decide any other: a nonmember's is held, a banned address's refused.  The
outbox's re-injection listener (``[outbox] port``) would be wrong: it has no milter and
queues what it is given, so a post there would skip every rule.

:class:`Submitted` is what the MTA answered: the reply's code and text, and the stage of
the transaction that gave it (``connect`` when no connection could be made).
"""

from __future__ import annotations

import contextlib
import re
import smtplib
from dataclasses import dataclass
from typing import Protocol

from mtaplugin.config import WebSettings

_BARE_LF = re.compile(rb"(?<!\r)\n")


@dataclass(frozen=True)
class Submitted:
    """The MTA's answer: 250 at end of data when it took the post."""

    code: int
    text: str
    #: connect, mail, rcpt or data
    stage: str = "data"

    @property
    def taken(self) -> bool:
        return self.code == 250 and self.stage == "data"

    @property
    def refused(self) -> bool:
        """Refused for good (5xx): sending it again changes nothing."""
        return 500 <= self.code < 600

    def __str__(self) -> str:
        return f"{self.code} {self.text}" if self.code else self.text


class Submitter(Protocol):
    def submit(self, mail_from: str, recipient: str, raw: bytes) -> Submitted: ...


def _text(reply: bytes | str) -> str:
    text = reply.decode("utf-8", "replace") if isinstance(reply, bytes) else reply
    return " ".join(text.split())[:500]


@dataclass(frozen=True)
class SmtpSubmitter:
    """One SMTP transaction per post, to ``host``:``port``."""

    host: str
    port: int
    timeout: float = 30.0
    helo: str = ""

    @classmethod
    def from_settings(cls, web: WebSettings) -> SmtpSubmitter:
        return cls(web.submit_host, web.submit_port, web.submit_timeout)

    def submit(self, mail_from: str, recipient: str, raw: bytes) -> Submitted:
        raw = _BARE_LF.sub(b"\r\n", raw)
        try:
            smtp = smtplib.SMTP(self.host, self.port, timeout=self.timeout)
        except (OSError, smtplib.SMTPException) as exc:
            return Submitted(0, f"{self.host}:{self.port}: {exc}", "connect")
        try:
            return self._transaction(smtp, mail_from, recipient, raw)
        except (OSError, smtplib.SMTPException) as exc:
            return Submitted(0, f"{self.host}:{self.port}: {exc}", "connect")
        finally:
            with contextlib.suppress(OSError, smtplib.SMTPException):
                smtp.quit()
            smtp.close()

    def _transaction(
        self, smtp: smtplib.SMTP, mail_from: str, recipient: str, raw: bytes
    ) -> Submitted:
        code, reply = smtp.ehlo(self.helo)
        if code != 250:
            code, reply = smtp.helo(self.helo)
            if code != 250:
                return Submitted(code, _text(reply), "connect")
        options = [] if mail_from.isascii() and recipient.isascii() else ["SMTPUTF8"]
        if "8bitmime" in smtp.esmtp_features:
            options.append("BODY=8BITMIME")
        code, reply = smtp.mail(mail_from, options)
        if code != 250:
            return Submitted(code, _text(reply), "mail")
        code, reply = smtp.rcpt(recipient)
        if code not in (250, 251):
            return Submitted(code, _text(reply), "rcpt")
        code, reply = smtp.data(raw)
        return Submitted(code, _text(reply), "data")
