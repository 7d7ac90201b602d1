"""Each verdict through the real private Postfix: reject, discard, hold and release,
mixed transactions, and the database going away."""

from __future__ import annotations

import subprocess

from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin.enums import Action, MemberRole
from mtaplugin.manage import members
from mtaplugin.model import Ban, HeldMessage, OutboxMessage
from mtaplugin.posting.rules.authentication import UNAUTHENTICATED_SENDER
from mtaplugin.posting.rules.bans import BANNED_ADDRESS
from mtaplugin.posting.rules.moderation import NONMEMBER_MODERATION
from mtaplugin.testing import wait_for
from mtaplugin.testing.lab import Lab
from tests.helpers import make_post, run_mtaplugin, unique
from tests.integration.conftest import TRUSTED_VERIFIER
from tests.integration.labs import PASSTHROUGH, copies, make_list, posts
from tests.replies import REFUSED_BY_RULE, TRY_LATER, Reply, said


def cli(lab: Lab, *args: str) -> subprocess.CompletedProcess[str]:
    return run_mtaplugin(*args, env={"MTAPLUGIN_DATABASE_URL": lab.database_url}, timeout=60)


def test_nonmember_reject_names_list_and_rule_and_mails_nothing_back(lab: Lab, db: Session):
    mlist = make_list(db, "ann@example.org", default_nonmember_action=Action.reject)
    subject = unique("refused")
    refused = lab.send(
        "spammer@example.com",
        [mlist.posting_address],
        make_post("spammer@example.com", mlist.posting_address, subject=subject),
    )
    assert said(refused) == ("data", REFUSED_BY_RULE), refused
    assert refused is not None
    assert f"Posts to {mlist.fqdn_listname} from nonmembers are not accepted" in refused.text
    assert NONMEMBER_MODERATION in refused.text
    assert (
        db.scalars(select(OutboxMessage).where(OutboxMessage.mailing_list_id == mlist.id)).all()
        == []
    )
    assert not lab.sink.to("spammer@example.com")


def test_held_post_is_listed_and_delivered_to_every_member_once_approved(lab: Lab, db: Session):
    mlist = make_list(db, "ann@example.org", "bob@example.org")
    subject = unique("approve-me")
    posts(lab, mlist, "stranger@example.com", subject=subject)

    listing = cli(lab, "held", "list", mlist.fqdn_listname)
    assert listing.returncode == 0, listing.stderr
    assert subject in listing.stdout and NONMEMBER_MODERATION in listing.stdout
    held_id = listing.stdout.split("\t", 1)[0]
    assert not lab.sink.to("ann@example.org") or copies(lab, subject, "ann@example.org") == 0

    approved = cli(lab, "held", "approve", mlist.fqdn_listname, held_id, "--as", "mod@example.org")
    assert approved.returncode == 0, approved.stderr
    wait_for(
        lambda: copies(lab, subject, "ann@example.org") and copies(lab, subject, "bob@example.org"),
        timeout=30,
    )
    assert copies(lab, subject, "ann@example.org") == 1
    assert cli(lab, "held", "list", mlist.fqdn_listname).stdout.strip() == ""


def test_reply_to_a_member_still_makes_a_nonmember_post(lab: Lab, db: Session):
    mlist = make_list(db, "ann@example.org")
    subject = unique("replyto")
    member = {"Reply-To": "ann@example.org", "Sender": "ann@example.org"}
    posts(lab, mlist, "ann@example.org", "stranger@example.com", subject=subject, headers=member)
    held = db.scalars(select(HeldMessage).where(HeldMessage.mailing_list_id == mlist.id)).all()
    assert [h.subject for h in held] == [subject]
    assert [r for r, _t in held[0].reasons] == [NONMEMBER_MODERATION]
    assert copies(lab, subject, "ann@example.org") == 0


def test_banned_sender_is_refused_even_as_a_member(lab: Lab, db: Session):
    mlist = make_list(db, "ann@example.org", "troll@example.org")
    db.add(Ban(email="troll@example.org", mailing_list_id=mlist.id))
    db.commit()
    refused = lab.send(
        "troll@example.org",
        [mlist.posting_address],
        make_post("troll@example.org", mlist.posting_address),
    )
    assert said(refused) == ("data", REFUSED_BY_RULE), refused
    assert refused is not None and BANNED_ADDRESS in refused.text


def test_a_loop_is_discarded_with_250(lab: Lab, db: Session):
    mlist = make_list(db, "ann@example.org")
    subject = unique("loop")
    before = lab.postfix.log().count("milter triggers DISCARD action")
    came_back = {"List-Post": f"<mailto:{mlist.posting_address}>"}
    posts(lab, mlist, "ann@example.org", subject=subject, headers=came_back)
    # Postfix logs the discard when cleanup applies it; after that nothing can go out.
    wait_for(lambda: lab.postfix.log().count("milter triggers DISCARD action") > before)
    assert copies(lab, subject, "ann@example.org") == 0


