"""Accounts in headless Chromium, as a new user tries them, against ``mtaplugin serve`` in
the private Postfix lab (the mailed links come through Postfix to the lab's sink): sign up,
verify by the mailed link, join two lists, add and verify a second address, take digests
for all lists in the global preferences and keep one list regular on My lists, then
export their data (both lists in it) and delete the account, gone from both rosters."""

from __future__ import annotations

import json
import re
from email import message_from_bytes, policy
from pathlib import Path

from playwright.sync_api import Page, expect
from sqlalchemy.orm import Session

from mtaplugin.lists import roster
from mtaplugin.model import MailingList
from mtaplugin.testing import wait_for
from mtaplugin.testing.lab import Lab
from tests.e2e.conftest import fresh, member_emails
from tests.helpers import unique
from tests.integration.labs import make_list

PASSWORD = "e2e account password"


def _link_mailed_to(lab: Lab, email: str) -> str:
    """The verification link of the newest notice to ``email``."""

    def found() -> bytes | None:
        got = [m.data for m in lab.sink.to(email) if b"/account/verify/" in m.data]
        return got[-1] if got else None

    raw = wait_for(found, timeout=60)
    assert isinstance(raw, bytes)
    body = message_from_bytes(raw, policy=policy.default).get_body(("plain",))
    assert body is not None
    link = re.search(r"(http://\S+/account/verify/[0-9a-f]+)", body.get_content())
    assert link is not None
    return link.group(1)


def _delivery(db: Session, mlist: MailingList) -> tuple[set[str], set[str]]:
    """(regular, digest) recipients of ``mlist``, as delivery resolves them."""
    fresh(db)
    try:
        regular = {r.email for r in roster.regular_recipients(db, mlist.id)}
        digest = {r.email for r in roster.digest_recipients(db, mlist.id)}
        return regular, digest
    finally:
        fresh(db)


def test_a_visitor_signs_up_joins_two_lists_takes_digests_and_deletes_the_account(
    lab: Lab, db: Session, page: Page, web: str, shot
) -> None:
    first = make_list(db, send_goodbye_message=True)
    second = make_list(db, digests_enabled=True)
    person = f"{unique('visitor')}@example.org"
    other = f"{unique('visitor2')}@example.net"

    # Sign up; the account exists once the mailed link is used.
    page.goto(f"{web}/")
    page.click("text=Sign up")
    page.fill("input[name=email]", person)
    page.fill("input[name=display_name]", "Vera Visitor")
    page.fill("input[name=password]", PASSWORD)
    page.fill("input[name=password_again]", PASSWORD)
    page.click("form[action='/signup'] button[type=submit]")
    expect(page.locator("#done")).to_contain_text("We sent a message")
    shot(page, "signup")
    link = _link_mailed_to(lab, person)
    page.goto(link)
    page.fill("input[name=password]", PASSWORD)
    shot(page, "signup-verify")
    page.click("#confirm")
    expect(page.locator("#done")).to_contain_text("Your account is ready")
    expect(page.locator("header")).to_contain_text("Log out")
    # The link works once.
    page.goto(link)
    expect(page.locator("main")).to_contain_text("not valid any more")

    # Join two lists with the account's address: no mailed confirmation needed.
    for mlist in (first, second):
        page.goto(f"{web}/lists/{mlist.list_id}/")
        expect(page.locator("input[name=email]")).to_have_value(person)
        page.click(f"form[action='/lists/{mlist.list_id}/subscribe'] button[type=submit]")
        expect(page.locator("#done")).to_contain_text("Done for")
        assert person in member_emails(db, mlist)

    # A second address, verified by its own link.
    page.goto(f"{web}/account")
    page.fill("#add-address input[name=email]", other)
    page.click("#add-address button[type=submit]")
    expect(page.locator("#done")).to_contain_text("We sent a message")
    expect(page.locator("tr.waiting")).to_contain_text(other)
    page.goto(_link_mailed_to(lab, other))
    page.click("#confirm")
    expect(page.locator("#done")).to_contain_text("The address is verified")
    expect(page.locator("#addresses")).to_contain_text(other)
    shot(page, "account")

    # Digests for all lists in the global preferences; the first list stays regular.
    page.goto(f"{web}/account/preferences")
    page.select_option("select[name=delivery_mode]", "mime_digests")
    page.click("#preferences button[type=submit]")
    expect(page.locator("#done")).to_contain_text("Saved your preferences")
    shot(page, "account-preferences")
    page.goto(f"{web}/my")
    row = page.locator("tr", has_text=first.fqdn_listname)
    row.locator("select[name=delivery_mode]").select_option("regular")
    row.locator("button[type=submit]").click()
    expect(page.locator("#done")).to_contain_text(
        f"Saved your preferences for {first.fqdn_listname}"
    )
    shot(page, "my-lists")
    regular, digest = _delivery(db, second)
    assert person in digest and person not in regular
    regular, digest = _delivery(db, first)
    assert person in regular and person not in digest

    # Export: one JSON document naming both lists, with both addresses.
    page.goto(f"{web}/account")
    with page.expect_download() as info:
        page.click("#export-data")
    exported = json.loads(Path(info.value.path()).read_text())
    lists_in_export = {m["list"] for m in exported["memberships"]}
    assert {first.fqdn_listname, second.fqdn_listname} <= lists_in_export
    assert {person, other} <= {a["email"] for a in exported["addresses"]}

    # Delete the account: gone from both rosters, and logged out.
    page.goto(f"{web}/account")
    page.check("#delete-account input[name=sure]")
    page.fill("#delete-account input[name=password]", PASSWORD)
    page.click("#delete-account button[type=submit]")
    expect(page.locator("#done")).to_contain_text("Your account is deleted")
    expect(page.locator("header")).to_contain_text("Log in")
    assert person not in member_emails(db, first)
    assert person not in member_emails(db, second)
    # The first list says goodbye, as it is set to.
    wait_for(
        lambda: any(
            b"Goodbye" in m.data and first.fqdn_listname.encode() in m.data
            for m in lab.sink.to(person)
        ),
        timeout=60,
    )
