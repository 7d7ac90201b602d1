"""The web UI in headless Chromium, against ``mtaplugin serve`` behind the private Postfix:
a moderator approves a post the milter held and the members get it; an owner changes a
setting and mass-subscribes 1 000 addresses; one-click unsubscribe by a plain HTTP POST (as
a mail provider does it) and by the page's button; a subscriber joins and leaves with mail
confirmations; CSRF and role checks; an owner sees who bounces and why delivery is off."""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from email import message_from_bytes, policy

from playwright.sync_api import Page, expect
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from mtaplugin.enums import MemberRole
from mtaplugin.manage import domains, lists, members, users
from mtaplugin.model import HeldMessage, MailingList, Member
from mtaplugin.testing import wait_for
from mtaplugin.testing.lab import Lab
from tests.e2e.conftest import fresh, log_in, member_emails
from tests.helpers import make_post, unique
from tests.integration.conftest import make_list

PASSWORD = "e2e password 123"


def _copy_for(lab: Lab, email: str, marker: bytes) -> bytes:
    def found() -> bytes | None:
        return next((m.data for m in lab.sink.to(email) if marker in m.data), None)

    got = wait_for(found, timeout=60)
    assert isinstance(got, bytes)
    return got


def _member_count(db: Session, mlist_id: int) -> int:
    fresh(db)
    try:
        return (
            db.scalar(
                select(func.count(Member.id)).where(
                    Member.mailing_list_id == mlist_id, Member.role == MemberRole.member
                )
            )
            or 0
        )
    finally:
        fresh(db)


def test_moderator_approves_a_held_post_and_the_members_get_it(
    lab: Lab, db: Session, page: Page, web: str, shot
) -> None:
    people = (f"{unique('ida')}@example.org", f"{unique('jon')}@example.org")
    mlist = make_list(db, *people)
    moderator = f"{unique('mod')}@example.org"
    members.add(db, mlist, moderator, MemberRole.moderator)
    users.add_user(db, moderator, PASSWORD)
    db.commit()
    marker = unique("approve-me")
    post = make_post(
        "stranger@example.com", mlist.posting_address, subject=marker, body=f"{marker}\n"
    )
    assert lab.send("stranger@example.com", [mlist.posting_address], post) is None
    assert db.scalar(select(HeldMessage.id).where(HeldMessage.subject == marker)) is not None
    fresh(db)

    log_in(page, web, moderator, PASSWORD)
    shot(page, "index")
    page.goto(f"{web}/lists/{mlist.list_id}/held")
    expect(page.locator("table.held")).to_contain_text("stranger@example.com")
    expect(page.locator("table.held")).to_contain_text("nonmember")
    shot(page, "held-queue")
    page.click(f"text={marker}")
    expect(page.locator("pre.text-part")).to_contain_text(marker)
    shot(page, "held-post")
    page.click("button[value=approve]")
    expect(page.locator("#done")).to_contain_text("approve")
    expect(page.locator("#empty")).to_be_visible()

    for person in people:
        copy = _copy_for(lab, person, marker.encode())
        assert message_from_bytes(copy, policy=policy.default)["Subject"].endswith(marker)


#: the checkboxes of the Message acceptance page (defaults: off, on, on, off)
_ACCEPTANCE_BOXES = (
    "emergency",
    "administrivia",
    "require_explicit_destination",
    "require_authenticated_senders",
)


