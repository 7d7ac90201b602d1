"""VERP by the outbox worker: a VERPed list post leaves with each member's own envelope
sender, written by the MTA (``outbox.xverp``: one transaction, ``XVERP``) or by the worker
(one transaction per member).  Everything else leaves from the row's sender."""

from __future__ import annotations

import smtplib
from collections.abc import Sequence
from typing import ClassVar

from sqlalchemy.orm import Session, sessionmaker

from mtaplugin import outbox
from mtaplugin.clock import ManualClock
from mtaplugin.copies.return_path import VerpPolicy
from mtaplugin.enums import OutboxStatus
from mtaplugin.model import MailingList
from mtaplugin.relay import smtp
from mtaplugin.relay.deliver import Delivery
from mtaplugin.relay.smtp import SmtpTransport
from mtaplugin.testing.sink import Sink
from mtaplugin.testing.transport import FakeTransport
from mtaplugin.vocabulary.own_copy import OwnCopyInfo
from tests.helpers import make_post
from tests.unit.outbox.util import BOUNCES, Mta, enqueue, outbound, row, transport_for
from tests.unit.sites import Roster, make_site

PEOPLE = ["anne@example.com", "Bob@Example.org", "cy@example.net"]
VERPED = {
    "anne@example.com": "team-bounces+anne=example.com@lists.test",
    "bob@example.org": "team-bounces+bob=example.org@lists.test",
    "cy@example.net": "team-bounces+cy=example.net@lists.test",
}


def delivery(
    sessions: sessionmaker[Session],
    mta: Mta,
    clock: ManualClock,
    verp: VerpPolicy,
    **values: object,
) -> Delivery:
    out = outbound(0 if isinstance(mta, FakeTransport) else mta.port, **values)
    transport = transport_for(mta, out.max_recipients)
    return Delivery(sessions, out, transport=transport, clock=clock, verp=verp)


def own_copies(
    sessions: sessionmaker[Session],
    mlist: MailingList,
    info: OwnCopyInfo,
    clock: ManualClock,
    post_number: int,
) -> None:
    """A post to ``PEOPLE`` queued as own (personalized) copies."""
    with sessions.begin() as s:
        outbox.enqueue(
            s,
            mlist.bounces_address,
            PEOPLE,
            make_post("anne@example.com", mlist.posting_address),
            kind="post",
            mailing_list_id=mlist.id,
            now=clock(),
            post_number=post_number,
            personalize=info.as_record(),
        )


def senders(mta: Mta) -> dict[str, str]:
    return {r: m.mail_from for m in mta.messages for r in m.recipients}


def test_a_verped_post_goes_to_each_member_from_its_own_sender(
    sessions: sessionmaker[Session], mta: Mta, clock: ManualClock
) -> None:
    """Without XVERP (Exim, Sendmail): one transaction per member, over the real SMTP
    sink as well as the in-memory MTA."""
    rid = enqueue(sessions, PEOPLE, now=clock(), kind="post", post_number=1)
    assert delivery(sessions, mta, clock, VerpPolicy(interval=2)).run().sent == 1
    assert senders(mta) == VERPED
    assert len(mta.messages) == 3
    assert row(sessions, rid).status is OutboxStatus.sent


def test_a_post_that_is_not_verped_goes_once_from_the_bounces_address(
    sessions: sessionmaker[Session], mta: Mta, clock: ManualClock
) -> None:
    enqueue(sessions, PEOPLE, now=clock(), kind="post", post_number=2)
    assert delivery(sessions, mta, clock, VerpPolicy(interval=2)).run().sent == 1
    (got,) = mta.messages
    assert got.mail_from == BOUNCES and len(got.recipients) == 3


def test_a_notice_is_never_verped(
    sessions: sessionmaker[Session], mta: Mta, clock: ManualClock
) -> None:
    enqueue(sessions, PEOPLE, now=clock())
    assert delivery(sessions, mta, clock, VerpPolicy(personalized=True, interval=1)).run().sent
    (got,) = mta.messages
    assert got.mail_from == BOUNCES


def test_with_xverp_the_mta_verps_one_transaction(
    sessions: sessionmaker[Session], fake: FakeTransport, clock: ManualClock
) -> None:
    enqueue(sessions, PEOPLE, now=clock(), kind="post", post_number=5)
    verp = VerpPolicy(interval=1)
    assert delivery(sessions, fake, clock, verp, xverp=True).run().sent == 1
    assert fake.transactions == 1  # one submission; the MTA writes each sender
    assert senders(fake) == VERPED


def test_with_xverp_a_deferred_member_is_kept_for_the_next_attempt(
    sessions: sessionmaker[Session], fake: FakeTransport, clock: ManualClock
) -> None:
    fake.refuse["cy@example.net"] = "451 4.2.0 try later"
    rid = enqueue(sessions, PEOPLE, now=clock(), kind="post", post_number=5)
    verp = VerpPolicy(interval=1)
    assert delivery(sessions, fake, clock, verp, xverp=True).run().deferred == 1
    assert row(sessions, rid).recipients == ["cy@example.net"]


class RecordingSMTP(smtplib.SMTP):
    """Records the MAIL FROM parameters, and (the sink being no Postfix) does not send
    XVERP on."""

    options: ClassVar[list[Sequence[str]]] = []

    def mail(self, sender: str, options: Sequence[str] = ()) -> tuple[int, bytes]:
        RecordingSMTP.options.append(list(options))
        return super().mail(sender, [o for o in options if o != smtp.XVERP])


def test_over_smtp_xverp_is_a_mail_from_parameter(
    sessions: sessionmaker[Session], sink: Sink, clock: ManualClock
) -> None:
    RecordingSMTP.options = []
    enqueue(sessions, PEOPLE, now=clock(), kind="post", post_number=5)
    out = outbound(sink.port, xverp=True)
    transport = SmtpTransport(out.host, out.port, out.timeout, client=RecordingSMTP)
    deliver = Delivery(sessions, out, transport=transport, clock=clock, verp=VerpPolicy(interval=1))
    assert deliver.run().sent == 1
    (options,) = RecordingSMTP.options  # one transaction, asking for XVERP
    assert "XVERP=+=" in options
    (got,) = sink.messages
    assert got.mail_from == BOUNCES and len(got.recipients) == 3


def test_members_own_copies_are_verped_one_by_one(
    sessions: sessionmaker[Session], fake: FakeTransport, clock: ManualClock
) -> None:
    """Own copies go one member per transaction anyway: the worker writes the VERPed
    sender itself, XVERP or not."""
    site = make_site(sessions, Roster.members(*PEOPLE))
    mlist = site.mlist()
    info = OwnCopyInfo(mlist.list_id, "", mlist.leave_address, post_number=2)
    own_copies(sessions, mlist, info, clock, post_number=2)
    verp = VerpPolicy(personalized=True)
    assert delivery(sessions, fake, clock, verp, xverp=True).run().sent == 1
    assert fake.transactions == 3
    got = senders(fake)
    assert got == {r: f"team-bounces+{r.replace('@', '=')}@{site.host}" for r in VERPED}
    # not VERPed without the setting: the same own copies, from -bounces
    fake.messages.clear()
    own_copies(sessions, mlist, info, clock, post_number=3)
    assert delivery(sessions, fake, clock, VerpPolicy()).run().sent == 1
    assert set(senders(fake).values()) == {mlist.bounces_address}
