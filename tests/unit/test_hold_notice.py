"""The moderators' hold notice (``list:admin:action:post``) as the engine queues it: the
post attached as a message/rfc822 part that RFC 2046 §5.2.1 allows (7bit or 8bit, never
base64 or quoted-printable), unchanged, and links to the web moderation queue."""

from __future__ import annotations

from email import message_from_bytes, policy
from email.message import EmailMessage

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.engine import ListEngine
from mtaplugin.manage import lists
from mtaplugin.model import OutboxMessage
from mtaplugin.notices import build, transfer_encoding_of
from mtaplugin.posting.verdict import Discard
from mtaplugin.vocabulary.envelope import Envelope
from tests.helpers import make_post, send_hold_notices
from tests.unit.sites import Site, make_site


def hold_and_read_notice(site: Site, raw: bytes) -> tuple[int, EmailMessage]:
    engine = ListEngine(site.sessions)
    env = Envelope(mail_from="stranger@example.net", recipients=[f"<{site.address}>"])
    verdict = engine.decide(env, raw)
    assert isinstance(verdict, Discard)
    (held_id,) = verdict.stored.held.values()
    send_hold_notices(site.sessions)  # the worker's part, a moment after the answer
    with site.sessions() as s:
        mlist = lists.get(s, site.address)
        (row,) = s.scalars(
            select(OutboxMessage).where(
                OutboxMessage.mailing_list_id == mlist.id, OutboxMessage.kind == "notice"
            )
        )
        notice = message_from_bytes(row.raw, policy=policy.default)
    assert isinstance(notice, EmailMessage)
    return held_id, notice


def attached(notice: EmailMessage) -> EmailMessage:
    (part,) = [p for p in notice.iter_parts() if p.get_content_type() == "message/rfc822"]
    assert isinstance(part, EmailMessage)
    return part


def test_a_non_ascii_post_is_attached_8bit_unchanged(module_sessions: sessionmaker[Session]):
    site = make_site(module_sessions, base_url="https://lists.example/")
    post = make_8bit("stranger@example.net", site.address)
    held_id, notice = hold_and_read_notice(site, post)
    part = attached(notice)
    assert part["Content-Transfer-Encoding"] == "8bit"
    assert notice["Content-Transfer-Encoding"] == "8bit"  # the multipart says what it holds
    (inner,) = part.iter_parts()
    assert "Schöne Grüße aus Köln" in inner.get_body(("plain",)).get_content()  # type: ignore[union-attr]
    assert "Schöne Grüße aus Köln".encode() in notice.as_bytes()  # not re-encoded
    text = notice.get_body(("plain",)).get_content()  # type: ignore[union-attr]
    queue = f"https://lists.example/lists/{site.list_id}/held"
    assert f"{queue}/{held_id}" in text and f"waits for a decision:\n\n    {queue}\n" in text


def test_an_ascii_post_is_attached_7bit(module_sessions: sessionmaker[Session]):
    site = make_site(module_sessions)
    _held_id, notice = hold_and_read_notice(
        site, make_post("stranger@example.net", site.address, subject="plain")
    )
    assert attached(notice)["Content-Transfer-Encoding"] == "7bit"
    assert notice["Content-Transfer-Encoding"] in (None, "7bit")
    # No web UI for the domain (no base_url): no link to a page that is not there.
    assert "/held" not in notice.get_body(("plain",)).get_content()  # type: ignore[union-attr]


def make_8bit(sender: str, to: str) -> bytes:
    return (
        f"From: {sender}\r\nTo: <{to}>\r\nSubject: =?utf-8?q?Gr=C3=BC=C3=9Fe?=\r\n"
        "Message-ID: <8bit@client.test>\r\nMIME-Version: 1.0\r\n"
        "Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n"
        "Schöne Grüße aus Köln\r\n"
    ).encode()


def test_a_post_that_is_not_even_8bit_is_attached_as_a_file():
    long_line = b"From: a@example.net\r\nSubject: x\r\n\r\n" + b"x" * 1200 + b"\r\n"
    assert transfer_encoding_of(long_line) is None
    assert transfer_encoding_of(b"Subject: x\r\n\r\nnul\0\r\n") is None
    notice = message_from_bytes(
        build("o@example.org", "o@example.org", "t", "body", attach=long_line),
        policy=policy.default,
    )
    assert isinstance(notice, EmailMessage)
    kinds = [p.get_content_type() for p in notice.iter_parts()]
    assert kinds == ["text/plain", "application/octet-stream"]
    (_text, part) = notice.iter_parts()
    assert part.get_filename() == "post.eml" and part.get_content() == long_line
