"""``mtaplugin inject [RECIPIENT]``: the pipe front end (Exim's ``pipe`` transport).

The post comes on stdin, the list address from the argument or ``$RECIPIENT``, the
envelope sender from ``-f`` or ``$SENDER``, the queue id from ``$MESSAGE_ID`` (Exim sets
all three for a pipe; it refuses to put the tainted address on the command line).  The
answer is the exit status, in sysexits(3) terms, with the SMTP-style text on stderr:

=====  ==============  ===========================================================
 0     EX_OK           accepted (into the outbox, expanded and decorated), held or
                       discarded
 65    EX_DATAERR      refused: the post itself is unusable (no From: address)
 67    EX_NOUSER       refused: the address names no list (5.1.1)
 77    EX_NOPERM       refused by a list rule (the text names the rule)
 75    EX_TEMPFAIL     try again later (database or DNS down, internal error)
=====  ==============  ===========================================================

Exim's pipe transport treats the codes in ``temp_errors`` (default ``75:73``) as a
deferral and retries the delivery later; any other non-zero status is a permanent
failure, and Exim bounces the post to the envelope sender with the text on stderr
(``return_fail_output``).
"""

from __future__ import annotations

import os
import sys
from typing import BinaryIO, TextIO

from mtaplugin.engine import ListEngine
from mtaplugin.frontends.common import decide_one, refusal
from mtaplugin.i18n import _
from mtaplugin.posting.verdict import Reply, TemporaryReply
from mtaplugin.vocabulary.envelope import Envelope
from mtaplugin.wiring import World, list_engine

EX_OK = 0
EX_USAGE = 64
EX_DATAERR = 65
EX_NOUSER = 67
EX_TEMPFAIL = 75
EX_NOPERM = 77

#: rules whose refusal means the post itself is unusable
_DATA_RULES = ("no-senders",)


def exit_status(reply: Reply, rule: str = "") -> int:
    """The sysexits status for a refusal (``rule``: the rule that decided it)."""
    if isinstance(reply, TemporaryReply):
        return EX_TEMPFAIL
    if reply.enhanced == "5.1.1":
        return EX_NOUSER
    if rule in _DATA_RULES:
        return EX_DATAERR
    return EX_NOPERM


def strip_from_line(raw: bytes) -> bytes:
    """Drop an mbox ``From `` line a pipe may put in front of the message."""
    if raw.startswith(b"From "):
        end = raw.find(b"\n")
        return raw[end + 1 :] if end >= 0 else b""
    return raw


def run(
    engine: ListEngine,
    recipient: str,
    sender: str,
    stdin: BinaryIO,
    stderr: TextIO,
    queue_id: str = "",
) -> int:
    raw = strip_from_line(stdin.read())
    reply = refusal(engine, recipient)
    rule = ""
    if reply is None:
        # Exim's own Received: is on top (it queued the post before the pipe).
        envelope = Envelope(mail_from=f"<{sender}>", queue_id=queue_id, local_received=1)
        answer = decide_one(engine, envelope, recipient, raw)
        reply, rule = answer.reply, answer.rule
    if reply is None:
        return EX_OK
    print(str(reply), file=stderr)
    return exit_status(reply, rule)


def main(world: World, recipient: str | None, sender: str | None) -> int:
    if sender is None:
        sender = os.environ.get("SENDER", "")
    recipient = recipient or os.environ.get("RECIPIENT", "")
    if not recipient:
        print(_("mtaplugin: error: no RECIPIENT argument and no $RECIPIENT"), file=sys.stderr)
        return EX_USAGE
    engine = list_engine(world)
    try:
        return run(
            engine,
            recipient,
            sender,
            sys.stdin.buffer,
            sys.stderr,
            queue_id=os.environ.get("MESSAGE_ID", ""),
        )
    finally:
        engine.close()
