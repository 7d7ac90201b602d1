"""The web UI through its Falcon app: sessions, CSRF, roles, the held queue, one-click
unsubscribe, settings, members, subscriptions by mail (SQLite and PostgreSQL)."""

from __future__ import annotations

from datetime import timedelta
from email import message_from_bytes, policy

import pytest
from sqlalchemy import func, select

from mtaplugin.copies import unsubscribe
from mtaplugin.enums import (
    Action,
    DeliveryMode,
    DeliveryStatus,
    MemberRole,
    SubscriptionPolicy,
)
from mtaplugin.manage import domains, lists, members, users
from mtaplugin.model import (
    AuditEntry,
    Ban,
    HeldMessage,
    MailingList,
    Member,
    OutboxMessage,
    PendingRequest,
)
from mtaplugin.web import list_settings
from tests.helpers import disabled_by_bounces, make_post, unique
from tests.unit.test_one_line_settings import IDENTITY
from tests.unit.webclient import PASSWORD, SECRET, Site, form_of

pytestmark = pytest.mark.usefixtures("cheap_argon2")


@pytest.fixture
def site(web_site: Site) -> Site:
    return web_site


def hold_post(site: Site, raw: bytes, sender: str = "stranger@example.net") -> int:
    with site.sessions.begin() as s:
        mlist = lists.get(s, site.address)
        row = HeldMessage(
            mailing_list_id=mlist.id,
            sender=sender,
            subject="please hold",
            reasons=[["nonmember-moderation", "The sender is not a member"]],
            raw=raw,
        )
        s.add(row)
        s.flush()
        return row.id


def _text(raw: bytes) -> str:
    msg = message_from_bytes(raw, policy=policy.default)
    body = msg.get_body(("plain",))
    assert body is not None
    return str(body.get_content())


def member_emails(site: Site) -> set[str]:
    with site.sessions() as s:
        mlist = lists.get(s, site.address)
        return {a.email for _m, a in members.roster(s, mlist, MemberRole.member)}


# --- sessions, headers, CSRF, log in ---------------------------------------------------


def test_pages_carry_security_headers_and_a_strict_cookie(site):
    page = site.client().get("/")
    assert page.status_code == 200
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    assert page.headers["x-content-type-options"] == "nosniff"
    assert page.headers["referrer-policy"] == "same-origin"
    cookie = page.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie


def test_login_logout_and_wrong_password(site):
    client = site.client()
    wrong = client.login(f"mod@{site.host}", "not the password")
    assert wrong.status_code == 401
    assert "Wrong email address or password" in wrong.text
    assert client.get(f"/lists/{site.list_id}/held").status_code in (303, 404)
    ok = client.login(f"mod@{site.host}")
    assert ok.status_code == 303
    assert client.get(f"/lists/{site.list_id}/held").status_code == 200
    client.post("/logout", {})
    assert client.get(f"/lists/{site.list_id}/held").status_code == 303


def test_a_tampered_cookie_is_not_a_session(site):
    client = site.client()
    client.login(f"mod@{site.host}")
    payload, mac = client.cookie.split(".")
    client.cookie = payload + "." + ("A" if mac[0] != "A" else "B") + mac[1:]
    assert client.get(f"/lists/{site.list_id}/held").status_code == 303


def test_login_is_rate_limited_per_ip_and_address(site):
    client = site.client()
    for _ in range(users.MAX_FAILURES):
        assert client.login(f"mod@{site.host}", "bad guess!").status_code == 401
    locked = client.login(f"mod@{site.host}")
    assert locked.status_code == 429
    assert "Too many failed log-ins" in locked.text
    other_ip = site.client()
    other_ip.remote_addr = "192.0.2.99"
    assert other_ip.login(f"mod@{site.host}").status_code == 303


def test_a_new_password_ends_the_old_sessions(site):
    client = site.client()
    client.login(f"mod@{site.host}")
    with site.sessions.begin() as s:
        users.set_password(s, f"mod@{site.host}", "another password")
    assert client.get(f"/lists/{site.list_id}/held").status_code == 303


def test_a_post_without_csrf_token_is_refused_and_changes_nothing(site):
    held_id = hold_post(site, make_post("stranger@example.net", site.address))
    client = site.client()
    client.login(f"mod@{site.host}")
    refused = client.post(
        f"/lists/{site.list_id}/held", {"action": "discard", "request_id": held_id}, csrf=False
    )
    assert refused.status_code == 403
    assert "security token" in refused.text
    wrong = client.post(
        f"/lists/{site.list_id}/held",
        [("action", "discard"), ("request_id", str(held_id)), ("csrf_token", "forged")],
        csrf=False,
    )
    assert wrong.status_code == 403
    with site.sessions() as s:
        assert s.get(HeldMessage, held_id) is not None


# --- roles -------------------------------------------------------------------------------


def test_an_owner_cannot_see_another_domains_list(site, module_sessions):
    other_host = f"{unique('other')}.test"
    with module_sessions.begin() as s:
        domains.create(s, other_host)
        secret = lists.create(s, f"secret@{other_host}", style_name="private-default")
        secret_id = secret.list_id
    client = site.client()
    client.login(f"owner@{site.host}")
    assert client.get(f"/lists/{site.list_id}/settings").status_code == 200
    for path in (
        "/",
        f"/lists/{secret_id}/settings",
        f"/lists/{secret_id}/held",
        f"/lists/{secret_id}/members",
        f"/lists/{secret_id}/",
    ):
        page = client.get(path)
        assert "secret@" not in page.text, path
        if path != "/":
            assert page.status_code == 404, path
    assert client.get(f"/domains/{other_host}").status_code == 404


