"""The archive through a real private Postfix: posts to a list are archived by the worker a
moment after the 250 (the journal of accepted posts, written with the decision), threaded,
and the members' copy carries ``Archived-At`` with Mailman's hash of its Message-ID and a
``List-Archive`` link; an ``X-No-Archive`` post is neither archived nor linked."""

from __future__ import annotations

import email

from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin.archive.hashing import message_id_hash
from mtaplugin.manage import domains, lists, members
from mtaplugin.model import AcceptedPost, MailingList
from mtaplugin.model.archive import ArchivedMessage, ArchiveThread
from mtaplugin.testing.lab import Lab
from tests.helpers import make_post, unique
from tests.integration.labs import copies, copy_of, waits

BASE = "https://web.example.org"


def archive_list(db: Session, member: str) -> MailingList:
    """A list in a domain of its own that has a web address (so the copies link)."""
    host = f"{unique('arch')}.test"
    domains.create(db, host, base_url=BASE)
    mlist = lists.create(db, f"team@{host}")
    members.add(db, mlist, member)
    db.commit()
    return mlist


def archived(db: Session, mlist: MailingList) -> dict[str, ArchivedMessage]:
    db.expire_all()
    rows = db.scalars(select(ArchivedMessage).where(ArchivedMessage.mailing_list_id == mlist.id))
    return {m.message_id: m for m in rows}


def journal_empty(db: Session) -> bool:
    db.expire_all()
    return not db.scalars(select(AcceptedPost.id).limit(1)).first()


def send(lab: Lab, mlist: MailingList, member: str, subject: str, **headers: str) -> str:
    raw = make_post(member, mlist.posting_address, subject=subject, headers=headers)
    assert lab.send(member, [mlist.posting_address], raw) is None
    return str(email.message_from_bytes(raw)["Message-ID"])


def test_posts_are_archived_threaded_and_linked(lab: Lab, db: Session) -> None:
    member = f"{unique('ann')}@example.org"
    mlist = archive_list(db, member)
    first = unique("archived-")
    first_id = send(lab, mlist, member, first)
    waits(lab, lambda: copies(lab, first, member) == 1, timeout=30)
    # archived by the worker's drain of the accepted posts, a moment after the 250
    waits(lab, lambda: first_id in archived(db, mlist), timeout=30)
    posts = archived(db, mlist)
    assert list(posts) == [first_id]
    msg = posts[first_id]
    h = message_id_hash(first_id)
    assert msg.message_id_hash == h and msg.thread_id is not None
    copy = copy_of(lab, first, member)
    assert copy["Archived-At"] == f"<{BASE}/archive/{mlist.list_id}/message/{h}/>"
    assert copy["List-Archive"] == f"<{BASE}/archive/{mlist.list_id}/>"

    reply = unique("reply-")
    reply_id = send(
        lab,
        mlist,
        member,
        f"Re: {first} {reply}",
        **{"In-Reply-To": first_id, "References": first_id},
    )
    waits(lab, lambda: copies(lab, reply, member) == 1, timeout=30)
    waits(lab, lambda: reply_id in archived(db, mlist), timeout=30)
    posts = archived(db, mlist)
    assert posts[reply_id].parent_id == msg.id
    assert posts[reply_id].thread_id == msg.thread_id
    thread = db.get(ArchiveThread, msg.thread_id)
    assert thread is not None and thread.posts == 2
    assert copy_of(lab, reply, member)["Archived-At"] == (
        f"<{BASE}/archive/{mlist.list_id}/message/{message_id_hash(reply_id)}/>"
    )

    private = unique("private-")
    private_id = send(lab, mlist, member, private, **{"X-No-Archive": "yes"})
    waits(lab, lambda: copies(lab, private, member) == 1, timeout=30)
    waits(lab, lambda: journal_empty(db), timeout=30)  # the worker had it, and left it out
    assert private_id not in archived(db, mlist)
    unlinked = copy_of(lab, private, member)
    assert unlinked["Archived-At"] is None and unlinked["List-Id"] is not None
