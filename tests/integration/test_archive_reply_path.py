"""Replying from the archive's web page through a real private Postfix: the web app
submits the reply by SMTP to Postfix's public listener (``[web] submit_port``), where the
milter decides it as any post -- a member's reply reaches the members and joins its
thread in the archive; a nonmember's is held, and the page says so."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin import config, passwords
from mtaplugin.archive.hashing import message_id_hash
from mtaplugin.enums import ArchivePolicy
from mtaplugin.manage import bans, domains, lists, members, users
from mtaplugin.model import HeldMessage
from mtaplugin.testing.lab import Lab
from mtaplugin.web.app import create_web_app
from tests.helpers import make_post, unique
from tests.integration.labs import copies, copy_of, waits
from tests.integration.test_archive_path import archived
from tests.unit.webclient import CHEAP_PASSWORDS, PASSWORD, Client, form_of

BASE = "https://web.example.org"


@pytest.fixture(autouse=True)
def cheap_argon2(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(passwords, "PASSWORDS", CHEAP_PASSWORDS)


def web_client(lab: Lab, sessions: sessionmaker[Session], var: Path) -> Client:
    """The web UI in this process, on the lab's database, submitting to the lab's Postfix."""
    settings = config.load(
        environ={
            "MTAPLUGIN_DATABASE_URL": lab.database_url,
            "MTAPLUGIN_SITE_SECRET_KEY": "web-reply-secret-0123456789abcdef0123456789",
            "MTAPLUGIN_SITE_VAR_DIR": str(var),
            "MTAPLUGIN_WEB_SUBMIT_HOST": "127.0.0.1",
            "MTAPLUGIN_WEB_SUBMIT_PORT": str(lab.smtp_port),
        }
    )
    return Client(create_web_app(settings, sessions))


def test_a_web_reply_goes_through_the_list_rules(
    lab: Lab, db: Session, lab_sessions: sessionmaker[Session], tmp_path: Path
) -> None:
    host = f"{unique('webreply')}.test"
    ann, bob, carl = (f"{unique(n)}@example.org" for n in ("ann", "bob", "carl"))
    domains.create(db, host, base_url=BASE)
    mlist = lists.create(db, f"team@{host}")
    mlist.archive_policy = ArchivePolicy.public
    members.add(db, mlist, ann)
    members.add(db, mlist, bob)
    users.add_user(db, ann, PASSWORD)
    users.add_user(db, carl, PASSWORD)  # a user of the site, not a member
    db.commit()

    # a post by mail, archived
    first = unique("web-reply-first-")
    raw = make_post(ann, mlist.posting_address, subject=first)
    assert lab.send(ann, [mlist.posting_address], raw) is None
    waits(lab, lambda: copies(lab, first, bob) == 1, timeout=30)
    first_id = str(copy_of(lab, first, bob)["Message-ID"])
    digest = message_id_hash(first_id)
    parent = archived(db, mlist)[first_id]
    reply_url = f"/archive/{mlist.list_id}/message/{digest}/reply"

    # the member answers on the web page
    client = web_client(lab, lab_sessions, tmp_path / "var")
    assert client.login(ann).status_code == 303
    page = client.get(reply_url)
    assert page.status_code == 200
    fields = dict((k, v) for k, v in form_of(page.text, reply_url) if k != "csrf_token")
    assert fields["subject"] == f"Re: {first}" and fields["sender"] == ann
    marker = unique("answered-on-the-web-")
    thread = client.post(reply_url, {**fields, "body": f"{marker}\n"})
    assert client.posted is not None and client.posted.status_code == 303, thread.text
    assert "Your post was sent to the list and is in its archive." in thread.text
    assert "250 2.0.0 Ok: queued as" in thread.text
    assert marker in thread.text  # the thread page shows it

    # it reached the members as a reply, and joined the thread
    waits(lab, lambda: copies(lab, marker, bob) == 1, timeout=30)
    copy = copy_of(lab, marker, bob)
    assert copy["In-Reply-To"] == first_id and first_id in copy["References"]
    assert ann in copy["From"] and copy["List-Id"] is not None
    reply_id = str(copy["Message-ID"])
    row = archived(db, mlist)[reply_id]
    assert row.parent_id == parent.id and row.thread_id == parent.thread_id
    assert copy["Archived-At"] == (
        f"<{BASE}/archive/{mlist.list_id}/message/{message_id_hash(reply_id)}/>"
    )

    # a nonmember's reply is held, and the page says so
    stranger = web_client(lab, lab_sessions, tmp_path / "var")
    assert stranger.login(carl).status_code == 303
    page = stranger.get(reply_url)
    fields = dict((k, v) for k, v in form_of(page.text, reply_url) if k != "csrf_token")
    held_marker = unique("held-on-the-web-")
    answer = stranger.post(reply_url, {**fields, "body": f"{held_marker}\n"})
    assert "Your post is held for the list&#39;s moderators" in answer.text
    db.expire_all()
    held = db.scalars(select(HeldMessage).where(HeldMessage.mailing_list_id == mlist.id)).all()
    assert [h.sender for h in held] == [carl]
    assert held_marker.encode() in held[0].raw
    assert copies(lab, held_marker, bob) == 0
    assert not any(held_marker in m.text for m in archived(db, mlist).values())

    # once banned, the same user's reply is refused, in Postfix's words
    bans.add(db, lists.get(db, mlist.posting_address), carl)
    db.commit()
    refused_marker = unique("refused-on-the-web-")
    refused = stranger.post(reply_url, {**fields, "body": f"{refused_marker}\n"})
    assert refused.status_code == 403
    assert "The list refused your post. The mail server said: 5" in refused.text
    assert refused_marker in refused.text  # the form keeps the text
    db.expire_all()
    still = db.scalars(select(HeldMessage).where(HeldMessage.mailing_list_id == mlist.id))
    assert len(still.all()) == 1