def test_a_moderator_may_moderate_but_not_administer(site):
    client = site.client()
    client.login(f"mod@{site.host}")
    assert client.get(f"/lists/{site.list_id}/held").status_code == 200
    assert client.get(f"/lists/{site.list_id}/settings").status_code == 403
    assert client.get(f"/lists/{site.list_id}/members").status_code == 403


def test_a_domain_owner_creates_and_removes_lists(site):
    with site.sessions.begin() as s:
        user = users.add_user(s, f"boss@{site.host}", PASSWORD)
        domain = domains.get(s, site.host)
        domain.owners.append(user)
        users.add_user(s, f"deputy@{site.host}", PASSWORD)
    client = site.client()
    client.login(f"boss@{site.host}")
    made = client.post(f"/domains/{site.host}", {"op": "create", "list_name": "news"})
    assert made.status_code == 200 and f"news@{site.host}" in made.text
    kept = client.post(
        f"/domains/{site.host}",
        {"op": "remove", "list_id": f"news.{site.host}", "confirm_name": "wrong"},
    )
    assert kept.status_code == 400 and "confirm_name" in kept.text
    gone = client.post(
        f"/domains/{site.host}",
        {"op": "remove", "list_id": f"news.{site.host}", "confirm_name": f"news@{site.host}"},
    )
    assert gone.status_code == 200
    with site.sessions() as s:
        assert (
            s.scalar(select(MailingList).where(MailingList.list_id == f"news.{site.host}")) is None
        )


def test_only_the_site_admin_adds_or_removes_a_domains_owners(site):
    """One rule for the web and REST (security review L6): a domain owner may not make
    someone else an owner, nor remove the other owners; the site admin may."""
    host = site.host
    with site.sessions.begin() as s:
        domain = domains.get(s, host)
        for local in ("boss", "partner"):
            domain.owners.append(users.add_user(s, f"{local}@{host}", PASSWORD))
        users.add_user(s, f"deputy@{host}", PASSWORD)
        users.add_user(s, f"root@{host}", PASSWORD, site_admin=True)

    def owners() -> set[str]:
        with site.sessions() as s:
            return {a.email for u in domains.get(s, host).owners for a in u.addresses}

    boss = site.client()
    boss.login(f"boss@{host}")
    page = boss.get(f"/domains/{host}")
    assert page.status_code == 200 and f"partner@{host}" in page.text
    assert 'value="add_owner"' not in page.text and 'value="remove_owner"' not in page.text
    for op, email in (("add_owner", f"deputy@{host}"), ("remove_owner", f"partner@{host}")):
        refused = boss.post(f"/domains/{host}", {"op": op, "email": email})
        assert refused.status_code == 403, op
        assert "only the site administrator" in refused.text
    assert owners() == {f"boss@{host}", f"partner@{host}"}
    deputy = site.client()
    deputy.login(f"deputy@{host}")
    assert deputy.get(f"/lists/{site.list_id}/settings").status_code == 403

    admin = site.client()
    admin.login(f"root@{host}")
    assert 'value="add_owner"' in admin.get(f"/domains/{host}").text
    added = admin.post(f"/domains/{host}", {"op": "add_owner", "email": f"deputy@{host}"})
    assert added.status_code == 200 and f"deputy@{host} owns {host} now" in added.text
    removed = admin.post(f"/domains/{host}", {"op": "remove_owner", "email": f"partner@{host}"})
    assert removed.status_code == 200
    assert owners() == {f"boss@{host}", f"deputy@{host}"}
    assert deputy.get(f"/lists/{site.list_id}/settings").status_code == 200


# --- the held queue -----------------------------------------------------------------------


def test_moderator_approves_one_post_and_it_goes_to_the_outbox(site):
    held_id = hold_post(site, make_post("stranger@example.net", site.address, subject="hi"))
    client = site.client()
    client.login(f"mod@{site.host}")
    queue = client.get(f"/lists/{site.list_id}/held")
    assert "stranger@example.net" in queue.text and "The sender is not a member" in queue.text
    done = client.post(f"/lists/{site.list_id}/held/{held_id}", {"action": "approve"})
    assert done.status_code == 200
    with site.sessions() as s:
        assert s.get(HeldMessage, held_id) is None
        row = s.scalar(
            select(OutboxMessage)
            .where(OutboxMessage.kind == "release")
            .order_by(OutboxMessage.id.desc())
        )
        assert row is not None and "anne@example.com" in row.recipients
        entry = s.scalar(
            select(AuditEntry)
            .where(AuditEntry.action == "held.approve")
            .order_by(AuditEntry.id.desc())
        )
        assert entry is not None and entry.actor == f"web:mod@{site.host}"


def test_bulk_reject_with_a_reason_and_defer(site):
    ids = [hold_post(site, make_post("x@example.net", site.address)) for _ in range(3)]
    client = site.client()
    client.login(f"mod@{site.host}")
    client.post(
        f"/lists/{site.list_id}/held",
        [("action", "reject"), ("reason", "off topic"), *[("request_id", str(i)) for i in ids[:2]]],
    )
    client.post(f"/lists/{site.list_id}/held", [("action", "defer"), ("request_id", str(ids[2]))])
    with site.sessions() as s:
        assert s.get(HeldMessage, ids[0]) is None and s.get(HeldMessage, ids[1]) is None
        assert s.get(HeldMessage, ids[2]) is not None
        reasons = s.scalars(select(AuditEntry.detail).where(AuditEntry.action == "held.reject"))
        assert sum(1 for d in reasons if d.get("reason") == "off topic") >= 2


