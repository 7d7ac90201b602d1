"""Digests through the real private Postfix, as a new user meets them: a member switches to
MIME digests by email, posts reach the regular members at once and not her, and
``mtaplugin digests send`` (then the periodic job, on a test clock) delivers one
multipart/digest with the posts in order, a table of contents and the masthead, DKIM-signed
by the list domain; a plain-digest member gets an RFC 1153 text."""

from __future__ import annotations

import email
from datetime import UTC, datetime, timedelta
from email.message import Message

import dkim
from sqlalchemy.orm import Session

from mtaplugin import config, wiring
from mtaplugin.clock import ManualClock
from mtaplugin.digests import store
from mtaplugin.enums import DeliveryMode, MemberRole
from mtaplugin.manage import dkim as dkim_keys
from mtaplugin.manage import domains, lists, members
from mtaplugin.model import MailingList
from mtaplugin.testing import wait_for
from mtaplugin.testing.dns import DnsServer
from mtaplugin.testing.lab import Lab
from mtaplugin.testing.mailauth import publish_domain_key
from mtaplugin.vocabulary.job import JobContext
from mtaplugin.worker.registry import SEND_DIGESTS
from tests.helpers import make_post, unique
from tests.integration.conftest import TRUSTED_VERIFIER
from tests.integration.test_rules_path import cli

ANN, BOB, DEE, PAT = "ann@example.org", "bob@example.org", "dee@example.net", "pat@example.org"


def _list(db: Session, lab_dns: DnsServer) -> MailingList:
    mail_host = f"{unique('dig')}.test"
    domains.create(db, mail_host, "digest tests")
    dkim_keys.create(db, mail_host, activate=True)
    mlist = lists.create(db, f"team@{mail_host}")
    mlist.display_name = "Team"
    for address in (ANN, BOB, DEE):
        members.add(db, mlist, address)
    members.add(db, mlist, PAT, delivery_mode=DeliveryMode.plaintext_digests)
    db.commit()
    publish_domain_key(lab_dns.zone, db, mail_host)
    return mlist


def _digests(lab: Lab, address: str) -> list[bytes]:
    return [m.data for m in lab.sink.to(address) if b"Digest, Vol" in m.data]


def _one_digest(lab: Lab, address: str, issue: int) -> bytes:
    marker = f"Team Digest, Vol 1, Issue {issue}".encode()
    found = wait_for(lambda: [d for d in _digests(lab, address) if marker in d], timeout=60)
    assert isinstance(found, list) and len(found) == 1, f"{address}: {found!r}"
    return found[0]


def _verified(data: bytes, lab_dns: DnsServer, mail_host: str) -> Message:
    assert dkim.verify(data, dnsfunc=lab_dns.resolver().dkim_dnsfunc), "DKIM does not verify"
    msg = email.message_from_bytes(data)
    assert f"d={mail_host}" in "".join(str(msg["DKIM-Signature"]).split())
    return msg


