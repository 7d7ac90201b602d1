"""Reading a bounce: who failed, and what the failure says of the address.  Pure: bytes
in, a :class:`Report` out, no database.

Two readers, the first that finds a recipient wins:

1. **RFC 3464** ``message/delivery-status``: per recipient ``Original-Recipient`` (the
   address we gave at RCPT, hence the member's) and ``Final-Recipient`` (after their
   aliases), ``Action``, ``Status`` and ``Diagnostic-Code``.  A ``Status`` of ``X.0.0``
   gives way to a more precise code quoted in the ``Diagnostic-Code`` (Postfix and
   Exchange often write ``5.0.0`` beside ``550 5.1.1 user unknown``).
2. **flufl.bounce** for everything else (Exim's and qmail's plain-text bounces, old
   Sendmail, Exchange and Yahoo formats, delay warnings), with its temporary/permanent
   split; the status code and the server's words are then looked for in the lines that
   follow the address in the bounce's text.

What we chose per status class
------------------------------
``Action`` says whether the sending MTA gave up (``failed``) or still tries (``delayed``);
the status code's subject says what failed.  A ``failed`` DSN with a ``4.X.Y`` status
(Postfix after ``maximal_queue_lifetime``) is read as ``5.X.Y``: the sender gave up.

=====================  ========  ===========================================================
status                 kind      why
=====================  ========  ===========================================================
4.x.x, ``delayed``,    delayed   the MTA still tries; recorded, never scored
``relayed``
``delivered``,         (none)    a success notice, not a bounce: nothing recorded
``expanded``
5.1.x                  hard      no such mailbox or domain (5.1.1, 5.1.2, O365's 5.1.10)
5.2.1                  hard      mailbox disabled
5.2.2                  delayed   mailbox full: RFC 3463 calls it a *persistent transient*
                                 failure and Mailman users ask that it not count; the
                                 owner sees it in the events, and a mailbox abandoned for
                                 good ends as 5.1.1 or 5.2.1 when its provider closes it
5.2.3, 5.3.4           policy    this message was too big: the address works
5.2.x, 5.3.x (others)  hard      the mailbox or its system does not take mail
5.4.x                  hard      no route, no MX, or undeliverable for days (5.4.7)
5.5.x                  hard      servers write 5.5.0 for "mailbox unavailable"
5.6.x                  policy    this message's content or encoding was refused
5.7.x                  policy    spam, blocklist, DMARC, "not authorized": the address
                                 works, the receiving site refused this mail
5.0.0 or none          hard      unless the server's words name a policy block (spam,
                                 blocked, blocklist, DMARC, reputation, RBL...): policy
=====================  ========  ===========================================================

Only ``hard`` raises a member's bounce score (:mod:`mtaplugin.bounces.inbound` records;
the scores are kept elsewhere).
"""

from __future__ import annotations

import email
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from email.message import Message

import flufl.bounce

from mtaplugin.enums import BounceKind

log = logging.getLogger(__name__)

#: the longest diagnostic kept (the server's words)
DIAGNOSTIC_MAX = 500

# An RFC 3463 code, not a piece of an IP address or a version number.
_CODE = re.compile(r"(?<![\w.])([245])\.(\d{1,3})\.(\d{1,3})(?!\.?\d)(?!\w)")
_REPLY = re.compile(r"(?<!\d)[45]\d\d[ -]")
_POLICY_WORDS = re.compile(
    r"spam|block(?:ed|list|listed)?\b|blacklist|\bdmarc\b|reputation|\brbl\b|spamhaus"
    r"|policy|rejected for content|not authori[sz]ed|denied",
    re.IGNORECASE,
)
_BOUNCER = re.compile(r"mailer-daemon|postmaster|mail delivery", re.IGNORECASE)
_AUTO_REPLY_HEADERS = ("x-autoreply", "x-autorespond", "x-vacation")