def test_a_held_post_is_shown_safely(site):
    from email.message import EmailMessage

    msg = EmailMessage()
    msg["From"] = "evil@example.net"
    msg["To"] = site.address
    msg["Subject"] = "<script>alert(1)</script>"
    msg.set_content("plain <b>text</b> & more")
    msg.add_alternative(
        '<p onclick="steal()">Hi<script>alert(2)</script><img src="http://track.example/x">'
        '<a href="javascript:alert(3)">x</a></p>',
        subtype="html",
    )
    msg.add_attachment(
        b"MZ\x90\x00binary", maintype="application", subtype="x-msdownload", filename="invoice.exe"
    )
    held_id = hold_post(site, msg.as_bytes(), "evil@example.net")
    client = site.client()
    client.login(f"mod@{site.host}")
    page = client.get(f"/lists/{site.list_id}/held/{held_id}").text
    assert "<script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "plain &lt;b&gt;text&lt;/b&gt; &amp; more" in page
    assert "onclick" not in page and "track.example" not in page and "javascript:" not in page
    assert "invoice.exe" in page and "application/x-msdownload" in page


# --- one-click unsubscribe ------------------------------------------------------------------


def test_one_click_post_unsubscribes_at_once(site):
    token = unsubscribe.make_token(SECRET, site.list_id, "anne@example.com")
    url = f"/lists/{site.list_id}/unsubscribe/{token}"
    client = site.client()
    answer = client.post(url, {"List-Unsubscribe": "One-Click"}, csrf=False)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain")
    assert "anne@example.com is unsubscribed" in answer.text
    assert "set-cookie" not in answer.headers
    assert "anne@example.com" not in member_emails(site)
    again = client.post(url, {"List-Unsubscribe": "One-Click"}, csrf=False)
    assert again.status_code == 200 and "not a member" in again.text


def test_one_click_accepts_multipart_bodies(site):
    from falcon import testing

    token = unsubscribe.make_token(SECRET, site.list_id, "bob@example.com")
    body = (
        b'--XyZ\r\nContent-Disposition: form-data; name="List-Unsubscribe"\r\n\r\n'
        b"One-Click\r\n--XyZ--\r\n"
    )
    answer = testing.simulate_post(
        site.app,
        f"/lists/{site.list_id}/unsubscribe/{token}",
        body=body,
        headers={"Content-Type": "multipart/form-data; boundary=XyZ"},
    )
    assert answer.status_code == 200
    assert "bob@example.com" not in member_emails(site)


def test_one_click_bad_token_or_body_changes_nothing(site):
    good = unsubscribe.make_token(SECRET, site.list_id, "anne@example.com")
    forged = unsubscribe.make_token(
        "another-secret-0123456789abcdef012345", site.list_id, "anne@example.com"
    )
    other_list = unsubscribe.make_token(SECRET, "other.example.org", "anne@example.com")
    client = site.client()
    for token in (forged, other_list, good[:-2], "garbage"):
        answer = client.post(
            f"/lists/{site.list_id}/unsubscribe/{token}",
            {"List-Unsubscribe": "One-Click"},
            csrf=False,
        )
        assert answer.status_code == 404
        assert "not valid" in answer.text
    wrong_body = client.post(f"/lists/{site.list_id}/unsubscribe/{good}", {"x": "y"}, csrf=False)
    assert wrong_body.status_code == 400
    assert "anne@example.com" in member_emails(site)


def test_one_click_get_shows_a_confirmation_button(site):
    token = unsubscribe.make_token(SECRET, site.list_id, "anne@example.com")
    page = site.client().get(f"/lists/{site.list_id}/unsubscribe/{token}")
    assert page.status_code == 200
    assert 'name="List-Unsubscribe" value="One-Click"' in page.text
    assert "anne@example.com" in member_emails(site)


# --- settings, members ---------------------------------------------------------------------


def test_owner_changes_settings_and_bad_input_names_the_field(site):
    client = site.client()
    client.login(f"owner@{site.host}")
    bad = client.post(
        f"/lists/{site.list_id}/settings/message-acceptance",
        {
            "default_member_action": "hold",
            "max_message_size": "lots",
            "default_nonmember_action": "bogus",
            "accept_these_nonmembers": "^[unclosed",
        },
    )
    assert bad.status_code == 400
    assert "max_message_size: expected a whole number" in bad.text
    assert "default_nonmember_action: unknown value" in bad.text
    assert "accept_these_nonmembers: bad regular expression" in bad.text
    with site.sessions() as s:
        assert lists.get(s, site.address).default_member_action is Action.defer
    page = client.get(f"/lists/{site.list_id}/settings/list-identity").text
    assert "Subject prefix" in page
    ok = client.post(
        f"/lists/{site.list_id}/settings/list-identity",
        IDENTITY,
    )
    assert ok.status_code == 200 and "Saved" in ok.text
    with site.sessions() as s:
        mlist = lists.get(s, site.address)
        assert mlist.description == "The team" and mlist.advertised is False
        assert mlist.subject_prefix == "[T]"


def test_a_form_with_one_bad_field_keeps_every_checkbox_and_saves_only_the_correction(site):
    """The form comes back after an error with the boxes as they were (not all unchecked
    from the hidden field before each box); corrected and saved, only the correction is
    stored."""
    group = "automatic-responses"
    action = f"/lists/{site.list_id}/settings/{group}"
    with site.sessions.begin() as s:
        mlist = lists.get(s, site.address)
        mlist.send_welcome_message = True
        mlist.admin_immed_notify = True
        mlist.send_goodbye_message = False
        mlist.respond_to_post_requests = True
        before = {name: getattr(mlist, name) for name in list_settings.GROUPS[group][1]}
    assert any(v is True for v in before.values()) and any(v is False for v in before.values())
    client = site.client()
    client.login(f"owner@{site.host}")
    sent = [(k, v) for k, v in form_of(client.get(action).text, action) if k != "csrf_token"]
    bad = [(k, "soon" if k == "autoresponse_grace_period" else v) for k, v in sent]
    again = client.post(action, bad)
    assert again.status_code == 400
    assert "autoresponse_grace_period: expected a number of days" in again.text
    resent = [(k, v) for k, v in form_of(again.text, action) if k != "csrf_token"]
    assert resent == bad  # every box as it was, the bad value as typed
    fixed = [(k, "14" if k == "autoresponse_grace_period" else v) for k, v in resent]
    saved = client.post(action, fixed)
    assert client.posted is not None and client.posted.status_code == 303
    assert saved.status_code == 200 and "Saved: Grace period" in saved.text
    with site.sessions() as s:
        mlist = lists.get(s, site.address)
        after = {name: getattr(mlist, name) for name in list_settings.GROUPS[group][1]}
    assert after == {**before, "autoresponse_grace_period": timedelta(days=14)}
    # The message is shown once: a reload says nothing more.
    assert "Saved:" not in client.get(action).text


