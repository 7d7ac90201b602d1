"""The list archive in headless Chromium, against ``mtaplugin serve``: a visitor reads a
thread (replies nested, a quote folded until clicked, addresses obscured), searches the
archive and opens the post found; a private archive is 404 to the visitor.

The posts are written into the archive's tables directly (tests/unit/archive_rows.py) until
the archive store archives the lab's posts itself."""

from __future__ import annotations

from datetime import timedelta

from playwright.sync_api import Page, expect
from sqlalchemy.orm import Session

from mtaplugin.enums import ArchivePolicy
from mtaplugin.testing.lab import Lab
from tests.helpers import unique
from tests.integration.labs import make_list
from tests.unit import archive_rows
from tests.unit.archive_rows import START


def test_a_visitor_reads_a_thread_and_searches_the_archive(
    lab: Lab, db: Session, page: Page, web: str, shot
) -> None:
    mlist = make_list(db, archive_policy=ArchivePolicy.public)
    word = unique("zanzibar")
    first = archive_rows.post(
        db,
        mlist,
        "Greylisting delays",
        "Mail from new senders waits 5 minutes.",
        sender="ida@example.org",
        name="Ida",
    )
    second = archive_rows.post(
        db, mlist, "Re: Greylisting delays",
        f"> Mail from new senders waits 5 minutes.\n\nWhitelist them; see {word}.",
        sender="jon@example.org", name="", date=START + timedelta(hours=1), parent=first,
    )  # fmt: skip
    db.commit()
    list_id, thread_id, reply_id = mlist.list_id, first.thread_id, second.id

    page.goto(f"{web}/archive/{list_id}/")
    page.click("text=Greylisting delays")
    expect(page.locator("h1")).to_have_text("Greylisting delays")
    reply = page.locator("article.post.depth-1")
    expect(reply).to_contain_text("Whitelist them")
    expect(reply).to_contain_text("jon@…")
    quote = reply.locator("details.quote pre")
    expect(quote).to_be_hidden()
    reply.locator("details.quote summary").click()
    expect(quote).to_be_visible()
    expect(quote).to_contain_text("waits 5 minutes")
    assert "jon@example.org" not in page.content()
    shot(page, "archive-thread")

    page.fill("nav.archive-nav input[name=q]", word)
    page.click("nav.archive-nav button[type=submit]")
    expect(page.locator("#count")).to_have_text("1 posts found.")
    shot(page, "archive-search")
    page.click("ol.hits a")
    expect(page.locator("article.post")).to_contain_text(word)
    expect(page.locator("text=In its thread")).to_have_attribute(
        "href", f"/archive/{list_id}/thread/{thread_id}/#m{reply_id}"
    )

    mlist.archive_policy = ArchivePolicy.private
    db.commit()
    response = page.goto(f"{web}/archive/{list_id}/thread/{thread_id}/")
    assert response is not None and response.status == 404
