"""One log line per decision, so that an admin can grep a post's fate.

Every post to a list gets, from the process that decided it (milter, LMTP, Exim, the pipe,
the news gateway), one line per list on the logger ``mtaplugin.decision``, in key=value
form (values with spaces are double-quoted)::

    decision queue_id=4ABCDEF message_id=<x@client.test> from=anne@example.com
      list=team@lists.example outcome=held rule=nonmember-moderation reply=250 smtp=250
      held_id=42

- ``outcome``: accepted, held, refused, dropped, deferred (4xx: the sender retries), or
  tempfail when no list could be decided (the database or DNS down: ``list=-``);
- ``rule``: the rules that decided (comma-separated; ``-`` when none did);
- ``reply``: this list's answer (its refusal or 4xx; 250 otherwise); ``smtp``: what the
  sending MTA was told for the whole transaction (a refused list among others is dropped
  under a 250);
- ``held_id``: the held post's id (``mtaplugin held show LIST ID``), ``outbox_id`` the
  copy queued for the members when it did not go in place.

``grep 'message_id=<x@client.test>' /var/log/...`` or ``journalctl -u mtaplugin -g
queue_id=4ABCDEF`` finds it.
"""

from __future__ import annotations

import logging
import re

from mtaplugin import daemon_log
from mtaplugin.posting.verdict import (
    Accept,
    Accepted,
    Deferred,
    Discard,
    Dropped,
    Held,
    ListOutcome,
    Refused,
    Reject,
    TempFail,
    Verdict,
)
from mtaplugin.vocabulary.envelope import Envelope

log = logging.getLogger("mtaplugin.decision")

_MESSAGE_ID = re.compile(rb"^message-id:[ \t]*(.*(?:\r?\n[ \t].*)*)", re.IGNORECASE | re.MULTILINE)
_PLAIN = re.compile(r"[^\s\"=\\]+")


def message_id(raw: bytes) -> str:
    """The Message-ID of a post, read from its header block ("" when none)."""
    crlf = raw.find(b"\r\n\r\n")
    # a bare-LF blank line counts only before the CRLF one (the body is not scanned)
    end = raw.find(b"\n\n", 0, crlf if crlf != -1 else len(raw))
    if end == -1:
        end = crlf
    head = raw if end == -1 else raw[:end]
    found = _MESSAGE_ID.search(head)
    if found is None:
        return ""
    return " ".join(found.group(1).decode("ascii", "replace").split())


def value(text: str) -> str:
    """A value as written in the line: bare when it has no space, quote or equals sign;
    otherwise double-quoted with ``\\`` and ``"`` escaped.  Empty: ``-``."""
    if not text:
        return "-"
    if _PLAIN.fullmatch(text):
        return text
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")
    return f'"{escaped}"'


def _smtp(verdict: Verdict) -> str:
    match verdict:
        case Reject(reply=reply) | TempFail(reply=reply):
            return f"{reply.code} {reply.enhanced}"
    return "250"


def _outcome(outcome: ListOutcome) -> tuple[str, str, str]:
    """(outcome, rule, reply) of one list."""
    rules = ",".join(dict.fromkeys(r.rule for r in outcome.reasons))
    match outcome:
        case Accepted():
            return "accepted", rules, "250"
        case Held():
            return "held", rules, "250"
        case Refused(reply=reply, rule=rule):
            return "refused", rule, f"{reply.code} {reply.enhanced}"
        case Dropped(filtered=filtered):
            return "dropped", rules or (f"filtered:{filtered.value}" if filtered else ""), "250"
        case Deferred(reply=reply):
            return "deferred", rules, f"{reply.code} {reply.enhanced}"
    raise AssertionError(outcome)  # pragma: no cover


def lines(envelope: Envelope, raw: bytes, verdict: Verdict) -> list[str]:
    """The lines of one decision: one per list; one ``tempfail`` line when the post could
    not be decided at all; none for mail that addressed no list.  (Written out directly,
    without a dictionary of fields: the milter writes one for every post.)"""
    head = (
        f"decision queue_id={value(envelope.queue_id)} message_id={value(message_id(raw))}"
        f" from={value(envelope.mail_from)}"
    )
    smtp = value(_smtp(verdict))
    if isinstance(verdict, TempFail):
        to = ",".join(r.strip("<>") for r in envelope.recipients)
        return [
            f"{head} list=- outcome=tempfail rule=- reply={smtp} smtp={smtp}"
            f" to={value(to)} why={value(verdict.reply.text)}"
        ]
    stored = verdict.stored if isinstance(verdict, Accept | Discard) else None
    found: list[str] = []
    for outcome in verdict.outcomes:
        kind, rule, reply = _outcome(outcome)
        text = (
            f"{head} list={value(outcome.recipient.strip('<>').lower())} outcome={kind}"
            f" rule={value(rule)} reply={value(reply)} smtp={smtp}"
        )
        if stored is not None:
            if outcome.recipient in stored.held:
                text += f" held_id={stored.held[outcome.recipient]}"
            if outcome.recipient in stored.outbox:
                text += f" outbox_id={stored.outbox[outcome.recipient]}"
        found.append(text)
    return found


def record(envelope: Envelope, raw: bytes, verdict: Verdict) -> None:
    """Log the decision's lines at INFO on ``mtaplugin.decision`` (written straight to the
    daemon's handlers when they are the only ones: :mod:`mtaplugin.daemon_log`)."""
    if not log.isEnabledFor(logging.INFO):
        return
    found = lines(envelope, raw, verdict)
    if found:
        daemon_log.write(log, found)