def test_every_settings_page_shows_settings_that_act(site):
    """Every setting shown is acted on: no page marks one "not active yet" any more."""
    client = site.client()
    client.login(f"owner@{site.host}")
    index = client.get(f"/lists/{site.list_id}/settings").text
    assert "not active yet" not in index
    for group in list_settings.GROUPS:
        page = client.get(f"/lists/{site.list_id}/settings/{group}").text
        assert "not active yet" not in page and "not-active" not in page
    archiving = client.get(f"/lists/{site.list_id}/settings/archiving").text
    # archive_policy and archive_rendering_mode are both acted on (mtaplugin.archive)
    assert "archive_rendering_mode" in archiving
    # max_days_to_hold is acted on (the scheduler's hold-expiry job)
    acceptance = client.get(f"/lists/{site.list_id}/settings/message-acceptance").text
    assert 'id="field-max_days_to_hold"' in acceptance


def test_the_usenet_page_is_active_translated_and_saves(site):
    client = site.client()
    client.login(f"owner@{site.host}")
    page = client.get(f"/lists/{site.list_id}/settings/usenet").text
    assert "Moderation of the newsgroup" in page and "Linked newsgroup" in page
    assert "not active yet" not in page and 'class="not-active"' not in page
    german = client.get(
        f"/lists/{site.list_id}/settings/usenet", headers={"Accept-Language": "de"}
    ).text
    assert "Moderation der Newsgroup" in german and "Verknüpfte Newsgroup" in german
    bad = client.post(
        f"/lists/{site.list_id}/settings/usenet",
        {"linked_newsgroup": "local.test", "newsgroup_moderation": "sometimes"},
    )
    assert bad.status_code == 400 and "newsgroup_moderation: unknown value" in bad.text
    ok = client.post(
        f"/lists/{site.list_id}/settings/usenet",
        {
            "gateway_to_mail": "1",
            "linked_newsgroup": "local.test",
            "nntp_prefix_subject_too": "1",
            "newsgroup_moderation": "moderated",
        },
    )
    assert ok.status_code == 200 and "Saved" in ok.text
    with site.sessions() as s:
        mlist = lists.get(s, site.address)
        assert (mlist.gateway_to_mail, mlist.gateway_to_news) == (True, False)
        assert mlist.linked_newsgroup == "local.test"
        assert mlist.newsgroup_moderation == "moderated"


def test_members_search_paging_add_moderation_and_mass(site):
    client = site.client()
    client.login(f"owner@{site.host}")
    lines = "\n".join(f"Person {n} <p{n:04d}@mass.example>" for n in range(1000))
    done = client.post(f"/lists/{site.list_id}/mass", {"op": "subscribe", "addresses": lines})
    assert done.status_code == 200 and "Subscribed 1000" in done.text
    bad = client.post(f"/lists/{site.list_id}/mass", {"op": "subscribe", "addresses": "nope\n"})
    assert bad.status_code == 400 and "line 1" in bad.text
    page = client.get(f"/lists/{site.list_id}/members", params={"q": "mass.example", "page": "3"})
    assert "1000 found; page 3 of 20" in page.text
    assert "p0100@mass.example" in page.text and "p0099@mass.example" not in page.text
    client.post(
        f"/lists/{site.list_id}/members",
        {
            "op": "moderation",
            "role": "member",
            "email": "p0001@mass.example",
            "moderation_action": "hold",
        },
    )
    unconfirmed = client.post(
        f"/lists/{site.list_id}/mass",
        {"op": "unsubscribe", "addresses": "p0002@mass.example\np0003@mass.example"},
        headers={"Accept": "application/json"},
    )
    assert unconfirmed.status_code == 400 and unconfirmed.json["done"] == 0
    assert unconfirmed.json["errors"][0].startswith("confirm_name: ")
    wrong = client.post(
        f"/lists/{site.list_id}/mass",
        {"op": "unsubscribe", "addresses": "p0003@mass.example", "confirm_name": "other"},
    )
    assert wrong.status_code == 400 and "confirm_name" in wrong.text
    gone = client.post(
        f"/lists/{site.list_id}/mass",
        {
            "op": "unsubscribe",
            "addresses": "p0002@mass.example\nx@nowhere.example",
            "confirm_name": site.address.upper(),
        },
        headers={"Accept": "application/json"},
    )
    assert gone.json == {"done": 1, "already": 1, "refused": [], "errors": []}
    with site.sessions() as s:
        mlist = lists.get(s, site.address)
        n = s.scalar(
            select(func.count(Member.id)).where(
                Member.mailing_list_id == mlist.id, Member.role == MemberRole.member
            )
        )
        assert n == 2 + 999
        m = members.get(s, mlist, "p0001@mass.example", MemberRole.member)
        assert m.moderation_action is Action.hold


def _row(page: str, email: str) -> str:
    return page.split(f"<td>{email}</td>")[1].split("</tr>")[0]


