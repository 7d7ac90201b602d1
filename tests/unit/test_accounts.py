"""Accounts on the web (SQLite and PostgreSQL): sign-up with a mailed link, the same answer
for an address that has an account, links used twice or expired, more addresses, log-in
by any verified one, global preferences layered under the list's own choice (and acting on
delivery), "My lists" keeping a status set by bounces or a moderator, account deletion."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from email import message_from_bytes, policy
from pathlib import Path

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin import passwords
from mtaplugin.enums import DeliveryMode, DeliveryStatus, MemberRole, RequestType
from mtaplugin.lists import roster
from mtaplugin.manage import lists, members, preferences, users
from mtaplugin.model import Address, AuditEntry, Member, OutboxMessage, PendingRequest, User
from tests.helpers import unique
from tests.unit.webclient import PASSWORD, Client, Site

LINK = re.compile(r"/account/verify/([0-9a-f]{40})")


pytestmark = pytest.mark.usefixtures("cheap_argon2")


@pytest.fixture
def site(web_site: Site) -> Site:
    return web_site


def mails_to(site: Site, email: str) -> list[str]:
    """The bodies of the notices queued for ``email``, oldest first."""
    with site.sessions() as s:
        rows = s.scalars(select(OutboxMessage).order_by(OutboxMessage.id)).all()
        out = []
        for row in rows:
            if email in row.recipients:
                msg = message_from_bytes(row.raw, policy=policy.default)
                body = msg.get_body(("plain",))
                assert body is not None
                out.append(f"Subject: {msg['Subject']}\n\n{body.get_content()}")
        return out


def link_in(text: str) -> str:
    found = LINK.search(text)
    assert found is not None, text
    return f"/account/verify/{found.group(1)}"


def sign_up(client: Client, email: str, password: str = PASSWORD, again: str | None = None):
    return client.post(
        "/signup",
        {"email": email, "password": password, "password_again": again or password},
    )


def user_of(site: Site, email: str) -> User | None:
    with site.sessions() as s:
        return users.user_by_email(s, email)


def new_account(site: Site, email: str) -> Client:
    """Sign up and verify, logged in."""
    client = site.client()
    sign_up(client, email)
    client.post(link_in(mails_to(site, email)[-1]), {"password": PASSWORD})
    return client


# --- sign-up --------------------------------------------------------------------------------
def test_sign_up_makes_the_account_only_after_the_mailed_link(site: Site):
    email = f"{unique('new')}@example.net"
    client = site.client()
    page = sign_up(client, email)
    assert "We sent a message to" in page.text
    assert user_of(site, email) is None  # nothing yet but the pending request
    with site.sessions() as s:
        assert users.find_address(s, email) is None
    [mail] = mails_to(site, email)
    assert "Confirm your new account" in mail
    link = link_in(mail)
    # Opening the link (a GET, as a mail scanner does) changes nothing.
    shown = client.get(link)
    assert shown.status_code == 200 and "Create the account of" in shown.text
    assert user_of(site, email) is None
    # Only with the password chosen at sign-up (the link stays valid after a wrong one).
    wrong = client.post(link, {"password": "not the chosen one"})
    assert wrong.status_code == 400 and "password:" in wrong.text
    assert user_of(site, email) is None
    done = client.post(link, {"password": PASSWORD})
    assert "Your account is ready" in done.text
    assert "Log out" in done.text  # logged in
    user = user_of(site, email)
    assert user is not None and passwords.verify(PASSWORD, user.password)
    with site.sessions() as s:
        address = users.get_address(s, email)
        assert address.verified_on is not None
        assert s.get(User, address.user_id).preferred_address_id == address.id
        assert s.scalar(select(AuditEntry.id).where(AuditEntry.action == "account.create"))
    # The same link a second time: a clear page, and nothing changes.
    again = site.client().post(link, {"password": PASSWORD})
    assert again.status_code == 404
    assert "not valid any more" in again.text
    assert site.client().get(link).status_code == 404
    # Log in works with the chosen password.
    other = site.client()
    assert other.login(email).status_code == 303


def test_sign_up_for_an_address_with_an_account_gives_the_same_answer(site: Site):
    email = f"{unique('old')}@example.net"
    new_account(site, email)
    before = user_of(site, email)
    assert before is not None
    page = sign_up(site.client(), email, "another password 42")
    assert page.status_code == 200
    assert "We sent a message to" in page.text  # the same words as for a new address
    mails = mails_to(site, email)
    assert "You already have an account" in mails[-1]
    assert "/reset" in mails[-1] and "/login" in mails[-1]
    assert LINK.search(mails[-1]) is None
    after = user_of(site, email)
    assert after is not None and after.password == before.password
    with site.sessions() as s:
        assert (
            s.scalar(
                select(func.count(PendingRequest.id)).where(
                    PendingRequest.email == email,
                    PendingRequest.request_type == RequestType.registration,
                )
            )
            == 0
        )
    # Asking again at once mails nothing more (no mail bombing through the form).
    sign_up(site.client(), email, "another password 42")
    assert len(mails_to(site, email)) == len(mails)


def test_sign_up_refuses_bad_input_naming_the_field(site: Site):
    client = site.client()
    bad = sign_up(client, "not an address")
    assert bad.status_code == 400 and "email:" in bad.text
    short = sign_up(client, f"{unique('s')}@example.net", "short")
    assert short.status_code == 400 and "password:" in short.text
    differ = sign_up(client, f"{unique('d')}@example.net", PASSWORD, "something else 1")
    assert differ.status_code == 400 and "password:" in differ.text
    with site.sessions() as s:
        assert (
            s.scalar(
                select(func.count(PendingRequest.id)).where(
                    PendingRequest.request_type == RequestType.registration,
                    PendingRequest.email.like("%@example.net"),
                    PendingRequest.email.like("s%"),
                )
            )
            == 0
        )


def test_an_expired_link_gets_a_clear_page_and_changes_nothing(site: Site):
    email = f"{unique('late')}@example.net"
    client = site.client()
    sign_up(client, email)
    link = link_in(mails_to(site, email)[-1])
    with site.sessions.begin() as s:
        request = s.scalar(select(PendingRequest).where(PendingRequest.email == email))
        assert request is not None
        request.expires_at = datetime.now(UTC) - timedelta(seconds=1)
    page = client.post(link, {"password": PASSWORD})
    assert page.status_code == 404 and "expired" in page.text
    assert user_of(site, email) is None


def test_a_passwordless_user_made_by_an_admin_becomes_the_account(site: Site):
    """A user without a password (made through REST or an import) is claimed by signing
    up with its address: its memberships show on My lists."""
    email = f"{unique('claim')}@example.net"
    with site.sessions.begin() as s:
        members.add(s, lists.get(s, site.address), email)
        users.get_or_create_for(s, email)
    client = site.client()
    sign_up(client, email)
    page = client.post(link_in(mails_to(site, email)[-1]), {"password": PASSWORD})
    assert "Your account is ready" in page.text
    assert site.address in client.get("/my").text


# --- addresses ------------------------------------------------------------------------------
def test_more_addresses_are_verified_before_they_count(site: Site):
    first = f"{unique('one')}@example.net"
    second = f"{unique('two')}@example.org"
    client = new_account(site, first)
    page = client.post("/account", {"action": "add", "email": second})
    assert "We sent a message to" in page.text
    assert "waiting for its link" in page.text
    # Not verified: no log-in with it, not part of the account.
    assert user_of(site, second) is None
    assert site.client().login(second).status_code == 401
    link = link_in(mails_to(site, second)[-1])
    # Only the account that asked, logged in, can use the link.
    stranger = site.client()
    assert stranger.get(link).status_code == 303  # to the log-in page
    assert stranger.post(link, {}).status_code == 403
    other = new_account(site, f"{unique('other')}@example.net")
    assert other.post(link, {}).status_code == 403
    assert user_of(site, second) is None
    client.post(link, {})
    account = user_of(site, second)
    assert account is not None and account.user_id == user_of(site, first).user_id
    assert site.client().login(second).status_code == 303
    # Preferred, then removed (the last one cannot go).
    client.post("/account", {"action": "preferred", "email": second})
    with site.sessions() as s:
        user = users.user_by_email(s, first)
        assert user.preferred_address.email == second
    client.post("/account", {"action": "remove", "email": second})
    assert user_of(site, second) is None
    with site.sessions() as s:
        assert users.user_by_email(s, first).preferred_address.email == first
    last = client.post("/account", {"action": "remove", "email": first})
    assert last.status_code == 400 and "only address" in last.text


def test_an_address_of_another_account_is_not_taken_over(site: Site):
    mine = f"{unique('mine')}@example.net"
    theirs = f"{unique('theirs')}@example.net"
    client = new_account(site, mine)
    new_account(site, theirs)
    client.post("/account", {"action": "add", "email": theirs})
    link = link_in(mails_to(site, theirs)[-1])
    page = client.post(link, {})
    assert page.status_code == 404 and "another account" in page.text
    assert user_of(site, theirs).user_id != user_of(site, mine).user_id


def test_bad_account_input_is_refused_naming_the_field(site: Site):
    client = new_account(site, f"{unique('pw')}@example.net")
    wrong = client.post(
        "/account",
        {
            "action": "password",
            "current_password": "not it at all",
            "password": "a new password 1",
            "password_again": "a new password 1",
        },
    )
    assert wrong.status_code == 400 and "current_password:" in wrong.text
    bad = client.post("/account", {"action": "add", "email": "no-at-sign"})
    assert bad.status_code == 400 and "email:" in bad.text
    pref = client.post("/account/preferences", {"delivery_mode": "carrier_pigeon"})
    assert pref.status_code == 400 and "delivery_mode:" in pref.text
    flag = client.post("/account/preferences", {"hide_address": "maybe"})
    assert flag.status_code == 400 and "hide_address:" in flag.text
    ok = client.post(
        "/account",
        {
            "action": "password",
            "current_password": PASSWORD,
            "password": "a new password 1",
            "password_again": "a new password 1",
        },
    )
    assert "Your password is changed" in ok.text
    assert "Log out" in client.get("/account").text  # this session goes on


# --- preferences, layered -------------------------------------------------------------------
def test_layering_member_address_user_site():
    user = User(hide_address=False, delivery_mode=DeliveryMode.mime_digests)
    address = Address(email="a@example.net", original_email="a@example.net")
    member = Member()
    assert preferences.resolve("delivery_mode", member, address, user) == preferences.Resolved(
        DeliveryMode.mime_digests, preferences.Layer.user
    )
    address.delivery_mode = DeliveryMode.plaintext_digests
    assert preferences.resolve("delivery_mode", member, address, user).layer == "address"
    member.delivery_mode = DeliveryMode.regular
    assert preferences.resolve("delivery_mode", member, address, user).value == "regular"
    assert preferences.resolve("hide_address", member, address, user).value is False
    assert preferences.resolve("receive_own_postings", member, address, None) == (
        preferences.Resolved(True, preferences.Layer.site)
    )


def test_global_preferences_act_on_delivery_unless_the_list_says_otherwise(site: Site):
    email = f"{unique('layer')}@example.net"
    with site.sessions.begin() as s:
        members.add(s, lists.get(s, site.address), email)
    client = site.client()
    sign_up(client, email)
    client.post(link_in(mails_to(site, email)[-1]), {"password": PASSWORD})
    with site.sessions.begin() as s:
        lists.get(s, site.address).digests_enabled = True

    def regular_and_digest() -> tuple[bool, bool]:
        with site.sessions() as s:
            pk = lists.get(s, site.address).id
            regular = {r.email for r in roster.regular_recipients(s, pk)}
            digest = {r.email for r in roster.digest_recipients(s, pk)}
            return email in regular, email in digest

    assert regular_and_digest() == (True, False)
    client.post("/account/preferences", {"delivery_mode": "mime_digests"})
    assert regular_and_digest() == (False, True)
    assert "(from your preferences)" in client.get("/my").text
    # The list's own choice wins over the account's.
    with site.sessions() as s:
        member_id = members.get(s, lists.get(s, site.address), email, MemberRole.member).member_id
    client.post("/my", {"member_id": member_id, "delivery_mode": "regular", "delivery": ""})
    assert regular_and_digest() == (True, False)
    # Delivery off for all lists, unless one list says on.
    client.post("/my", {"member_id": member_id, "delivery_mode": "", "delivery": ""})
    client.post("/account/preferences", {"delivery": "off", "delivery_mode": ""})
    assert regular_and_digest() == (False, False)
    assert "off: by you, for all your lists" in client.get("/my").text
    client.post("/my", {"member_id": member_id, "delivery_mode": "", "delivery": "enabled"})
    assert regular_and_digest() == (True, False)
    # Own posts and hide address reach the list's snapshot.
    client.post("/account/preferences", {"receive_own_postings": "no", "delivery": "on"})
    with site.sessions() as s:
        pk = lists.get(s, site.address).id
        mine = [r for r in roster.regular_recipients(s, pk) if r.email == email]
        assert mine and mine[0].receive_own_postings is False


# --- My lists keeps what bounces or a moderator set -----------------------------------------
@pytest.mark.parametrize(
    ("status", "words"),
    [
        (DeliveryStatus.by_bounces, "off: turned off by bounces"),
        (DeliveryStatus.by_moderator, "off: turned off by a moderator"),
    ],
)
def test_my_lists_keeps_a_status_set_by_others_and_says_why(
    site: Site, status: DeliveryStatus, words: str
):
    email = f"{unique('kept')}@example.net"
    with site.sessions.begin() as s:
        member = members.add(s, lists.get(s, site.address), email)
        member.delivery_status = status
        member.bounce_score = 4
        member_id = member.member_id
    client = site.client()
    sign_up(client, email)
    client.post(link_in(mails_to(site, email)[-1]), {"password": PASSWORD})
    page = client.get("/my").text
    assert words in page
    # Saving another preference, with the page's own choices, keeps the status.
    client.post("/my", {"member_id": member_id, "delivery_mode": "", "delivery": "keep"})
    with site.sessions() as s:
        member = members.get(s, lists.get(s, site.address), email, MemberRole.member)
        assert member.delivery_status is status and member.bounce_score == 4
    # Switching delivery on: the member may after bounces, not after a moderator.
    answer = client.post("/my", {"member_id": member_id, "delivery_mode": "", "delivery": ""})
    with site.sessions() as s:
        member = members.get(s, lists.get(s, site.address), email, MemberRole.member)
        if status is DeliveryStatus.by_moderator:
            assert answer.status_code == 400 and "delivery:" in answer.text
            assert member.delivery_status is status
        else:
            assert member.delivery_status is None and member.bounce_score == 0


# --- log-in, joining, deletion --------------------------------------------------------------
def test_log_in_by_an_unverified_address_is_refused(site: Site):
    email = f"{unique('unv')}@example.net"
    with site.sessions.begin() as s:
        user = users.create(s, email, display_name="")
        user.password = passwords.hash_password(PASSWORD)
    assert site.client().login(email).status_code == 401


def test_a_logged_in_member_joins_with_an_own_address_without_a_mailed_link(site: Site):
    email = f"{unique('join')}@example.net"
    client = new_account(site, email)
    before = len(mails_to(site, email))
    client.post(f"/lists/{site.list_id}/subscribe", {"email": email})
    with site.sessions() as s:
        assert members.is_member(s, lists.get(s, site.address), email)
    # no confirmation mail (a welcome may come, as the list says)
    assert not any("confirm" in m.split("\n")[0].lower() for m in mails_to(site, email)[before:])


def test_deleting_the_account_leaves_every_list_through_the_workflow(site: Site):
    email = f"{unique('bye')}@example.net"
    client = new_account(site, email)
    with site.sessions.begin() as s:
        mlist = lists.get(s, site.address)
        mlist.send_goodbye_message = True
    client.post(f"/lists/{site.list_id}/subscribe", {"email": email})
    refused = client.post("/account", {"action": "delete", "password": PASSWORD})
    assert refused.status_code == 400 and "sure:" in refused.text
    wrong = client.post("/account", {"action": "delete", "password": "nope", "sure": "1"})
    assert wrong.status_code == 400 and "password:" in wrong.text
    assert user_of(site, email) is not None
    done = client.post("/account", {"action": "delete", "password": PASSWORD, "sure": "1"})
    assert "Your account is deleted" in done.text and site.address in done.text
    assert "Log out" not in done.text
    assert user_of(site, email) is None
    with site.sessions() as s:
        assert not members.is_member(s, lists.get(s, site.address), email)
        assert users.find_address(s, email) is None
        entry = s.scalar(select(AuditEntry).where(AuditEntry.action == "account.delete"))
        assert entry is not None and email in entry.detail["emails"]
        assert s.scalar(
            select(AuditEntry.id).where(
                AuditEntry.action == "member.unsubscribe",
                AuditEntry.mailing_list_id == lists.get(s, site.address).id,
            )
        )
    # the list sends its goodbye, as it is set to
    assert site.address in mails_to(site, email)[-1]


def test_an_owner_cannot_delete_the_account_before_handing_over(site: Site):
    owner = f"owner@{site.host}"
    client = site.client()
    client.login(owner)
    page = client.get("/account").text
    assert "owner of" in page
    refused = client.post("/account", {"action": "delete", "password": PASSWORD, "sure": "1"})
    assert refused.status_code == 400 and "account:" in refused.text
    assert user_of(site, owner) is not None


def test_sign_up_can_be_closed(module_sessions: sessionmaker[Session], tmp_path: Path):
    from mtaplugin import config
    from mtaplugin.web.app import create_web_app
    from tests.unit.webclient import SECRET

    settings = config.load(
        environ={
            "MTAPLUGIN_SITE_SECRET_KEY": SECRET,
            "MTAPLUGIN_SITE_VAR_DIR": str(tmp_path),
            "MTAPLUGIN_WEB_SIGNUP": "false",
        }
    )
    client = Client(create_web_app(settings, module_sessions))
    assert client.get("/signup").status_code == 403
    email = f"{unique('closed')}@example.net"
    refused = sign_up(client, email)
    assert refused.status_code == 403 and "Sign-up is closed" in refused.text
    with module_sessions() as s:
        assert s.scalar(select(PendingRequest.id).where(PendingRequest.email == email)) is None


def test_leaving_digests_in_the_global_preferences_sends_one_last_digest(site: Site):
    from mtaplugin.digests import store as digest_store

    email = f"{unique('last')}@example.net"
    with site.sessions.begin() as s:
        mlist = lists.get(s, site.address)
        mlist.digests_enabled = True
        members.add(s, mlist, email)
    client = new_account(site, email)
    client.post("/account/preferences", {"delivery_mode": "plaintext_digests"})
    with site.sessions.begin() as s:
        pk = lists.get(s, site.address).id
        digest_store.add(s, pk, b"Subject: waiting\r\n\r\nbody\r\n", now=datetime.now(UTC))
        assert email not in {r.email for r in digest_store.one_last(s, pk)}
    client.post("/account/preferences", {"delivery_mode": ""})
    with site.sessions() as s:
        last = [r for r in digest_store.one_last(s, pk) if r.email == email]
        assert [r.delivery_mode for r in last] == [DeliveryMode.plaintext_digests]


def test_a_sign_up_never_merges_into_an_account_that_only_claims_the_address(site: Site):
    """A user with a password whose address was never verified (an admin script, or a
    REST user who added it) is somebody's account: signing up with the address makes a
    new account, and the address leaves the old one (finding M3)."""
    email = f"{unique('rest')}@example.net"
    with site.sessions.begin() as s:
        user = users.create(s, email, password="set by an admin script")
        user_id = user.user_id
    assert site.client().login(email, "set by an admin script").status_code == 401
    client = site.client()
    sign_up(client, email)
    assert "Confirm your new account" in mails_to(site, email)[-1]
    client.post(link_in(mails_to(site, email)[-1]), {"password": PASSWORD})
    claimed = user_of(site, email)
    assert claimed is not None and claimed.user_id != user_id
    assert site.client().login(email).status_code == 303
    with site.sessions() as s:
        old = users.user_by_id(s, user_id)
        assert old is not None and old.addresses == []
        dropped = s.scalars(select(AuditEntry).where(AuditEntry.action == "address.claim_dropped"))
        assert [e.detail["email"] for e in dropped if e.detail["email"] == email] == [email]


def test_account_notices_are_edited_at_site_level_only(site: Site):
    from mtaplugin.enums import TemplateScope
    from mtaplugin.model import Template

    owner = site.client()
    owner.login(f"owner@{site.host}")
    assert "site:user:action:register" not in owner.get(f"/lists/{site.list_id}/templates").text
    assert (
        owner.get(f"/lists/{site.list_id}/templates/site:user:action:register").status_code == 404
    )
    # The site's own text replaces the shipped one in the mail.
    with site.sessions.begin() as s:
        s.add(
            Template(
                scope=TemplateScope.site,
                name="site:user:action:register",
                language="",
                text="Welcome aboard {{ user_email }}: {{ verify_url }}\n",
            )
        )
    try:
        email = f"{unique('tpl')}@example.net"
        sign_up(site.client(), email)
        mail = mails_to(site, email)[-1]
        assert f"Welcome aboard {email}: " in mail and "/account/verify/" in mail
    finally:
        with site.sessions.begin() as s:
            for row in s.scalars(
                select(Template).where(Template.name == "site:user:action:register")
            ):
                s.delete(row)


def test_the_accounts_preferences_reach_the_posts_of_the_cached_list(site: Site):
    """What the preferences page says happens: the list data the milter keeps is renewed
    when the account changes, and the next post follows the account's choice."""
    from mtaplugin.engine import ListEngine
    from mtaplugin.posting.verdict import Accept
    from mtaplugin.vocabulary.envelope import Envelope
    from tests.helpers import make_post

    engine = ListEngine(site.sessions, site_owner="postmaster@site.test")
    email = f"{unique('cached')}@example.net"
    with site.sessions.begin() as s:
        members.add(s, lists.get(s, site.address), email)
    client = new_account(site, email)

    def gets_a_copy() -> bool:
        envelope = Envelope(
            mail_from="anne@example.com", recipients=[f"<{site.address}>"], queue_id="QA"
        )
        verdict = engine.decide(envelope, make_post("anne@example.com", site.address))
        assert isinstance(verdict, Accept)
        return email in verdict.edits.add_recipients

    assert gets_a_copy()
    client.post("/account/preferences", {"delivery": "off"})
    assert not gets_a_copy()
    client.post("/account/preferences", {"delivery": "on"})
    assert gets_a_copy()


def test_my_lists_leaves_a_list_with_the_memberships_own_address(site: Site):
    first = f"{unique('a1')}@example.net"
    second = f"{unique('a2')}@example.org"
    client = new_account(site, first)
    client.post("/account", {"action": "add", "email": second})
    client.post(link_in(mails_to(site, second)[-1]), {})
    client.post(f"/lists/{site.list_id}/subscribe", {"email": second})
    page = client.get("/my").text
    assert f"/lists/{site.list_id}/unsubscribe?email={second.replace('@', '%40')}" in page
    form = client.get(f"/lists/{site.list_id}/unsubscribe", query_string=f"email={second}")
    assert f'value="{second}"' in form.text
    # someone else's address is not filled in
    other = client.get(f"/lists/{site.list_id}/unsubscribe", query_string="email=anne@example.com")
    assert 'value="anne@example.com"' not in other.text
    client.post(f"/lists/{site.list_id}/unsubscribe", {"email": second})
    with site.sessions() as s:
        assert not members.is_member(s, lists.get(s, site.address), second)
