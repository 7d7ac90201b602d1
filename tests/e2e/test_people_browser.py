"""An owner of three lists removes one address from all three in one action, in headless
Chromium against ``mtaplugin serve`` behind the private Postfix: the address leaves the
three rosters (and stays on a fourth list that someone else owns), and the goodbye of
each list reaches it through Postfix."""

from __future__ import annotations

from playwright.sync_api import Page, expect
from sqlalchemy.orm import Session

from mtaplugin.enums import MemberRole
from mtaplugin.manage import members, users
from mtaplugin.model import MailingList
from mtaplugin.testing import wait_for
from mtaplugin.testing.lab import Lab
from tests.e2e.conftest import log_in
from tests.helpers import unique
from tests.integration.conftest import make_list

PASSWORD = "e2e password 123"


def _on(db: Session, mlist: MailingList, email: str) -> bool:
    db.rollback()
    db.expire_all()
    try:
        return email in [a.email for _m, a in members.roster(db, mlist, MemberRole.member)]
    finally:
        db.rollback()


def test_an_owner_removes_one_address_from_their_three_lists(
    lab: Lab, db: Session, page: Page, web: str, shot
) -> None:
    target = f"{unique('leaver')}@example.org"
    owner = f"{unique('owner')}@example.org"
    mine = [make_list(db, target, f"{unique('stay')}@example.org") for _ in range(3)]
    theirs = make_list(db, target)
    for mlist in mine:
        members.add(db, mlist, owner, MemberRole.owner)
    users.add_user(db, owner, PASSWORD)
    db.commit()
    names = [m.fqdn_listname for m in mine]

    log_in(page, web, owner, PASSWORD)
    page.goto(f"{web}/")
    page.click("text=Find an address on all your lists")
    page.fill("input[name=email]", target)
    page.click("form[action='/people'] button:has-text('Find')")
    rows = page.locator("#people-act tbody tr")
    expect(rows).to_have_count(3)
    expect(page.locator("#people-act")).not_to_contain_text(theirs.fqdn_listname)
    shot(page, "people-find")
    page.click("button:has-text('Remove from the ticked lists')")
    for name in names:
        expect(page.locator("#done")).to_contain_text(f"Removed {target} from {name}.")
    shot(page, "people-removed")

    for mlist in mine:
        assert not _on(db, mlist, target)
    assert _on(db, theirs, target)

    # each list's goodbye goes out through the outbox and Postfix to the sink
    def goodbyes() -> bool:
        got = [m.data for m in lab.sink.to(target)]
        return all(any(name.encode() in data for data in got) for name in names)

    assert wait_for(goodbyes, timeout=90)