def test_members_page_shows_the_bounce_record_and_why_delivery_is_off(site):
    from datetime import UTC, datetime

    from mtaplugin.enums import DeliveryStatus
    from mtaplugin.model import Address

    with site.sessions.begin() as s:
        mlist = lists.get(s, site.address)
        for email in ("carol@example.com", "dave@example.com", "erin@example.com"):
            members.add(s, mlist, email, MemberRole.member)
        anne = members.get(s, mlist, "anne@example.com", MemberRole.member)
        bounced, warned = (
            datetime(2026, 12, 1, 9, 30, tzinfo=UTC),
            datetime(2026, 12, 3, 6, tzinfo=UTC),
        )
        disabled_by_bounces(anne, bounced, warned, warnings=2)
        bob = members.get(s, mlist, "bob@example.com", MemberRole.member)
        bob.bounce_score = 2
        bob.last_bounce_received = datetime(2026, 11, 30, 23, 59, tzinfo=UTC)
        members.get(
            s, mlist, "carol@example.com", MemberRole.member
        ).delivery_status = DeliveryStatus.by_moderator
        # "no mail" set on the address holds for every list of the address
        dave = s.scalar(select(Address).where(Address.email == "dave@example.com"))
        dave.delivery_status = DeliveryStatus.by_user
    client = site.client()
    client.login(f"owner@{site.host}")
    page = client.get(f"/lists/{site.list_id}/members").text
    for heading in ("Bounce score", "Last bounce", "Warnings sent", "Delivery"):
        assert f"<th>{heading}</th>" in page
    anne_row = _row(page, "anne@example.com")
    assert '<td class="bounce-score">5</td>' in anne_row
    assert '<td class="last-bounce">2026-12-01 09:30 UTC</td>' in anne_row
    assert '<td class="warnings-sent">2 (last 2026-12-03 06:00 UTC)</td>' in anne_row
    assert '<td class="delivery">disabled by bounces on 2026-12-01</td>' in anne_row
    bob_row = _row(page, "bob@example.com")
    assert '<td class="bounce-score">2</td>' in bob_row
    assert '<td class="warnings-sent">0</td>' in bob_row
    assert '<td class="delivery">enabled</td>' in bob_row
    assert "disabled by a moderator" in _row(page, "carol@example.com")
    assert "disabled by the member" in _row(page, "dave@example.com")
    erin_row = _row(page, "erin@example.com")
    assert '<td class="last-bounce">-</td>' in erin_row and "enabled" in erin_row
    # Owners and moderators have no bounce record to show.
    owners = client.get(f"/lists/{site.list_id}/members", params={"role": "owner"}).text
    assert "Bounce score" not in owners and f"owner@{site.host}" in owners
    # In the reader's language.
    german = client.get(f"/lists/{site.list_id}/members", headers={"Accept-Language": "de"}).text
    assert "2026-12-01" in _row(german, "anne@example.com")
    assert "disabled by bounces" not in german


def test_bans_and_header_matches(site):
    client = site.client()
    client.login(f"owner@{site.host}")
    assert (
        client.post(f"/lists/{site.list_id}/bans", {"email": "spam@example.net"}).status_code == 200
    )
    bad = client.post(f"/lists/{site.list_id}/bans", {"email": "^(unclosed"})
    assert bad.status_code == 400
    bad = client.post(
        f"/lists/{site.list_id}/header-matches", {"header": "X-Spam", "pattern": "(", "action": ""}
    )
    assert bad.status_code == 400 and "pattern" in bad.text
    ok = client.post(
        f"/lists/{site.list_id}/header-matches",
        {"header": "X-Spam", "pattern": "^yes", "action": "discard"},
    )
    assert ok.status_code == 200 and "^yes" in ok.text
    assert "<td>discard without a word</td>" in ok.text  # the action in words
    with site.sessions() as s:
        mlist = lists.get(s, site.address)
        assert (
            s.scalar(select(Ban.email).where(Ban.mailing_list_id == mlist.id)) == "spam@example.net"
        )


# --- subscribers ---------------------------------------------------------------------------


def test_subscribe_by_mail_confirmation(site):
    client = site.client()
    asked = client.post(f"/lists/{site.list_id}/subscribe", {"email": "new@example.org"})
    assert asked.status_code == 200 and "We sent a message" in asked.text
    with site.sessions() as s:
        pending = s.scalar(select(PendingRequest).where(PendingRequest.email == "new@example.org"))
        assert pending is not None
        token = pending.token
        notice = s.scalar(select(OutboxMessage).order_by(OutboxMessage.id.desc()))
        assert notice is not None and f"/confirm/{token}" in _text(notice.raw)
    assert "new@example.org" not in member_emails(site)
    assert client.get(f"/confirm/{token}").status_code == 200  # a GET changes nothing
    assert "new@example.org" not in member_emails(site)
    done = client.post(f"/confirm/{token}", {})
    assert "new@example.org is now a member" in done.text
    assert "new@example.org" in member_emails(site)
    assert client.get(f"/confirm/{token}").status_code == 404
    bad = client.post(f"/lists/{site.list_id}/subscribe", {"email": "not an address"})
    assert bad.status_code == 400


def test_my_lists_preferences(site):
    with site.sessions.begin() as s:
        users.add_user(s, "anne@example.com", PASSWORD)
    client = site.client()
    client.login("anne@example.com")
    page = client.get("/my")
    assert site.address in page.text
    with site.sessions() as s:
        member = members.get(s, lists.get(s, site.address), "anne@example.com", MemberRole.member)
        member_id = member.member_id
    client.post("/my", {"member_id": member_id, "delivery_mode": "regular", "delivery": "by_user"})
    with site.sessions() as s:
        member = members.get(s, lists.get(s, site.address), "anne@example.com", MemberRole.member)
        assert member.delivery_status is not None and member.delivery_status.value == "by_user"
    other = client.post("/my", {"member_id": "someone-else", "delivery_mode": "regular"})
    assert other.status_code == 404
    # A digest can be chosen, and the page then says what the next one holds.
    assert "not active yet" not in client.get("/my").text
    digest = client.post("/my", {"member_id": member_id, "delivery_mode": "mime_digests"})
    assert digest.status_code in (200, 303)
    with site.sessions() as s:
        member = members.get(s, lists.get(s, site.address), "anne@example.com", MemberRole.member)
        assert member.delivery_mode is not None and member.delivery_mode.value == "mime_digests"
    assert "Next digest: no post yet" in client.get("/my").text


