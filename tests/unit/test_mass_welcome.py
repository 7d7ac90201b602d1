"""A mass subscription's welcomes (and a mass removal's goodbyes) are made once per
language, yet each is the notice one subscription sends the member: byte for byte, apart
from its own Date and Message-ID; queued in the subscription's transaction; and the
progress counts every entry as its batch is done."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from email import message_from_bytes
from email.utils import parsedate_to_datetime

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.manage import lists, members
from mtaplugin.manage import subscriptions as subs
from mtaplugin.model import Address, MailingList, OutboxMessage
from mtaplugin.notices import membership
from mtaplugin.notices.membership import MemberNotice
from tests.helpers import list_template, unique

#: plain addresses of every length a line may get, hyphens and specials included, and
#: (ODD) two the header would decode or fold: those are made on their own
PLAIN = [
    "a@x.example",
    "m1-3@members.example",
    "first.last+tag@example.org",
    "very-long-local-part-for-wrapping.and.more@sub.long-domain.example",
    "o'neil_{x}@example.net",
    "ab-cd-ef@hyphen-ated.example",
]
ODD = ["=?utf-8?q?j=c3=b6rg?=@example.net", "x" * 64 + "@a-rather-long-domain-name.example"]
#: a member's own language (their address's preference), as the single path reads it
LANGUAGES = {"m1-3@members.example": "de", "first.last+tag@example.org": "ja"}


@dataclass(frozen=True)
class Counting(MemberNotice):
    """The welcome, counting the notices made on their own (not from the plan)."""

    calls: list[str] = field(default_factory=list)

    def __call__(self, session, mlist, email, language):  # type: ignore[no-untyped-def]
        self.calls.append(email)
        return super().__call__(session, mlist, email, language)


def stamps_out(raw: bytes) -> bytes:
    return re.sub(rb"(?m)^(Date|Message-ID): .*\n", b"", raw)


def notices(session: Session, mlist: MailingList) -> dict[str, bytes]:
    rows = session.scalars(
        select(OutboxMessage).where(OutboxMessage.mailing_list_id == mlist.id)
    ).all()
    return {row.recipients[0]: row.raw for row in rows}


TEXTS = {
    "built-in": None,
    "jinja, wrapped": (
        "Hi {{ user_email }}!\n{% filter wordwrap(30) %}{% trans %}You are {{ user_email }}"
        " on {{ display_name }}{% endtrans %} and a few more words to wrap here.\n"
        "A line without the address, long enough to be wrapped as well.{% endfilter %}\n"
    ),
    "mailman syntax": "Hello $user_email,\nwelcome to $display_name.\n",
    "address changed": "Hello {{ user_email|upper }}.\n",
    "address tested": "{% if user_email.startswith('a') %}A{% endif %} {{ user_email }}\n",
    "long line": "Hello {{ user_email }}, " + "this line is far too long to stay 7bit " * 3,
}


@pytest.mark.parametrize("text", TEXTS.values(), ids=list(TEXTS))
def test_each_welcome_of_a_mass_subscription_is_the_one_a_subscription_sends(
    txn_session: Session, mlist: MailingList, monkeypatch: pytest.MonkeyPatch, text: str | None
):
    mlist.send_welcome_message = True
    mlist.admin_notify_mchanges = False
    mlist.display_name = "Équipe"
    if text is not None:
        txn_session.add(list_template(mlist, "list:user:notice:welcome", text=text))
    for email, language in LANGUAGES.items():
        txn_session.add(Address(email=email, original_email=email, preferred_language=language))
    txn_session.flush()
    counting = Counting(membership.welcome.template, membership.welcome.title)
    monkeypatch.setattr(membership, "welcome", counting)
    everyone = PLAIN + ODD

    batch = txn_session.begin_nested()
    done = subs.mass_subscribe(txn_session, mlist, [(e, "") for e in everyone])
    assert sorted(done.added) == sorted(everyone)
    batched = notices(txn_session, mlist)
    made_alone = list(counting.calls)
    batch.rollback()

    for email in everyone:
        subs.request_subscription(
            txn_session, mlist, email, pre_verified=True, pre_confirmed=True, pre_approved=True
        )
    single = notices(txn_session, mlist)
    assert set(batched) == set(single) == set(everyone)
    for email in everyone:
        assert stamps_out(batched[email]) == stamps_out(single[email]), email
        msg = message_from_bytes(batched[email])
        assert parsedate_to_datetime(msg["Date"]) is not None
        assert re.fullmatch(r"<[^<>@\s]+@[^<>@\s]+>", msg["Message-ID"])
    assert len({message_from_bytes(raw)["Message-ID"] for raw in batched.values()}) == 8
    if text is None or text in (TEXTS["jinja, wrapped"], TEXTS["mailman syntax"]):
        # one made on its own per language (the check of the plan), and the odd ones
        assert len(made_alone) == len({"en", *LANGUAGES.values()}) + len(ODD)
    else:
        assert len(made_alone) == len(everyone)


def test_each_goodbye_of_a_mass_removal_is_the_one_a_removal_sends(
    txn_session: Session, mlist: MailingList
):
    mlist.send_goodbye_message = True
    mlist.admin_notify_mchanges = False
    for email in PLAIN + ODD:
        member = members.add(txn_session, mlist, email)
        member.preferred_language = LANGUAGES.get(email)
    txn_session.flush()
    everyone = PLAIN + ODD

    batch = txn_session.begin_nested()
    subs.mass_unsubscribe(txn_session, mlist, everyone)
    batched = notices(txn_session, mlist)
    batch.rollback()

    for email in everyone:
        subs.request_unsubscription(
            txn_session, mlist, email, pre_confirmed=True, pre_approved=True
        )
    single = notices(txn_session, mlist)
    assert set(batched) == set(single) == set(everyone)
    for email in everyone:
        assert stamps_out(batched[email]) == stamps_out(single[email]), email
    assert b"Sie" in batched["m1-3@members.example"]  # German


def test_the_welcomes_are_queued_with_the_members_or_not_at_all(
    module_sessions: sessionmaker[Session],
):
    from tests.unit.sites import Roster, add_domain

    with module_sessions.begin() as s:
        name = add_domain(s, f"{unique('welcome')}.test", Roster()).fqdn_listname

    def queued() -> int:
        with module_sessions() as s:
            mlist = lists.get(s, name)
            return (
                s.scalar(
                    select(func.count(OutboxMessage.id)).where(
                        OutboxMessage.mailing_list_id == mlist.id
                    )
                )
                or 0
            )

    entries = [(f"w{n}@durable.example", "") for n in range(30)]
    with pytest.raises(RuntimeError), module_sessions.begin() as s:
        subs.mass_subscribe(s, lists.get(s, name), entries, send_welcome_message=True)
        raise RuntimeError("the transaction fails after the subscription")
    assert queued() == 0
    with module_sessions.begin() as s:
        subs.mass_subscribe(s, lists.get(s, name), entries, send_welcome_message=True)
    assert queued() == 30
    with module_sessions() as s:
        mlist = lists.get(s, name)
        assert all(members.is_member(s, mlist, email) for email, _n in entries)


def test_progress_counts_every_entry_once_its_welcome_is_queued(
    txn_session: Session, mlist: MailingList, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(members, "BATCH", 10)
    mlist.send_welcome_message = True
    entries = [(f"p{n}@progress.example", "") for n in range(25)]
    entries += [(mlist.fqdn_listname, ""), (f"team-request@{mlist.mail_host}", "")]
    told: list[tuple[int, int]] = []

    def progress(count: int) -> None:
        told.append((count, len(notices(txn_session, mlist))))

    done = subs.mass_subscribe(txn_session, mlist, entries, progress=progress)
    assert len(done.added) == 25 and len(done.refused) == 2
    assert told == [(2, 0), (10, 10), (10, 20), (5, 25)]