def test_mixed_transaction_each_list_gets_its_copy_and_others_the_original(lab: Lab, db: Session):
    one = make_list(db, "ann@example.org")
    two = make_list(db, "bob@example.org", default_nonmember_action=Action.accept)
    other = f"{unique('person')}@{PASSTHROUGH}"
    subject = unique("mixed")
    post = make_post(
        "ann@example.org",
        one.posting_address,
        subject=subject,
        headers={"Cc": two.posting_address, "Approved": "not-a-password"},
    )
    assert (
        lab.send("ann@example.org", [one.posting_address, two.posting_address, other], post) is None
    )
    wait_for(
        lambda: (
            copies(lab, subject, "ann@example.org")
            and copies(lab, subject, "bob@example.org")
            and copies(lab, subject, other)
        ),
        timeout=30,
    )
    original = next(m for m in lab.sink.to(other) if subject.encode() in m.data)
    member_copy = next(m for m in lab.sink.to("ann@example.org") if subject.encode() in m.data)
    assert b"Approved: not-a-password" in original.data  # untouched
    assert b"Approved:" not in member_copy.data  # the members' copy loses it
    assert {r for m in lab.sink.messages if subject.encode() in m.data for r in m.recipients} == {
        "ann@example.org",
        "bob@example.org",
        other,
    }


def test_a_corrupt_sqlite_database_gives_451(lab_root, tmp_path_factory) -> None:
    """Not a database at all (root reads any file, so 'unreadable' means 'not SQLite')."""
    import tempfile

    from mtaplugin.db import make_engine, sessionmaker_for
    from mtaplugin.engine import ListEngine

    path = tempfile.mktemp(dir=lab_root, suffix=".db")
    with open(path, "wb") as fh:
        fh.write(b"this is not an SQLite database" * 100)
    engine = ListEngine(sessionmaker_for(make_engine(f"sqlite:///{path}", timeout=0.5)))
    check = engine.check_recipient("<list@lists.test>")
    assert check.reply is not None
    assert Reply.coded(check.reply) == TRY_LATER


def test_authenticated_moderator_pre_approves_and_the_header_is_removed(lab: Lab, db: Session):
    mlist = make_list(db, "ann@example.org", emergency=True)
    members.add(db, mlist, "mod@example.org", MemberRole.moderator)
    db.commit()
    subject = unique("preapproved")
    post = make_post(
        "mod@example.org",
        mlist.posting_address,
        subject=subject,
        headers={
            "Authentication-Results": f"{TRUSTED_VERIFIER}; dkim=pass header.d=example.org",
            "Approved": "yes",
        },
    )
    assert lab.send("mod@example.org", [mlist.posting_address], post) is None
    wait_for(lambda: copies(lab, subject, "ann@example.org"), timeout=30)
    copy = next(m for m in lab.sink.to("ann@example.org") if subject.encode() in m.data)
    assert b"\nApproved:" not in copy.data and b"Authentication-Results" in copy.data


def test_the_list_password_on_the_first_body_line_approves_and_leaves_the_copy(
    lab: Lab, db: Session
):
    """Mailman's ``Approved: <password>`` as the first line of the text: a nonmember's post
    goes out; the members' copy has lost the line, the other recipient of the same
    transaction gets the post as it was sent."""
    from mtaplugin import passwords

    mlist = make_list(db, "ann@example.org", moderator_password=passwords.hash_password("s3cret"))
    other = f"{unique('person')}@{PASSTHROUGH}"
    subject = unique("body-approved")
    body = "Approved: s3cret\n\nThe text itself.\n"
    posts(lab, mlist, "stranger@example.com", also=(other,), subject=subject, body=body)
    wait_for(
        lambda: copies(lab, subject, "ann@example.org") and copies(lab, subject, other),
        timeout=30,
    )
    copy = next(m for m in lab.sink.to("ann@example.org") if subject.encode() in m.data)
    original = next(m for m in lab.sink.to(other) if subject.encode() in m.data)
    assert b"s3cret" not in copy.data and b"The text itself." in copy.data
    assert b"Approved: s3cret" in original.data
    assert (
        db.scalars(select(HeldMessage).where(HeldMessage.mailing_list_id == mlist.id)).all() == []
    )


def test_forged_member_from_is_held_when_the_list_requires_authentication(lab: Lab, db: Session):
    mlist = make_list(db, "ann@example.org", "bob@example.org", require_authenticated_senders=True)
    forged, real = unique("forged"), unique("real")
    posts(lab, mlist, "attacker@example.com", "ann@example.org", subject=forged)
    signed = make_post(
        "ann@example.org",
        mlist.posting_address,
        subject=real,
        headers={
            "Authentication-Results": f"{TRUSTED_VERIFIER}; spf=pass smtp.mailfrom=example.org"
        },
    )
    assert lab.send("ann@example.org", [mlist.posting_address], signed) is None
    wait_for(lambda: copies(lab, real, "bob@example.org"), timeout=30)
    held = db.scalars(select(HeldMessage).where(HeldMessage.mailing_list_id == mlist.id)).all()
    assert [(h.subject, [r for r, _t in h.reasons]) for h in held] == [
        (forged, [UNAUTHENTICATED_SENDER])
    ]
    assert copies(lab, forged, "bob@example.org") == 0