@dataclass(frozen=True)
class Failure:
    """One recipient the bounce reports."""

    #: the address we sent to (Original-Recipient, else Final-Recipient), lower-cased
    email: str
    kind: BounceKind
    #: the RFC 3463 code ("5.1.1"), "" when the bounce gave none
    status: str = ""
    #: the receiving server's words
    diagnostic: str = ""
    #: the Final-Recipient when it differs from ``email`` ("" otherwise)
    final: str = ""

    @property
    def addresses(self) -> tuple[str, ...]:
        return (self.email, self.final) if self.final else (self.email,)


@dataclass(frozen=True)
class Report:
    """What a bounce says."""

    message_id: str
    failures: tuple[Failure, ...]
    #: it looks like a non-delivery report (multipart/report, or from a mailer daemon)
    is_report: bool
    #: it is an auto-reply (a vacation message, ``Auto-Submitted: auto-replied`` from no
    #: mailer daemon), not a bounce
    auto_reply: bool


def status_in(text: str) -> str:
    """The first RFC 3463 code in ``text`` ("5.1.1"), or ""."""
    m = _CODE.search(text)
    return ".".join(m.groups()) if m else ""


def classify(action: str, status: str, diagnostic: str = "") -> BounceKind | None:
    """The kind of one recipient's failure (the table above); None for a success."""
    action = action.strip().lower()
    if action.startswith(("delivered", "expanded")):
        return None
    if action.startswith(("delayed", "relayed")):
        return BounceKind.delayed
    klass, _dot, rest = status.partition(".")
    if klass == "2":
        return None
    if klass == "4" and not action.startswith(("fail", "error")):
        return BounceKind.delayed
    subject, _dot, detail = rest.partition(".")
    code = f"{subject}.{detail}" if rest else ""
    if code == "2.2":
        return BounceKind.delayed
    if code in ("2.3", "3.4") or subject in ("6", "7"):
        return BounceKind.policy
    if subject in ("1", "2", "3", "4", "5"):
        return BounceKind.hard
    # 5.0.0, or no code at all: the server's words decide
    return BounceKind.policy if _POLICY_WORDS.search(diagnostic) else BounceKind.hard


def kind_of_reply(reply: str) -> tuple[BounceKind, str]:
    """A permanent SMTP refusal (``550 5.7.1 ...``) read as a bounce: its kind and code."""
    status = status_in(reply)
    kind = classify("failed", status, reply)
    return (kind or BounceKind.hard), status


def parse(raw: bytes) -> Report:
    """Read a bounce.  Never raises: what cannot be read gives no failures (and is then
    forwarded as unrecognized, rather than refused for ever with a 4xx)."""
    msg = email.message_from_bytes(raw)
    try:
        failures = _rfc3464(msg) or _flufl(msg)
    except Exception:
        log.exception("a bounce could not be read")
        failures = []
    sender = str(msg.get("from", ""))
    auto = str(msg.get("auto-submitted", "")).strip().lower()
    is_report = msg.get_content_type() == "multipart/report" or bool(_BOUNCER.search(sender))
    replied = (
        auto.startswith("auto-replied")
        or any(h in msg for h in _AUTO_REPLY_HEADERS)
        or str(msg.get("precedence", "")).strip().lower() == "auto_reply"
    )
    return Report(
        message_id=_clean(str(msg.get("message-id", ""))),
        failures=tuple(_unique(failures)),
        is_report=is_report,
        auto_reply=replied and not is_report,
    )


def cut(raw: bytes, limit: int) -> bytes:
    """``raw`` kept to about ``limit`` bytes (0: whole): the header and the start of the
    body, with a line saying how much was left out."""
    if limit <= 0 or len(raw) <= limit:
        return raw
    note = b"\n[... %d bytes not kept]\n" % (len(raw) - limit)
    return raw[:limit] + note


def _unique(failures: list[Failure]) -> Iterator[Failure]:
    seen: set[str] = set()
    for f in failures:
        if f.email not in seen:
            seen.add(f.email)
            yield f


def _clean(text: str) -> str:
    return " ".join(text.split())


def _address(value: str) -> str:
    """``rfc822; <Anne@Example.org>`` → ``anne@example.org`` ("" if it is none)."""
    _kind, _semi, addr = _clean(value).rpartition(";")
    addr = addr.strip().strip("<>").strip()
    return addr.lower() if "@" in addr and " " not in addr else ""