def test_my_lists_save_keeps_delivery_disabled_by_bounces(site):
    """The page shows delivery off by bounces, and why, for a member whose delivery bounces
    disabled; saving another preference with that choice left as it is leaves delivery
    disabled by bounces (its score, warnings and coming removal), as Mailman 2.1's options
    page does; choosing "on" is the member switching delivery back on, which starts over."""
    with site.sessions.begin() as s:
        users.add_user(s, "bob@example.com", PASSWORD)
        member = members.get(s, lists.get(s, site.address), "bob@example.com", MemberRole.member)
        member.delivery_status = DeliveryStatus.by_bounces
        member.bounce_score = 5
        member.total_warnings_sent = 1
        member_id = member.member_id
    client = site.client()
    client.login("bob@example.com")
    assert '<option value="keep" selected>off: turned off by bounces' in client.get("/my").text
    client.post(
        "/my", {"member_id": member_id, "delivery_mode": "mime_digests", "delivery": "keep"}
    )
    with site.sessions() as s:
        member = members.get(s, lists.get(s, site.address), "bob@example.com", MemberRole.member)
        assert member.delivery_mode is DeliveryMode.mime_digests
        assert member.delivery_status is DeliveryStatus.by_bounces
        assert (member.bounce_score, member.total_warnings_sent) == (5, 1)
    client.post(
        "/my", {"member_id": member_id, "delivery_mode": "mime_digests", "delivery": "enabled"}
    )
    with site.sessions() as s:
        member = members.get(s, lists.get(s, site.address), "bob@example.com", MemberRole.member)
        assert member.delivery_status is DeliveryStatus.enabled
        assert (member.bounce_score, member.total_warnings_sent) == (0, 0)


def test_language_from_accept_language():
    from mtaplugin.web.language import choose, parse_accept_language

    assert parse_accept_language("de-CH,de;q=0.9,en;q=0.5,*;q=0.1") == ["de-ch", "de", "en"]
    assert parse_accept_language("fr;q=0, en") == ["en"]
    assert choose(None, "xx-YY, en;q=0.2", "en") == "en"


def test_password_reset_by_mail(site):
    client = site.client()
    unknown = client.post("/reset", {"email": "nobody@example.org"})
    known = client.post("/reset", {"email": f"mod@{site.host}"})
    # The same answer whether the address has a user or not.
    assert unknown.status_code == known.status_code == 200
    assert "If nobody@example.org belongs to a user" in unknown.text
    with site.sessions() as s:
        pending = s.scalar(select(PendingRequest).where(PendingRequest.email == f"mod@{site.host}"))
        assert pending is not None
        token = pending.token
        mail = s.scalar(select(OutboxMessage).order_by(OutboxMessage.id.desc()))
        assert mail is not None and f"/reset/{token}" in _text(mail.raw)
        assert not s.scalar(
            select(PendingRequest).where(PendingRequest.email == "nobody@example.org")
        )
    client.post("/reset", {"email": f"mod@{site.host}"})  # no second mail within minutes
    with site.sessions() as s:
        n = s.scalar(
            select(func.count(PendingRequest.id)).where(PendingRequest.email == f"mod@{site.host}")
        )
        assert n == 1
    differ = client.post(f"/reset/{token}", {"password": "new password 1", "password_again": "x"})
    assert differ.status_code == 400 and "differ" in differ.text
    short = client.post(f"/reset/{token}", {"password": "short", "password_again": "short"})
    assert short.status_code == 400 and "password" in short.text
    done = client.post(
        f"/reset/{token}", {"password": "new password 1", "password_again": "new password 1"}
    )
    assert done.status_code == 200 and "Your password is changed" in done.text
    assert client.get(f"/reset/{token}").status_code == 404
    assert client.login(f"mod@{site.host}", PASSWORD).status_code == 401
    assert client.login(f"mod@{site.host}", "new password 1").status_code == 303


def test_moderated_subscriptions_wait_for_the_moderators(site):
    with site.sessions.begin() as s:
        lists.get(s, site.address).subscription_policy = SubscriptionPolicy.confirm_then_moderate
    visitor = site.client()
    for email in ("carl@example.org", "dora@example.org"):
        visitor.post(f"/lists/{site.list_id}/subscribe", {"email": email})
        with site.sessions() as s:
            token = s.scalar(select(PendingRequest.token).where(PendingRequest.email == email))
        done = visitor.post(f"/confirm/{token}", {})
        assert "a moderator" in done.text
    assert "carl@example.org" not in member_emails(site)
    moderator = site.client()
    moderator.login(f"mod@{site.host}")
    page = moderator.get(f"/lists/{site.list_id}/requests")
    assert "carl@example.org" in page.text and "dora@example.org" in page.text
    with site.sessions() as s:
        ids = dict(
            s.execute(
                select(PendingRequest.email, PendingRequest.id).where(
                    PendingRequest.step == "moderate"
                )
            ).all()
        )
        old_tokens = set(s.scalars(select(PendingRequest.token)))
    assert token not in old_tokens  # the subscriber's token cannot act for the moderators
    moderator.post(
        f"/lists/{site.list_id}/requests",
        {"action": "accept", "request_id": ids["carl@example.org"]},
    )
    moderator.post(
        f"/lists/{site.list_id}/requests",
        {"action": "reject", "reason": "not on the team", "request_id": ids["dora@example.org"]},
    )
    emails = member_emails(site)
    assert "carl@example.org" in emails and "dora@example.org" not in emails
    with site.sessions() as s:
        told = s.scalar(select(OutboxMessage).order_by(OutboxMessage.id.desc()))
        assert told is not None and "not on the team" in _text(told.raw)
        assert "dora@example.org" in told.recipients