def test_owner_changes_a_setting_and_mass_subscribes_1000(
    lab: Lab, db: Session, page: Page, web: str, shot
) -> None:
    mlist = make_list(db, admin_notify_mchanges=True)
    owner = f"{unique('own')}@example.org"
    members.add(db, mlist, owner, MemberRole.owner)
    users.add_user(db, owner, PASSWORD)
    db.commit()
    log_in(page, web, owner, PASSWORD)

    # One bad field: the form comes back with every box as it was (not all unchecked), and
    # the corrected form, saved, changes only the corrected value.
    before = {c: getattr(db.get(MailingList, mlist.id), c) for c in _ACCEPTANCE_BOXES}
    assert set(before.values()) == {True, False}
    page.goto(f"{web}/lists/{mlist.list_id}/settings/message-acceptance")
    page.fill("#in-max_message_size", "not a number")
    page.click("form.settings button[type=submit]")
    expect(page.locator("#field-max_message_size .field-error")).to_contain_text("max_message_size")
    shot(page, "settings-error")
    for name, checked in before.items():
        box = page.locator(f"#field-{name} input[type=checkbox]")
        (expect(box).to_be_checked if checked else expect(box).not_to_be_checked)()
    page.fill("#in-max_message_size", "250")
    page.click("form.settings button[type=submit]")
    expect(page.locator("p.message")).to_contain_text("Largest post")
    assert "/settings/message-acceptance" in page.url  # redirected to the page, a GET
    fresh(db)
    after = db.get(MailingList, mlist.id)
    assert after.max_message_size == 250
    assert {c: getattr(after, c) for c in _ACCEPTANCE_BOXES} == before
    fresh(db)

    page.goto(f"{web}/lists/{mlist.list_id}/mass")
    lines = "\n".join(f"Reader {n} <reader{n:04d}@{mlist.list_name}.example>" for n in range(1000))
    page.fill("textarea[name=addresses]", lines)
    page.click("#mass-form button[type=submit]")
    expect(page.locator("#mass-status")).to_contain_text("Subscribed 1000", timeout=120_000)
    expect(page.locator("#mass-progress")).to_have_attribute("value", "1000")
    shot(page, "mass-subscribe")
    assert _member_count(db, mlist.id) == 1000
    # five chunks of 200, one owners' notice naming all 1 000 (Mailman 2.1's one per
    # submission), sent with the last chunk
    told = _copy_for(lab, owner, b"These 1000 addresses were subscribed")
    assert b"reader0000@" in told and b"reader0999@" in told
    assert [m for m in lab.sink.to(owner) if b"joined" in m.data] == [
        m for m in lab.sink.to(owner) if m.data == told
    ]

    page.goto(f"{web}/lists/{mlist.list_id}/members?q=reader09")
    expect(page.locator("#total")).to_contain_text("100 found; page 1 of 2")
    shot(page, "members")


