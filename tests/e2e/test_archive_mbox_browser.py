"""The archive's month mbox in headless Chromium: posts sent through the lab's Postfix are
archived by the milter, a member downloads the month as mbox from the month page, and
``mtaplugin archive import`` puts that file into another list with the same threads."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page
from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin.enums import ArchivePolicy
from mtaplugin.model import ArchivedMessage, MailingList
from mtaplugin.testing.lab import Lab
from tests.e2e.conftest import PASSWORD, log_in, private_archive
from tests.helpers import make_post, run_mtaplugin, unique
from tests.integration.labs import copies, make_list, waits


def shape(db: Session, mlist: MailingList) -> dict[str, tuple[str, str]]:
    """Message-ID -> (its parent's Message-ID, the Message-ID of its thread's first post)."""
    db.expire_all()
    posts = db.scalars(
        select(ArchivedMessage).where(ArchivedMessage.mailing_list_id == mlist.id)
    ).all()
    by_id = {p.id: p for p in posts}
    roots = {p.thread_id: p.message_id for p in posts if p.parent_id is None}
    return {
        p.message_id: (
            by_id[p.parent_id].message_id if p.parent_id in by_id else "",
            roots.get(p.thread_id, ""),
        )
        for p in posts
    }


def test_a_member_downloads_the_month_and_it_imports_with_the_same_threads(
    lab: Lab, db: Session, page: Page, web: str, tmp_path: Path
) -> None:
    ann, bob, mlist = private_archive(db)
    subject = unique("Mbox thread ")
    first = make_post(ann, mlist.posting_address, subject=subject, body="Who runs Exim?\n")
    first_id = first.split(b"Message-ID: ", 1)[1].split(b"\n", 1)[0].decode().strip()
    reply = make_post(
        bob,
        mlist.posting_address,
        subject=f"Re: {subject}",
        body="> Who runs Exim?\n\nWe do.\n",
        headers={"In-Reply-To": first_id, "References": first_id},
    )
    reply_id = reply.split(b"Message-ID: ", 1)[1].split(b"\n", 1)[0].decode().strip()
    other = unique("Another topic ")
    for sender, raw in (
        (ann, first),
        (bob, reply),
        (ann, make_post(ann, mlist.posting_address, subject=other, body="Unrelated.\n")),
    ):
        assert lab.send(sender, [mlist.posting_address], raw) is None
    waits(lab, lambda: copies(lab, other, bob) == 1 and copies(lab, "We do.", ann) == 1)
    # the worker archives the accepted posts a moment after the 250 (the journal)
    waits(lab, lambda: len(shape(db, mlist)) == 3)
    original = shape(db, mlist)
    assert len(original) == 3
    assert original[reply_id] == (first_id, first_id)

    posted = db.scalar(select(ArchivedMessage.date).where(ArchivedMessage.message_id == first_id))
    assert posted is not None
    log_in(page, web, ann, PASSWORD)
    page.goto(f"{web}/archive/{mlist.list_id}/{posted.year}/{posted.month:02d}/")
    with page.expect_download() as info:
        page.click("text=Download this month as mbox")
    saved = tmp_path / "month.mbox"
    info.value.save_as(saved)
    data = saved.read_bytes()
    assert data.startswith(b"From ") and data.count(b"\nFrom ") + 1 == 3

    copy = make_list(db, archive_policy=ArchivePolicy.private)
    env = {"MTAPLUGIN_DATABASE_URL": lab.database_url}
    done = run_mtaplugin("archive", "import", copy.fqdn_listname, str(saved), env=env)
    assert done.returncode == 0, done.stderr
    assert shape(db, copy) == original
    # Idempotent by Message-ID: a second import adds nothing.
    again = run_mtaplugin("archive", "import", copy.fqdn_listname, str(saved), env=env)
    assert again.returncode == 0, again.stderr
    assert shape(db, copy) == original