def test_a_member_switches_to_digests_by_email_and_gets_them(
    lab: Lab, db: Session, lab_dns: DnsServer
) -> None:
    mlist = _list(db, lab_dns)
    # Dee asks for MIME digests by mail; her domain's DKIM pass makes her authenticated.
    command = make_post(
        DEE,
        mlist.request_address,
        subject="set digest mime",
        headers={
            "Authentication-Results": (
                f"{TRUSTED_VERIFIER}; dkim=pass header.d=example.net; "
                "dmarc=pass header.from=example.net"
            )
        },
    )
    assert lab.send(DEE, [mlist.request_address], command) is None
    reply = wait_for(lambda: [m.data for m in lab.sink.to(DEE) if b"set digest mime" in m.data])
    assert isinstance(reply, list) and b"done" in reply[0]
    with lab_sessions_of(lab) as s:
        mode = members.get(s, lists.get(s, mlist.fqdn_listname), DEE, MemberRole.member)
        assert mode.delivery_mode is DeliveryMode.mime_digests

    subjects = [unique(f"post{n}") for n in (1, 2, 3)]
    for subject in subjects:
        post = make_post(ANN, mlist.posting_address, subject=subject)
        assert lab.send(ANN, [mlist.posting_address], post) is None
    # At once to the regular members; not to the digest members.
    wait_for(lambda: all(any(s.encode() in m.data for m in lab.sink.to(BOB)) for s in subjects))
    for who in (DEE, PAT):
        assert not [m for m in lab.sink.to(who) if any(s.encode() in m.data for s in subjects)]
    # The worker keeps them for the digest a moment after each 250 (the accepted posts'
    # journal); a send before that would find fewer.
    wait_for(lambda: kept(lab, mlist) == 3, timeout=30)

    sent = cli(lab, "digests", "send", mlist.fqdn_listname)
    assert sent.returncode == 0, sent.stderr
    assert "sent vol 1, issue 1: 3 posts to 2 digest members" in sent.stdout

    msg = _verified(_one_digest(lab, DEE, 1), lab_dns, mlist.mail_host)
    assert msg["Subject"] == "Team Digest, Vol 1, Issue 1"
    assert msg.get_content_type() == "multipart/mixed"
    parts = msg.get_payload()
    assert isinstance(parts, list)
    masthead = parts[0].get_payload(decode=True).decode()
    assert f"Send posts for the Team list to {mlist.posting_address}" in masthead
    toc = parts[1].get_payload(decode=True).decode()
    assert "Today's Topics" in toc
    assert toc.index(subjects[0]) < toc.index(subjects[1]) < toc.index(subjects[2])
    (inner,) = [p for p in parts if p.get_content_type() == "multipart/digest"]
    posts = inner.get_payload()
    assert [p.get_content_type() for p in posts] == ["message/rfc822"] * 3
    assert [str(p.get_payload()[0]["Subject"]) for p in posts] == [f"[Team] {s}" for s in subjects]

    plain = _verified(_one_digest(lab, PAT, 1), lab_dns, mlist.mail_host)
    assert plain.get_content_type() == "text/plain"
    text = plain.get_payload(decode=True).decode().replace("\r\n", "\n")
    assert "Today's Topics:" in text and "\n" + "-" * 70 + "\n" in text
    assert text.index(f"Subject: [Team] {subjects[0]}") < text.index(f"[Team] {subjects[2]}\n")
    assert "End of Team Digest, Vol 1, Issue 1" in text

    # The periodic job, on a test clock, sends what came since.
    late = unique("late")
    assert (
        lab.send(ANN, [mlist.posting_address], make_post(ANN, mlist.posting_address, late)) is None
    )
    wait_for(lambda: any(late.encode() in m.data for m in lab.sink.to(BOB)))
    wait_for(lambda: kept(lab, mlist) == 1, timeout=30)
    clock = ManualClock(datetime.now(UTC) + timedelta(hours=1))
    world = wiring.build(
        config.load(None, environ={"MTAPLUGIN_DATABASE_URL": lab.database_url}), clock=clock
    )
    try:
        assert SEND_DIGESTS.run(JobContext(world, clock())) >= 1
    finally:
        world.close()
    second = _verified(_one_digest(lab, DEE, 2), lab_dns, mlist.mail_host)
    assert late.encode() in second.as_bytes()
    assert len(_digests(lab, DEE)) == 2  # every post once: nothing sent again


def kept(lab: Lab, mlist: MailingList) -> int:
    """How many posts wait for the list's next digest."""
    from mtaplugin.db import make_engine, sessionmaker_for

    engine = make_engine(lab.database_url)
    try:
        with sessionmaker_for(engine)() as s:
            return store.pending(s, mlist.id).posts
    finally:
        engine.dispose()


def lab_sessions_of(lab: Lab) -> Session:
    from mtaplugin.db import make_engine, sessionmaker_for

    return sessionmaker_for(make_engine(lab.database_url))()
