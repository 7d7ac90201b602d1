"""Urgent: and topics through a real Postfix, the milter and the sink (issue 16's acceptance).

- An ``Urgent:`` post from an authenticated moderator reaches a digest member at once (the
  member is made in the database: digest delivery cannot be chosen yet), and nobody's copy
  carries the header.
- A member subscribed to topic "release" receives the post whose Subject says
  "release 2.0" and not the one about "dinner"; the copy says ``X-Topics: release``.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from mtaplugin.enums import DeliveryMode, MemberRole
from mtaplugin.manage import members
from mtaplugin.testing import wait_for
from mtaplugin.testing.lab import Lab
from tests.helpers import make_post, unique
from tests.integration.conftest import TRUSTED_VERIFIER
from tests.integration.labs import copies, copy_of, make_list


def authenticated(sender: str) -> dict[str, str]:
    domain = sender.rpartition("@")[2]
    return {"Authentication-Results": f"{TRUSTED_VERIFIER}; dkim=pass header.d={domain}"}


def test_an_urgent_post_from_an_authenticated_moderator_reaches_the_digest_member(
    lab: Lab, db: Session
):
    mlist = make_list(db, "ann@example.org")
    # (The lab's scheduler sends the periodic digests once when it starts: a digest with
    # the ordinary post in it would reach dee.)
    mlist.digest_send_periodic = False
    members.add(db, mlist, "mod@example.org", MemberRole.moderator)
    members.add(db, mlist, "dee@example.org").delivery_mode = DeliveryMode.mime_digests
    db.commit()
    plain = unique("plain")
    post = make_post("ann@example.org", mlist.posting_address, subject=plain)
    assert lab.send("ann@example.org", [mlist.posting_address], post) is None
    wait_for(lambda: copies(lab, plain, "ann@example.org") == 1, timeout=30)

    urgent = unique("urgent")
    post = make_post(
        "mod@example.org",
        mlist.posting_address,
        subject=urgent,
        headers={**authenticated("mod@example.org"), "Urgent": "yes"},
    )
    assert lab.send("mod@example.org", [mlist.posting_address], post) is None
    wait_for(lambda: copies(lab, urgent, "dee@example.org") == 1, timeout=30)
    wait_for(lambda: copies(lab, urgent, "ann@example.org") == 1, timeout=30)
    # the ordinary post did not reach the digest member; the urgent one did, without the
    # header
    assert copies(lab, plain, "dee@example.org") == 0
    assert copy_of(lab, urgent, "dee@example.org")["Urgent"] is None
    assert copy_of(lab, urgent, "ann@example.org")["Urgent"] is None


def test_a_member_with_topic_release_gets_release_not_dinner(lab: Lab, db: Session):
    mlist = make_list(
        db,
        "ann@example.org",
        "bob@example.org",
        topics_enabled=True,
        topics=[["release", r"release\s+[0-9]", "new versions"], ["social", "dinner", ""]],
    )
    members.get(db, mlist, "ann@example.org", MemberRole.member).topics = ["release"]
    db.commit()
    release, dinner = unique("release 2.0 is out"), unique("dinner on friday")
    for subject in (release, dinner):
        post = make_post("bob@example.org", mlist.posting_address, subject=subject)
        assert lab.send("bob@example.org", [mlist.posting_address], post) is None
    wait_for(lambda: copies(lab, release, "ann@example.org") == 1, timeout=30)
    wait_for(lambda: copies(lab, dinner, "bob@example.org") == 1, timeout=30)
    wait_for(lambda: copies(lab, release, "bob@example.org") == 1, timeout=30)
    assert copy_of(lab, release, "ann@example.org")["X-Topics"] == "release"
    assert copy_of(lab, dinner, "bob@example.org")["X-Topics"] == "social"
    assert copies(lab, dinner, "ann@example.org") == 0