# --- RFC 3464 -----------------------------------------------------------------------------


def _status_blocks(msg: Message) -> Iterator[Message]:
    """The per-recipient blocks of every ``message/delivery-status`` part."""
    for part in msg.walk():
        if part.get_content_type() != "message/delivery-status":
            continue
        payload = part.get_payload()
        if isinstance(payload, list):
            blocks = [b for b in payload if isinstance(b, Message)]
        else:  # not parsed into blocks (encoded, or odd): read its text ourselves
            data = part.get_payload(decode=True)
            text = data.decode("utf-8", "replace") if isinstance(data, bytes) else str(payload)
            chunks = re.split(r"\r?\n\s*\r?\n", text.strip())
            blocks = [email.message_from_string(c.strip() + "\n") for c in chunks if c.strip()]
        # the first block is about the message; the recipients' follow
        yield from (b for b in blocks if "final-recipient" in b or "original-recipient" in b)


def _rfc3464(msg: Message) -> list[Failure]:
    found = []
    for block in _status_blocks(msg):
        final = _address(str(block.get("final-recipient", "")))
        original = _address(str(block.get("original-recipient", ""))) or _address(
            str(block.get("x-actual-recipient", ""))
        )
        address = original or final
        if not address:
            continue
        diagnostic = _clean(str(block.get("diagnostic-code", "")))
        _type, semi, words = diagnostic.partition(";")
        diagnostic = (words if semi else diagnostic).strip()[:DIAGNOSTIC_MAX]
        status = status_in(str(block.get("status", "")))
        quoted = status_in(diagnostic)
        if quoted and (not status or status.endswith(".0.0")) and quoted[0] == (status or "5")[0]:
            status = quoted
        action = str(block.get("action", ""))
        if not action and not status:
            continue
        kind = classify(action, status, diagnostic)
        if kind is None:
            continue
        found.append(Failure(address, kind, status, diagnostic, final if final != address else ""))
    return found


# --- flufl.bounce -------------------------------------------------------------------------


def _flufl(msg: Message) -> list[Failure]:
    try:
        temporary, permanent = flufl.bounce.all_failures(msg)
    except Exception:  # a detector that trips on an odd message must not stop us
        log.warning("flufl.bounce could not read a bounce", exc_info=True)
        return []
    text = _text(msg)
    found = []
    for addr_bytes, permanently in [(a, True) for a in sorted(permanent)] + [
        (a, False) for a in sorted(temporary)
    ]:
        address = addr_bytes.decode("ascii", "replace").strip().strip("<>").lower()
        if "@" not in address:
            continue
        status, diagnostic = _words_after(text, address)
        if permanently:
            kind = classify("failed", status, diagnostic) or BounceKind.hard
        else:
            kind = BounceKind.delayed
        found.append(Failure(address, kind, status, diagnostic))
    return found


def _text(msg: Message) -> str:
    """The bounce's own text parts (not the returned message)."""
    parts: list[str] = []

    def walk(part: Message) -> None:
        ctype = part.get_content_type()
        if ctype in ("message/rfc822", "text/rfc822-headers", "message/delivery-status"):
            return
        if part.is_multipart():
            for sub in part.get_payload():
                if isinstance(sub, Message):
                    walk(sub)
        elif part.get_content_maintype() == "text":
            data = part.get_payload(decode=True)
            if isinstance(data, bytes):
                parts.append(_decode(data, part.get_content_charset()))

    walk(msg)
    return "\n".join(parts)


def _decode(data: bytes, charset: str | None) -> str:
    try:
        return data.decode(charset or "utf-8", "replace")
    except LookupError:  # a charset Python does not know
        return data.decode("utf-8", "replace")


def _words_after(text: str, address: str, lines: int = 8) -> tuple[str, str]:
    """The status code and the server's reply in the few lines after ``address``."""
    at = text.lower().find(address)
    if at < 0:
        return "", ""
    window = text[at + len(address) :].splitlines()[: lines + 1]
    for line in window:
        if _REPLY.search(line) or status_in(line):
            words = _clean(line)[:DIAGNOSTIC_MAX]
            return status_in(words), words
    return "", ""
