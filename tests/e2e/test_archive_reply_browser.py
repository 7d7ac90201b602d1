"""Replying from the archive in headless Chromium, against ``mtaplugin serve`` in the
Postfix lab: a member logs in, opens a thread, answers a post with its text quoted, and
the reply (submitted by the web UI to the lab's Postfix, decided by the milter) reaches
the members and shows in the thread."""

from __future__ import annotations

from playwright.sync_api import Page, expect
from sqlalchemy.orm import Session

from mtaplugin.testing.lab import Lab
from tests.e2e.conftest import PASSWORD, log_in, private_archive
from tests.helpers import make_post, unique
from tests.integration.labs import copies, copy_of, waits


def test_a_member_replies_from_the_archive(
    lab: Lab, db: Session, page: Page, web: str, shot
) -> None:
    ann, bob, mlist = private_archive(db)
    subject = unique("Browser reply ")
    raw = make_post(bob, mlist.posting_address, subject=subject, body="Who runs Exim here?\n")
    assert lab.send(bob, [mlist.posting_address], raw) is None
    waits(lab, lambda: copies(lab, subject, ann) == 1, timeout=30)
    first_id = str(copy_of(lab, subject, ann)["Message-ID"])

    log_in(page, web, ann, PASSWORD)
    page.goto(f"{web}/archive/{mlist.list_id}/")
    page.click(f"text={subject}")
    page.click("article.post a.reply-quote")
    expect(page.locator("input[name=subject]")).to_have_value(f"Re: {subject}")
    body = page.locator("textarea[name=body]")
    expect(body).to_have_value(f"{bob} wrote:\n> Who runs Exim here?\n\n")
    marker = unique("we-do-")
    body.fill(body.input_value() + f"We do: {marker}\n")
    shot(page, "archive-reply")
    page.click("#compose button[type=submit]")
    expect(page.locator("#done")).to_contain_text("Your post was sent to the list")
    expect(page.locator("article.post.depth-1")).to_contain_text(marker)
    shot(page, "archive-reply-sent")

    waits(lab, lambda: copies(lab, marker, bob) == 1, timeout=30)
    assert copy_of(lab, marker, bob)["In-Reply-To"] == first_id
