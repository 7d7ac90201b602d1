"""The email interface end to end: real private Postfix, the milter, the worker and the
sink.  A stranger joins by mail and confirms by reply; a member leaves; a member asks who;
a held post is approved by a moderator's authenticated reply and reaches every member; a
forged moderator reply changes nothing."""

from __future__ import annotations

import email
from email.message import Message

from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin.enums import MemberRole, RosterVisibility
from mtaplugin.manage import lists, members
from mtaplugin.model import HeldMessage
from mtaplugin.testing import wait_for
from mtaplugin.testing.lab import Lab
from tests.helpers import confirm_token, make_post, plain_text, unique
from tests.integration.conftest import TRUSTED_VERIFIER
from tests.integration.labs import make_list
from tests.replies import NO_SUCH_LIST, said


def received(lab: Lab, rcpt: str, needle: str) -> list[Message]:
    return [
        email.message_from_bytes(m.data) for m in lab.sink.to(rcpt) if needle.encode() in m.data
    ]


def wait_mail(lab: Lab, rcpt: str, needle: str, count: int = 1) -> Message:
    wait_for(lambda: len(received(lab, rcpt, needle)) >= count, timeout=30)
    return received(lab, rcpt, needle)[count - 1]


def is_member(db: Session, fqdn: str, who: str) -> bool:
    db.expire_all()
    mlist = lists.get(db, fqdn)
    return any(a.email == who for _m, a in members.roster(db, mlist, MemberRole.member))


def authenticated(sender: str) -> dict[str, str]:
    domain = sender.rpartition("@")[2]
    return {"Authentication-Results": f"{TRUSTED_VERIFIER}; dkim=pass header.d={domain}"}


def test_stranger_subscribes_by_mail_and_confirms_by_reply(lab: Lab, db: Session):
    mlist = make_list(db, "ann@example.org")
    stranger = f"{unique('stranger')}@example.com"
    post = make_post(
        stranger,
        mlist.request_address,
        subject="subscribe",
        body="\n",
        headers={"Accept-Language": "fr-FR, fr;q=0.9, en;q=0.5"},
    )
    assert lab.send(stranger, [mlist.request_address], post) is None
    confirmation = wait_mail(lab, stranger, "-confirm+")
    # In the language the stranger's mail asked for.
    assert "Quelqu'un, sans doute vous" in plain_text(confirmation)
    assert not is_member(db, mlist.fqdn_listname, stranger)
    token = confirm_token(confirmation)
    reply = make_post(stranger, str(confirmation["Reply-To"]), subject="Re: confirm", body="Oui.\n")
    assert lab.send(stranger, [str(confirmation["Reply-To"])], reply) is None
    wait_for(lambda: len(lab.sink.to(stranger)) >= 2, timeout=30)
    welcome = email.message_from_bytes(lab.sink.to(stranger)[-1].data)
    assert "Bienvenue sur la liste" in plain_text(welcome)
    assert is_member(db, mlist.fqdn_listname, stranger)
    # The command mail itself went to nobody: the list's members got nothing.
    assert not received(lab, "ann@example.org", token)


def test_member_leaves_and_gets_goodbye(lab: Lab, db: Session):
    member = f"{unique('leaver')}@example.org"
    mlist = make_list(db, member, "ann@example.org")
    post = make_post(member, mlist.leave_address, subject="bye", headers=authenticated(member))
    assert lab.send(member, [mlist.leave_address], post) is None
    wait_mail(lab, member, "You have left")
    assert not is_member(db, mlist.fqdn_listname, member)


def test_who_lists_the_members_to_a_member(lab: Lab, db: Session):
    mlist = make_list(
        db, "ann@example.org", "bob@example.org", member_roster_visibility=RosterVisibility.members
    )
    # ann shows her address to the other members (hide_address is on by default)
    members.get(db, mlist, "ann@example.org", MemberRole.member).hide_address = False
    db.commit()
    marker = unique("who")
    post = make_post(
        "bob@example.org", mlist.request_address, subject="who", body=f"echo {marker}\n"
    )
    assert lab.send("bob@example.org", [mlist.request_address], post) is None
    reply = wait_mail(lab, "bob@example.org", marker)
    text = plain_text(reply)
    assert "ann@example.org" in text and "bob@example.org" in text
    assert reply["Auto-Submitted"] == "auto-replied"


def _held_with_notice(lab: Lab, db: Session) -> tuple[str, str, int]:
    mlist = make_list(db, "ann@example.org", "bob@example.org")
    members.add(db, mlist, "mod@example.net", MemberRole.moderator)
    db.commit()
    subject = unique("moderate-me")
    post = make_post("outsider@example.com", mlist.posting_address, subject=subject)
    assert lab.send("outsider@example.com", [mlist.posting_address], post) is None
    notice = wait_mail(lab, "mod@example.net", subject)
    assert "requires approval" in str(notice["Subject"])
    held = db.scalars(select(HeldMessage).where(HeldMessage.subject == subject)).one()
    return subject, str(notice["Reply-To"]), held.id


def test_held_post_approved_by_the_moderators_reply_reaches_every_member(lab: Lab, db: Session):
    subject, reply_to, held_id = _held_with_notice(lab, db)
    assert not received(lab, "ann@example.org", subject)
    reply = make_post(
        "mod@example.net",
        reply_to,
        subject=f"Re: {subject}",
        body="approve\n\n> A post is held\n",
        headers=authenticated("mod@example.net"),
    )
    assert lab.send("mod@example.net", [reply_to], reply) is None
    wait_mail(lab, "ann@example.org", subject)
    wait_mail(lab, "bob@example.org", subject)
    db.expire_all()
    assert db.get(HeldMessage, held_id) is None
    assert "approved" in plain_text(wait_mail(lab, "mod@example.net", "results of your email"))


def test_forged_moderator_reply_changes_nothing(lab: Lab, db: Session):
    subject, reply_to, held_id = _held_with_notice(lab, db)
    # From: the moderator, but nothing authenticates it (a forged From:).
    forged = make_post("mod@example.net", reply_to, subject=f"Re: {subject}", body="approve\n")
    assert lab.send("attacker@example.com", [reply_to], forged) is None
    answer = wait_mail(lab, "mod@example.net", "could not be authenticated")
    assert "nothing was changed" in plain_text(answer)
    db.expire_all()
    assert db.get(HeldMessage, held_id) is not None
    assert not received(lab, "ann@example.org", subject)
    assert not lab.sink.to("attacker@example.com")


def test_a_reply_to_an_unknown_token_is_refused_at_rcpt(lab: Lab, db: Session):
    mlist = make_list(db, "ann@example.org")
    bogus = mlist.subaddress("confirm").replace("@", "+" + "0" * 40 + "@")
    refused = lab.send("x@example.com", [bogus], make_post("x@example.com", bogus))
    assert said(refused) == ("rcpt", NO_SUCH_LIST), refused
    assert refused is not None and "no pending request has this token" in refused.text