def test_a_user_chooses_a_language_among_the_catalogs(site):
    with site.sessions.begin() as s:
        users.add_user(s, "lena@example.com", PASSWORD)
    client = site.client()
    client.login("lena@example.com")
    assert client.post("/my", {"preferred_language": "en"}).status_code == 200
    bad = client.post("/my", {"preferred_language": "xx"})
    assert bad.status_code == 400 and "preferred_language" in bad.text
    with site.sessions() as s:
        user = users.user_by_email(s, "lena@example.com")
        assert user is not None and user.preferred_language == "en"
    assert '<html lang="en">' in client.get("/my").text


def test_a_chinese_browser_gets_the_simplified_chinese_pages(site):
    page = site.client().get("/login", headers={"Accept-Language": "zh-cn,zh;q=0.9"})
    # BCP 47 in the page (browsers pick Chinese rather than Japanese glyphs by it).
    assert '<html lang="zh-CN">' in page.text
    assert "登录" in page.text
    japanese = site.client().get("/login", headers={"Accept-Language": "ja"})
    assert '<html lang="ja">' in japanese.text and "ログイン" in japanese.text


# --- every way in goes through the workflow: bans and the list's notices ------------------
def _ban(site: Site, email: str) -> None:
    from mtaplugin.manage import bans

    with site.sessions.begin() as s:
        bans.add(s, lists.get(s, site.address), email)


def _stored(site: Site, email: str) -> tuple[bool, int, int]:
    """(a member?, pending requests, outbox rows) for ``email``."""
    with site.sessions() as s:
        rows = s.scalars(select(OutboxMessage)).all()
        waiting = s.scalar(
            select(func.count(PendingRequest.id)).where(PendingRequest.email == email)
        )
        return email in member_emails(site), waiting or 0, sum(email in r.recipients for r in rows)


def _subjects_to(site: Site, rcpt: str) -> list[str]:
    with site.sessions() as s:
        rows = s.scalars(select(OutboxMessage).order_by(OutboxMessage.id)).all()
        return [
            str(message_from_bytes(r.raw, policy=policy.default)["Subject"])
            for r in rows
            if rcpt in r.recipients
        ]


def test_a_banned_address_is_refused_by_the_subscribe_page_and_nothing_is_stored(site):
    _ban(site, "^.*@spam\\.example$")
    answer = site.client().post(f"/lists/{site.list_id}/subscribe", {"email": "eve@spam.example"})
    assert answer.status_code == 400
    assert "eve@spam.example is banned from" in answer.text
    assert _stored(site, "eve@spam.example") == (False, 0, 0)


def test_the_admin_add_refuses_a_ban_and_sends_the_lists_notices(site):
    _ban(site, "eve@example.org")
    with site.sessions.begin() as s:
        mlist = lists.get(s, site.address)
        mlist.send_welcome_message, mlist.admin_notify_mchanges = True, True
        mlist.send_goodbye_message = True
    owner = site.client()
    owner.login(f"owner@{site.host}")
    refused = owner.post(
        f"/lists/{site.list_id}/members",
        {"op": "add", "role": "member", "email": "eve@example.org"},
    )
    assert refused.status_code == 400 and "eve@example.org is banned from" in refused.text
    assert _stored(site, "eve@example.org") == (False, 0, 0)
    owner.post(
        f"/lists/{site.list_id}/members",
        {"op": "add", "role": "member", "email": "fay@example.org"},
    )
    assert "fay@example.org" in member_emails(site)
    assert any("Welcome" in s for s in _subjects_to(site, "fay@example.org"))
    assert any("fay@example.org joined" in s for s in _subjects_to(site, f"owner@{site.host}"))
    owner.post(
        f"/lists/{site.list_id}/members",
        {"op": "remove", "role": "member", "email": "fay@example.org"},
    )
    assert "fay@example.org" not in member_emails(site)
    assert any("You have left" in s for s in _subjects_to(site, "fay@example.org"))
    assert any("fay@example.org left" in s for s in _subjects_to(site, f"owner@{site.host}"))


def test_the_mass_subscription_refuses_bans_and_follows_the_lists_notices(site):
    _ban(site, "^.*@spam\\.example$")
    with site.sessions.begin() as s:
        mlist = lists.get(s, site.address)
        mlist.send_welcome_message, mlist.admin_notify_mchanges = True, False
    owner = site.client()
    owner.login(f"owner@{site.host}")
    done = owner.post(
        f"/lists/{site.list_id}/mass",
        {"op": "subscribe", "addresses": "gil@example.org\neve@spam.example\n"},
        headers={"Accept": "application/json"},
    )
    assert done.json == {
        "done": 1,
        "already": 0,
        "refused": ["eve@spam.example"],
        "errors": [],
    }
    assert _stored(site, "eve@spam.example") == (False, 0, 0)
    assert any("Welcome" in s for s in _subjects_to(site, "gil@example.org"))
    assert not any("joined" in s for s in _subjects_to(site, f"owner@{site.host}"))
    page = owner.post(
        f"/lists/{site.list_id}/mass", {"op": "subscribe", "addresses": "eve@spam.example"}
    )
    assert "Refused (banned" in page.text and "eve@spam.example" in page.text
    quiet = owner.post(
        f"/lists/{site.list_id}/mass",
        {"op": "subscribe", "addresses": "hal@example.org", "quiet": "1"},
    )
    assert quiet.status_code == 200 and "hal@example.org" in member_emails(site)
    assert _subjects_to(site, "hal@example.org") == []


