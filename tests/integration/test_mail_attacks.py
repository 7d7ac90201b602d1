"""Attacks that come by mail, replayed through the real private Postfix and milter
(docs/security.md, findings H2, M1 and M2 of the security review)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin.enums import MemberRole
from mtaplugin.manage import members
from mtaplugin.model import HeldMessage, MailingList
from mtaplugin.passwords import hash_password
from mtaplugin.posting.rules.emergency import EMERGENCY
from mtaplugin.posting.rules.moderation import NONMEMBER_MODERATION
from mtaplugin.testing import wait_for
from mtaplugin.testing.lab import Lab
from tests.helpers import make_post, unique
from tests.integration.conftest import TRUSTED_VERIFIER
from tests.integration.labs import copies, make_list


def held_reasons(db: Session, mlist: MailingList, subject: str) -> list[str]:
    db.expire_all()
    held = db.scalars(
        select(HeldMessage).where(
            HeldMessage.mailing_list_id == mlist.id, HeldMessage.subject == subject
        )
    ).all()
    return [rule for h in held for rule, _text in h.reasons]


def password_checks(lab: Lab, mlist: MailingList) -> int:
    """The moderator-password checks mtaplugin made for ``mlist`` (it logs each one)."""
    return lab.log().count(f"moderator password of {mlist.fqdn_listname} checked")


# --- H2: Approved: lines cost one password check per post ----------------------------------
def test_ten_thousand_approved_lines_cost_one_password_check(lab: Lab, db: Session):
    mlist = make_list(db, "ann@example.org", moderator_password=hash_password("s3cret"))
    subject = unique("approved-flood")
    post = b"Approved: x\r\n" * 10_000 + make_post(
        "stranger@example.com", mlist.posting_address, subject=subject
    )
    assert lab.send("stranger@example.com", [mlist.posting_address], post) is None
    assert held_reasons(db, mlist, subject) == [NONMEMBER_MODERATION]
    assert password_checks(lab, mlist) == 1
    assert copies(lab, subject, "ann@example.org") == 0


def test_the_right_password_in_the_first_approved_header_still_approves(lab: Lab, db: Session):
    mlist = make_list(db, "ann@example.org", moderator_password=hash_password("s3cret"))
    subject = unique("approved-right")
    post = make_post(
        "stranger@example.com",
        mlist.posting_address,
        subject=subject,
        headers={"Approved": "s3cret"},
    )
    assert lab.send("stranger@example.com", [mlist.posting_address], post) is None
    wait_for(lambda: copies(lab, subject, "ann@example.org"), timeout=30)
    copy = next(m for m in lab.sink.to("ann@example.org") if subject.encode() in m.data)
    assert b"s3cret" not in copy.data
    assert password_checks(lab, mlist) == 1


# --- M1: a forged Authentication-Results does not authenticate a spoofed owner -------------
def _owner_list(db: Session) -> MailingList:
    mlist = make_list(db, "ann@example.org", emergency=True)
    members.add(db, mlist, "owner@example.org", MemberRole.owner)
    db.commit()
    return mlist


def test_a_trusted_header_below_a_received_does_not_pre_approve(lab: Lab, db: Session):
    """The review's case: the trusted verifier's own header on top says dkim=none; the
    attacker's forged pass of the same authserv-id came in below a hop's Received:."""
    mlist = _owner_list(db)
    subject = unique("forged-ar")
    post = (
        f"Authentication-Results: {TRUSTED_VERIFIER}; dkim=none\r\n"
        "Received: from attacker.example by relay.example; Sat, 5 Dec 2026 07:00:00 +0000\r\n"
        f"Authentication-Results: {TRUSTED_VERIFIER}; dkim=pass header.d=example.org;"
        " dmarc=pass header.from=example.org\r\n"
    ).encode() + make_post(
        "owner@example.org", mlist.posting_address, subject=subject, headers={"Approved": "yes"}
    )
    assert lab.send("attacker@example.com", [mlist.posting_address], post) is None
    assert held_reasons(db, mlist, subject) == [EMERGENCY]
    held = db.scalars(select(HeldMessage).where(HeldMessage.subject == subject)).one()
    assert held.sender_signals == []
    assert copies(lab, subject, "ann@example.org") == 0


def test_the_trusted_header_on_top_still_pre_approves(lab: Lab, db: Session):
    mlist = _owner_list(db)
    subject = unique("top-ar")
    post = (
        f"Authentication-Results: {TRUSTED_VERIFIER}; dkim=pass header.d=example.org\r\n"
        "Received: from relay.example.org by mx.example.org; Sat, 5 Dec 2026 07:00:00 +0000\r\n"
    ).encode() + make_post(
        "owner@example.org", mlist.posting_address, subject=subject, headers={"Approved": "yes"}
    )
    assert lab.send("owner@example.org", [mlist.posting_address], post) is None
    wait_for(lambda: copies(lab, subject, "ann@example.org"), timeout=30)
