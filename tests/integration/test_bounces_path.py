"""Bounces decided inline, through a real private Postfix and the real milter: a DSN to
``list-bounces[+…]@`` records the member's bounce event and is removed from the
transaction (never delivered to a mailbox); what names no member reaches the owners; a
bounce to a deleted list is refused at RCPT."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.enums import BounceKind, MemberRole
from mtaplugin.manage import lists, members
from mtaplugin.model import BounceEvent, MailingList
from mtaplugin.testing.lab import Lab
from tests.helpers import unique
from tests.integration.frontends import FrontEnd
from tests.integration.labs import PASSTHROUGH, make_list, waits

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "bounces"


def dsn_for(mlist: MailingList, member: str) -> bytes:
    """The Postfix DSN of the corpus, for ``member`` of ``mlist``, with its own Message-ID."""
    raw = (CORPUS / "postfix_user_unknown.eml").read_bytes()
    raw = raw.replace(b"anne@example.org", member.encode())
    raw = raw.replace(b"team-bounces", mlist.bounces_address.split("@")[0].encode())
    return raw.replace(b"<20261204090102.4Zq1L2abcd@", f"<{unique('dsn')}@".encode())


def member_events(
    sessions: sessionmaker[Session], mlist: MailingList, *, waiting_only: bool = True
) -> list[BounceEvent]:
    """The list's bounce events still waiting for the ``bounces`` job; with
    ``waiting_only=False`` also those it has processed already (the job may run between
    the DSN's arrival and the test's look)."""
    with sessions() as s:
        query = select(BounceEvent).where(BounceEvent.mailing_list_id == mlist.id)
        if waiting_only:
            query = query.where(BounceEvent.processed.is_(False))
        found = list(s.scalars(query))
        s.expunge_all()
        return found


def verp(mlist: MailingList, member: str) -> str:
    local, host = mlist.bounces_address.split("@")
    return f"{local}+{member.replace('@', '=')}@{host}"


@pytest.mark.usefixtures("_logs")
def test_a_dsn_records_the_members_bounce_and_is_delivered_nowhere(
    lab: Lab, db: Session, lab_sessions: sessionmaker[Session]
) -> None:
    mlist = make_list(db, "ann@example.org", "bob@example.org")
    other = f"{unique('postmaster')}@{PASSTHROUGH}"
    rcpts = [verp(mlist, "bob@example.org"), other]

    assert lab.send("", rcpts, dsn_for(mlist, "bob@example.org")) is None

    waits(lab, lambda: member_events(lab_sessions, mlist, waiting_only=False), timeout=30)
    (event,) = member_events(lab_sessions, mlist, waiting_only=False)
    assert (event.email, event.kind, event.status) == ("bob@example.org", BounceKind.hard, "5.1.1")
    # the other recipient got the DSN as it came; the -bounces address was removed
    waits(lab, lambda: lab.sink.to(other), timeout=30)
    assert b"Recipient address" in lab.sink.to(other)[0].data
    time.sleep(1)
    assert not [r for r in lab.sink.recipients() if mlist.list_name in r]
    # only the DSN's member: the other member has no event
    assert "ann@example.org" not in {e.email for e in member_events(lab_sessions, mlist)}


@pytest.mark.usefixtures("_logs")
def test_a_dsn_for_no_member_reaches_the_owners(
    lab: Lab, db: Session, lab_sessions: sessionmaker[Session]
) -> None:
    mlist = make_list(db, "cy@example.org")
    boss = f"{unique('boss')}@example.org"
    members.add(db, lists.get(db, mlist.fqdn_listname), boss, MemberRole.owner)
    db.commit()
    stranger = f"{unique('stranger')}@example.net"

    assert lab.send("", [mlist.bounces_address], dsn_for(mlist, stranger)) is None

    waits(lab, lambda: lab.sink.to(boss), timeout=60)
    (notice,) = lab.sink.to(boss)
    assert notice.mail_from in {"", "<>"}
    assert b"Uncaught bounce" in notice.data
    assert member_events(lab_sessions, mlist) == []


@pytest.mark.usefixtures("_logs")
def test_a_bounce_to_a_deleted_list_is_refused_at_rcpt(lab: Lab, db: Session) -> None:
    mlist = make_list(db, "dee@example.org")
    address = verp(mlist, "dee@example.org")
    lists.remove(db, mlist.fqdn_listname)
    db.commit()

    refused = lab.send("", [address], dsn_for(mlist, "dee@example.org"))

    assert refused is not None
    assert (refused.stage, refused.code) == ("rcpt", 550)
    assert "5.1.1" in refused.text


def test_every_front_end_records_a_members_bounce(front_end: FrontEnd) -> None:
    mlist = front_end.make_list("ann@example.org", "bob@example.org")
    address = verp(mlist, "ann@example.org")

    assert front_end.send("", [address], dsn_for(mlist, "ann@example.org")) is None

    front_end.waits(
        lambda: member_events(front_end.sessions, mlist, waiting_only=False), timeout=60
    )
    front_end.list_address_done(address)
    front_end.settle()
    (event,) = member_events(front_end.sessions, mlist, waiting_only=False)
    assert (event.email, event.kind, event.status) == ("ann@example.org", BounceKind.hard, "5.1.1")
    assert address not in front_end.lab.sink.recipients()


@pytest.fixture
def _logs(lab: Lab) -> object:
    """On failure, pytest shows this teardown output: the tails of both logs."""
    yield
    print("--- mtaplugin log ---\n" + lab.log()[-3000:])
    print("--- postfix log ---\n" + lab.postfix.log()[-3000:])
