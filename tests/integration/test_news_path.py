"""List to news through a real private Postfix and a real INN: a post to a list linked to
``local.test`` reaches its members and, through the ``news-post`` job, the group with its
Message-ID; with the news server stopped the members still get it at once, and the group
gets it after the restart (the job run again)."""

from __future__ import annotations

import email

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from mtaplugin.enums import NewsgroupModeration
from mtaplugin.model import NewsArticle
from mtaplugin.model.base import utcnow
from mtaplugin.news.nntp import NntpClient
from mtaplugin.testing import wait_for
from mtaplugin.testing.inn import PrivateInn
from mtaplugin.testing.lab import Lab
from tests.helpers import make_post, unique
from tests.integration.labs import copies, make_list, run_job, waiting


def in_group(inn: PrivateInn, message_id: str, group: str = "local.test") -> bytes | None:
    with NntpClient("127.0.0.1", inn.port) as client:
        status = client.group(group)
        for number in range(status.last, status.first - 1, -1):
            article = client.article(number)
            if article is not None and message_id.encode() in article:
                return article
    return None


def send(lab: Lab, list_address: str, member: str, subject: str) -> str:
    raw = make_post(member, list_address, subject=subject)
    message_id = str(email.message_from_bytes(raw)["Message-ID"])
    assert lab.send(member, [list_address], raw) is None
    return message_id


def test_a_list_post_reaches_the_group_with_its_message_id(
    lab: Lab, db: Session, inn: PrivateInn
) -> None:
    member = f"{unique('ann')}@example.org"
    mlist = make_list(db, member, gateway_to_news=True, linked_newsgroup="local.test")
    marker = unique("to-news-")
    message_id = send(lab, mlist.posting_address, member, marker)
    wait_for(lambda: copies(lab, marker, member) == 1, timeout=30)
    wait_for(
        lambda: waiting(db, NewsArticle, mlist.id) == 1 or in_group(inn, message_id), timeout=30
    )
    run_job(lab, "news-post")
    article = wait_for(lambda: in_group(inn, message_id), timeout=30)
    assert isinstance(article, bytes)
    parsed = email.message_from_bytes(article)
    assert parsed["Message-ID"] == message_id
    assert parsed["Newsgroups"] == "local.test"
    assert marker in str(parsed["Subject"])
    assert parsed["Received"] is None  # the list's Received: lines are not gatewayed
    assert waiting(db, NewsArticle, mlist.id) == 0


def test_with_the_news_server_down_members_get_it_at_once_and_the_group_later(
    lab: Lab, db: Session, inn: PrivateInn
) -> None:
    member = f"{unique('bo')}@example.org"
    mlist = make_list(db, member, gateway_to_news=True, linked_newsgroup="local.test")
    inn.stop()
    try:
        markers = [unique("while-down-") for _ in range(2)]
        ids = [send(lab, mlist.posting_address, member, m) for m in markers]
        for marker in markers:
            wait_for(lambda m=marker: copies(lab, m, member) == 1, timeout=30)  # type: ignore[misc]
        wait_for(lambda: waiting(db, NewsArticle, mlist.id) == 2, timeout=30)
        run_job(lab, "news-post")  # the server is down: both wait, one try counted
        db.expire_all()
        rows = list(db.scalars(select(NewsArticle).where(NewsArticle.mailing_list_id == mlist.id)))
        assert len(rows) == 2 and all(r.attempts >= 1 for r in rows)
        assert all("cannot connect" in r.last_error for r in rows)
    finally:
        inn.start(fresh=False)
    # As if the back-off had passed: the job's next run posts them.
    db.execute(
        update(NewsArticle)
        .where(NewsArticle.mailing_list_id == mlist.id)
        .values(next_attempt_at=utcnow())
    )
    db.commit()
    run_job(lab, "news-post")
    for message_id in ids:
        assert wait_for(lambda mid=message_id: in_group(inn, mid), timeout=30)  # type: ignore[misc]
    assert waiting(db, NewsArticle, mlist.id) == 0


def test_a_post_to_a_moderated_group_carries_approved_and_is_taken(
    lab: Lab, db: Session, inn: PrivateInn
) -> None:
    """INN posts an article to a moderated group only with ``Approved:``; without it the
    article would go to the group's moderator by mail and never appear in the group."""
    member = f"{unique('mod')}@example.org"
    mlist = make_list(
        db,
        member,
        gateway_to_news=True,
        linked_newsgroup="local.moderated",
        newsgroup_moderation=NewsgroupModeration.open_moderated,
    )
    marker = unique("to-moderated-")
    message_id = send(lab, mlist.posting_address, member, marker)
    wait_for(lambda: copies(lab, marker, member) == 1, timeout=30)
    wait_for(lambda: waiting(db, NewsArticle, mlist.id) == 1, timeout=30)
    run_job(lab, "news-post")
    article = wait_for(lambda: in_group(inn, message_id, "local.moderated"), timeout=30)
    assert isinstance(article, bytes)
    assert email.message_from_bytes(article)["Approved"] == mlist.posting_address