def test_the_one_click_page_sends_the_goodbye_and_honours_moderation(site):
    with site.sessions.begin() as s:
        mlist = lists.get(s, site.address)
        mlist.send_goodbye_message, mlist.admin_notify_mchanges = True, True
    client = site.client()
    token = unsubscribe.make_token(SECRET, site.list_id, "anne@example.com")
    client.post(
        f"/lists/{site.list_id}/unsubscribe/{token}", {"List-Unsubscribe": "One-Click"}, csrf=False
    )
    assert "anne@example.com" not in member_emails(site)
    assert any("You have left" in s for s in _subjects_to(site, "anne@example.com"))
    assert any("anne@example.com left" in s for s in _subjects_to(site, f"owner@{site.host}"))
    with site.sessions.begin() as s:
        lists.get(s, site.address).unsubscription_policy = SubscriptionPolicy.moderate
    token = unsubscribe.make_token(SECRET, site.list_id, "bob@example.com")
    answer = client.post(
        f"/lists/{site.list_id}/unsubscribe/{token}", {"List-Unsubscribe": "One-Click"}, csrf=False
    )
    assert "a moderator" in answer.text and "bob@example.com" in member_emails(site)
    assert any("asks to leave" in s for s in _subjects_to(site, f"mod@{site.host}"))


def test_the_confirmation_lifetime_is_the_sites(site):
    with site.sessions() as s:
        before = s.scalar(select(func.max(PendingRequest.id))) or 0
    site.client().post(f"/lists/{site.list_id}/subscribe", {"email": "ivy@example.org"})
    with site.sessions() as s:
        pending = s.scalars(select(PendingRequest).where(PendingRequest.id > before)).one()
        life = pending.expires_at - pending.created_at
    assert life == timedelta(seconds=259_200)  # [rules] pending_request_life's default


def test_a_web_request_that_needs_a_moderator_tells_the_moderators(site):
    with site.sessions.begin() as s:
        lists.get(s, site.address).subscription_policy = SubscriptionPolicy.confirm_then_moderate
    visitor = site.client()
    visitor.post(f"/lists/{site.list_id}/subscribe", {"email": "kit@example.org"})
    with site.sessions() as s:
        token = s.scalar(
            select(PendingRequest.token).where(PendingRequest.email == "kit@example.org")
        )
    assert not any("asks to join" in s for s in _subjects_to(site, f"mod@{site.host}"))
    assert "a moderator" in visitor.post(f"/confirm/{token}", {}).text
    assert any("kit@example.org asks to join" in s for s in _subjects_to(site, f"mod@{site.host}"))
    assert any(
        "kit@example.org asks to join" in s for s in _subjects_to(site, f"owner@{site.host}")
    )


def test_counts_of_what_waits_and_actions_redirect_to_a_page_that_says_what_was_done(site):
    first = hold_post(site, make_post("stranger@example.net", site.address, subject="one"))
    second = hold_post(site, make_post("stranger@example.net", site.address, subject="two"))
    client = site.client()
    client.login(f"mod@{site.host}")
    assert "(2 waiting)" in client.get("/").text
    queue = client.get(f"/lists/{site.list_id}/held")
    assert '<span class="count">(2)</span>' in queue.text
    page = client.post(
        f"/lists/{site.list_id}/held",
        [("request_id", str(first)), ("request_id", str(second)), ("action", "discard")],
    )
    assert client.posted is not None and client.posted.status_code == 303
    assert client.posted.headers["location"] == f"/lists/{site.list_id}/held"
    assert f"Posts {first}, {second}: discard" in page.text
    assert '<span class="count">' not in page.text and "waiting)" not in client.get("/").text
    # A reload of the page after the action repeats nothing and says it once only.
    assert "discard" not in client.get(f"/lists/{site.list_id}/held").text.split("<main>")[1]
    # An owner's change to the members redirects too.
    owner = site.client()
    owner.login(f"owner@{site.host}")
    added = owner.post(
        f"/lists/{site.list_id}/members?role=member",
        {"op": "add", "role": "member", "email": "new@example.org"},
    )
    assert owner.posted is not None and owner.posted.status_code == 303
    assert "Added new@example.org." in added.text


def test_the_list_language_is_chosen_from_the_catalogs_and_nothing_else_is_taken(site):
    client = site.client()
    client.login(f"owner@{site.host}")
    action = f"/lists/{site.list_id}/settings/list-identity"
    page = client.get(action).text
    assert '<option value="de" >Deutsch (de)</option>' in page
    assert "Who may see the list of members" in page  # the help under the field
    sent = dict(form_of(page, action))
    bad = client.post(action, {**sent, "preferred_language": "tlh"})
    assert bad.status_code == 400
    assert "preferred_language: no catalog for the language &#39;tlh&#39;" in bad.text
    good = client.post(action, {**sent, "preferred_language": "de"})
    assert "Saved: Language." in good.text  # the untouched "[Team] " prefix is no change
    with site.sessions() as s:
        assert lists.get(s, site.address).preferred_language == "de"


def test_a_german_owner_reads_the_settings_and_the_result_in_german(site):
    client = site.client()
    client.login(f"owner@{site.host}")
    action = f"/lists/{site.list_id}/settings/automatic-responses"
    german = {"Accept-Language": "de"}
    page = client.get(action, headers=german).text
    assert "Schonfrist" in page and "Tage" in page
    assert "Derselbe Absender bekommt in so vielen Tagen höchstens eine" in page
    sent = [(k, v) for k, v in form_of(page, action) if k != "csrf_token"]
    changed = [(k, "3" if k == "autoresponse_grace_period" else v) for k, v in sent]
    client.post(action, changed, headers=german, follow=False)
    assert "Gespeichert: Schonfrist." in client.get(action, headers=german).text