def test_one_click_unsubscribe_by_post_and_by_the_page(
    lab: Lab, db: Session, page: Page, web: str, shot
) -> None:
    host = f"{unique('oneclick')}.test"
    domains.create(db, host, base_url=web)
    mlist = lists.create(db, f"{unique('news')}@{host}")
    people = (f"{unique('kai')}@example.org", f"{unique('lea')}@example.org")
    for person in people:
        members.add(db, mlist, person)
    db.commit()
    marker = unique("oneclick").encode()
    post = make_post(people[0], mlist.posting_address, body=marker.decode() + "\n")
    assert lab.send(people[0], [mlist.posting_address], post) is None

    links = {}
    for person in people:
        msg = message_from_bytes(_copy_for(lab, person, marker), policy=policy.default)
        assert msg["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
        links[person] = re.search(r"<(http[^>]+)>", str(msg["List-Unsubscribe"])).group(1)
        assert links[person].startswith(f"{web}/lists/{mlist.list_id}/unsubscribe/")

    # A mail provider's POST: no cookie, no token but the link's own.
    request = urllib.request.Request(
        links[people[0]],
        data=b"List-Unsubscribe=One-Click",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        assert answer.status == 200
        assert f"{people[0]} is unsubscribed" in answer.read().decode()
        assert answer.headers.get("Set-Cookie") is None
    assert member_emails(db, mlist) == [people[1]]

    forged = links[people[1]][:-3] + "AAA"
    try:
        urllib.request.urlopen(
            urllib.request.Request(forged, data=b"List-Unsubscribe=One-Click", method="POST"),
            timeout=30,
        )
        raise AssertionError("a forged token was accepted")
    except urllib.error.HTTPError as exc:
        assert exc.code == 404

    # A person who clicks the link: a page with one button.
    page.goto(links[people[1]])
    expect(page.locator("h1")).to_contain_text("Unsubscribe")
    shot(page, "one-click")
    page.click("#unsubscribe")
    expect(page.locator("body")).to_contain_text(f"{people[1]} is unsubscribed")
    assert member_emails(db, mlist) == []


def test_a_subscriber_joins_and_leaves_with_mail_confirmations(
    lab: Lab, db: Session, page: Page, web: str, shot
) -> None:
    mlist = make_list(db)
    person = f"{unique('newbie')}@example.org"
    page.goto(f"{web}/lists/{mlist.list_id}/")
    shot(page, "listinfo")
    page.fill("input[name=email]", person)
    page.click("form[action$='/subscribe'] button[type=submit]")
    expect(page.locator("p.message")).to_contain_text("We sent a message")

    for step, expected in (("subscription", "is now a member"), ("leave", "not a member")):
        notice = _copy_for(lab, person, b"/confirm/")
        text = message_from_bytes(notice, policy=policy.default).get_body(("plain",)).get_content()
        link = re.search(r"(http://\S+/confirm/[A-Za-z0-9_\-]+)", text).group(1)
        page.goto(link)
        shot(page, f"confirm-{step}")
        page.click("#confirm")
        expect(page.locator("#done")).to_contain_text(expected)  # on the list page (PRG)
        lab.sink.messages.clear()
        if step == "subscription":
            assert _member_count(db, mlist.id) == 1
            page.goto(f"{web}/lists/{mlist.list_id}/unsubscribe")
            page.fill("input[name=email]", person)
            page.click("main form button[type=submit]")
            expect(page.locator("p.message")).to_contain_text("We sent a message")
    assert _member_count(db, mlist.id) == 0


def test_a_banned_address_is_refused_on_the_subscribe_page_and_nothing_is_stored(
    lab: Lab, db: Session, page: Page, web: str, shot
) -> None:
    from mtaplugin.manage import bans
    from mtaplugin.model import PendingRequest

    mlist = make_list(db)
    person = f"{unique('eve')}@spam.example"
    bans.add(db, mlist, "^.*@spam\\.example$")
    db.commit()
    page.goto(f"{web}/lists/{mlist.list_id}/subscribe")
    page.fill("input[name=email]", person)
    page.click("main form button[type=submit]")
    expect(page.locator("main")).to_contain_text(f"{person} is banned from")
    shot(page, "banned")
    fresh(db)
    assert _member_count(db, mlist.id) == 0
    assert not db.scalars(select(PendingRequest).where(PendingRequest.email == person)).all()
    fresh(db)
    assert not [m for m in lab.sink.messages if person.encode() in m.data]


def test_csrf_and_roles_hold_in_the_browser(lab: Lab, db: Session, page: Page, web: str) -> None:
    mine = make_list(db)
    owner = f"{unique('own')}@example.org"
    members.add(db, mine, owner, MemberRole.owner)
    users.add_user(db, owner, PASSWORD)
    other_host = f"{unique('elsewhere')}.test"
    domains.create(db, other_host)
    theirs = lists.create(db, f"private@{other_host}", style_name="private-default")
    db.commit()
    log_in(page, web, owner, PASSWORD)

    # Someone else's list: not listed, and its pages answer 404 as if it did not exist.
    page.goto(f"{web}/")
    expect(page.locator("main")).not_to_contain_text(theirs.fqdn_listname)
    for path in ("settings", "held", "members", ""):
        answer = page.goto(f"{web}/lists/{theirs.list_id}/{path}")
        assert answer is not None and answer.status == 404, path

    # A form post without the CSRF token (what a cross-site form would send) changes nothing.
    answer = page.request.post(
        f"{web}/lists/{mine.list_id}/settings/list-identity",
        form={"display_name": "Hijacked", "preferred_language": "en"},
    )
    assert answer.status == 403
    fresh(db)
    assert db.get(MailingList, mine.id).display_name != "Hijacked"
    fresh(db)
    headers = page.goto(f"{web}/").headers
    assert "frame-ancestors 'none'" in headers["content-security-policy"]


def test_owner_sees_who_bounces_and_why_delivery_is_off(
    lab: Lab, db: Session, page: Page, web: str, shot
) -> None:
    from datetime import UTC, datetime

    from mtaplugin.enums import DeliveryStatus

    dead, alive = f"{unique('dead')}@example.org", f"{unique('alive')}@example.org"
    mlist = make_list(db, dead, alive)
    owner = f"{unique('own')}@example.org"
    members.add(db, mlist, owner, MemberRole.owner)
    users.add_user(db, owner, PASSWORD)
    gone = members.get(db, mlist, dead, MemberRole.member)
    gone.bounce_score = 5
    gone.last_bounce_received = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)
    gone.total_warnings_sent = 1
    gone.last_warning_sent = datetime(2026, 12, 2, 9, 30, tzinfo=UTC)
    gone.delivery_status = DeliveryStatus.by_bounces
    db.commit()
    fresh(db)
    log_in(page, web, owner, PASSWORD)

    page.goto(f"{web}/lists/{mlist.list_id}/members")
    row = page.locator("table.members tr", has_text=dead)
    expect(row.locator("td.bounce-score")).to_have_text("5")
    expect(row.locator("td.last-bounce")).to_have_text("2026-12-01 09:30 UTC")
    expect(row.locator("td.warnings-sent")).to_contain_text("1")
    expect(row.locator("td.delivery")).to_have_text("disabled by bounces on 2026-12-01")
    other = page.locator("table.members tr", has_text=alive)
    expect(other.locator("td.delivery")).to_have_text("enabled")
    shot(page, "members-bounces")
    page.goto(f"{web}/lists/{mlist.list_id}/settings/bounce-processing")
    expect(page.locator("#field-bounce_score_threshold")).to_be_visible()
    expect(page.locator(".not-active")).to_have_count(0)
