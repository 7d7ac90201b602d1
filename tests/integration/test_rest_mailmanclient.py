"""The REST API served by ``mtaplugin serve`` (gunicorn) in the lab, driven by the real
mailmanclient the way a Mailman 3 script drives Mailman, on SQLite and PostgreSQL.

Held posts are real: the private Postfix hands them to the milter, which holds them.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from urllib.error import HTTPError
from urllib.error import HTTPError as UrlHTTPError
from urllib.request import Request, urlopen

import pytest
from mailmanclient import Client
from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin.model import MailingList, OutboxMessage
from mtaplugin.posting.rules.bans import BANNED_ADDRESS
from mtaplugin.testing import wait_for, wait_for_port
from mtaplugin.testing.lab import Lab
from tests.helpers import make_post, unique
from tests.integration.labs import copies
from tests.replies import REFUSED_BY_RULE, said

ADMIN = ("restadmin", "restpass")


@pytest.fixture
def base(lab: Lab) -> str:
    wait_for_port(lab.api_port, timeout=30)
    return f"http://127.0.0.1:{lab.api_port}/3.1"


@pytest.fixture
def client(base: str) -> Client:
    return Client(base, *ADMIN)


@pytest.fixture
def domain(client: Client) -> Iterator[object]:
    d = client.create_domain(f"{unique('rest')}.test")
    yield d


def raw(
    base: str,
    path: str,
    method: str = "GET",
    data: bytes | None = None,
    auth: tuple[str, str] | None = ADMIN,
) -> tuple[int, dict[str, object], dict[str, str]]:
    req = Request(f"{base}/{path}", data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/x-www-form-urlencoded")
    if auth is not None:
        req.add_header(
            "Authorization", "Basic " + base64.b64encode(":".join(auth).encode()).decode()
        )
    try:
        with urlopen(req, timeout=30) as resp:
            body = resp.read()
            return resp.status, json.loads(body) if body else {}, _lower(resp.headers)
    except UrlHTTPError as err:
        body = err.read()
        return err.code, json.loads(body) if body else {}, _lower(err.headers)


def _lower(headers: object) -> dict[str, str]:
    return {k.lower(): v for k, v in headers.items()}  # type: ignore[attr-defined]


# --- the acceptance script ------------------------------------------------------------------
def test_a_mailman_script_creates_subscribes_pages_and_configures(client: Client, domain) -> None:
    mlist = domain.create_list("team")
    assert mlist.fqdn_listname == f"team@{domain.mail_host}"
    assert mlist.list_id == f"team.{domain.mail_host}"
    assert mlist.self_link.startswith("http://127.0.0.1:")

    for i in range(1000):
        member = mlist.subscribe(
            f"person{i:04d}@example.net",
            f"Person {i}",
            pre_verified=True,
            pre_confirmed=True,
            pre_approved=True,
        )
    assert member.email == "person0999@example.net"
    assert member.role == "member" and member.list_id == mlist.list_id

    page = mlist.get_member_page(count=50, page=1)
    assert page.total_size == 1000 and len(page) == 50
    seen: set[str] = set()
    while True:
        seen.update(m.email for m in page)
        if not page.has_next:
            break
        page = page.next
    assert page.nr == 20 and len(seen) == 1000
    assert client.get_list(mlist.fqdn_listname).member_count == 1000
    assert [lst.fqdn_listname for lst in domain.lists] == [mlist.fqdn_listname]

    settings = mlist.settings
    assert settings["subscription_policy"] == "confirm"
    settings["display_name"] = "The Team"
    settings["max_message_size"] = 200
    settings["advertised"] = False
    settings["acceptable_aliases"] = ["team@old.example.org"]
    settings.save()
    fresh = client.get_list(mlist.list_id).settings
    assert fresh["display_name"] == "The Team"
    assert fresh["max_message_size"] == 200
    assert fresh["advertised"] is False
    assert fresh["acceptable_aliases"] == ["team@old.example.org"]
    assert client.get_list(mlist.list_id).display_name == "The Team"


def test_the_same_list_by_list_id_or_fqdn_listname_and_3_0(base: str, client: Client, domain):
    mlist = domain.create_list("both")
    by_id = client.get_list(mlist.list_id)
    by_fqdn = client.get_list(mlist.fqdn_listname)
    assert by_id.self_link == by_fqdn.self_link
    old = Client(base.replace("/3.1", "/3.0"), *ADMIN)
    assert old.get_list(mlist.fqdn_listname).list_id == mlist.list_id


# --- subscriptions --------------------------------------------------------------------------
def test_subscription_waits_for_the_subscriber_then_the_moderator(
    lab: Lab, client: Client, domain, db: Session
) -> None:
    mlist = domain.create_list("pending")
    mlist.settings["subscription_policy"] = "confirm_then_moderate"
    mlist.settings.save()

    pending = mlist.subscribe("newbie@example.net", "New Bie")
    assert set(pending) == {"token", "token_owner"}
    assert pending["token_owner"] == "subscriber"
    requests = mlist.get_requests(token_owner="subscriber")
    assert [(r["email"], r["token"]) for r in requests] == [
        ("newbie@example.net", pending["token"])
    ]
    assert mlist.get_requests_count() == 1
    # the confirmation goes out through the outbox and Postfix, with the token
    wait_for(lambda: copies(lab, f"confirm {pending['token']}", "newbie@example.net"), timeout=30)

    mlist.accept_request(pending["token"])  # the subscriber's confirmation
    after = mlist.get_requests()
    assert [r["token_owner"] for r in after] == ["moderator"]
    with pytest.raises(ValueError):
        mlist.get_member("newbie@example.net")

    mlist.accept_request(after[0]["token"])  # the moderator's approval
    assert mlist.get_member("newbie@example.net").email == "newbie@example.net"
    assert mlist.get_requests() == []

    with pytest.raises(HTTPError) as err:
        mlist.subscribe("newbie@example.net", pre_verified=True, pre_confirmed=True)
    assert err.value.code == 409


def test_moderated_subscription_can_be_rejected(client: Client, domain) -> None:
    mlist = domain.create_list("moderated")
    mlist.settings["subscription_policy"] = "moderate"
    mlist.settings.save()
    pending = mlist.subscribe("ask@example.net", pre_verified=True, pre_confirmed=True)
    assert pending["token_owner"] == "moderator"
    assert mlist.get_request(pending["token"])["email"] == "ask@example.net"
    mlist.reject_request(pending["token"])
    assert mlist.get_requests() == []
    with pytest.raises(ValueError):
        mlist.get_member("ask@example.net")
    # pre_approved skips the moderator
    member = mlist.subscribe(
        "ok@example.net", pre_verified=True, pre_confirmed=True, pre_approved=True
    )
    assert member.email == "ok@example.net"


def test_unsubscribe_directly_or_through_the_moderator(client: Client, domain) -> None:
    mlist = domain.create_list("leavers")
    for who in ("stay", "go", "gone"):
        mlist.subscribe(f"{who}@example.net", pre_verified=True, pre_confirmed=True)
    assert mlist.unsubscribe("go@example.net") is None
    with pytest.raises(ValueError):
        mlist.get_member("go@example.net")
    with pytest.raises(ValueError):
        mlist.unsubscribe("never@example.net")

    mlist.settings["unsubscription_policy"] = "moderate"
    mlist.settings.save()
    pending = mlist.unsubscribe("gone@example.net")
    assert pending["token_owner"] == "moderator"
    assert [r["email"] for r in mlist.unsubscription_requests] == ["gone@example.net"]
    mlist.accept_request(pending["token"])
    assert sorted(m.email for m in mlist.members) == ["stay@example.net"]

    member = mlist.get_member("stay@example.net")
    member.unsubscribe()  # DELETE members/{id}: pre_approved absent, so the moderator again
    assert [r["email"] for r in mlist.unsubscription_requests] == ["stay@example.net"]
    assert mlist.mass_unsubscribe(["stay@example.net", "nobody@example.net"]) == {
        "stay@example.net": True,
        "nobody@example.net": False,
    }


def test_roles_owners_moderators_nonmembers(client: Client, domain) -> None:
    mlist = domain.create_list("roles")
    mlist.add_owner("boss@example.net")
    mlist.add_moderator("mod@example.net", "The Mod")
    mlist.add_role("nonmember", "outsider@example.net")
    assert [m.email for m in mlist.owners] == ["boss@example.net"]
    assert [m.display_name for m in mlist.moderators] == ["The Mod"]
    assert mlist.get_nonmember("outsider@example.net").role == "nonmember"
    assert mlist.is_owner("boss@example.net") and mlist.is_moderator("mod@example.net")
    assert not mlist.is_member("boss@example.net")
    mlist.remove_owner("boss@example.net")
    assert mlist.owners == []


# --- held posts, from the milter ------------------------------------------------------------
def test_held_posts_are_listed_and_moderated(lab: Lab, client: Client, domain) -> None:
    mlist = domain.create_list("held")
    mlist.subscribe("ann@example.net", pre_verified=True, pre_confirmed=True)
    subjects = [unique("held-post") for _ in range(4)]
    for subject in subjects:
        post = make_post("stranger@example.com", mlist.fqdn_listname, subject=subject)
        assert lab.send("stranger@example.com", [mlist.fqdn_listname], post) is None

    assert mlist.get_held_count() == 4
    held = mlist.held
    assert [h.subject for h in held] == subjects
    first = held[0]
    assert first.sender == "stranger@example.com"
    assert "nonmember" in first.reason.lower() or first.reason
    assert subjects[0] in first.msg
    assert mlist.get_held_message(first.request_id).message_id == first.message_id
    page = mlist.get_held_page(count=2, page=2)
    assert page.total_size == 4 and [h.subject for h in page] == subjects[2:]

    first.accept()
    wait_for(lambda: copies(lab, subjects[0], "ann@example.net"), timeout=30)
    mlist.reject_message(held[1].request_id, "not here")
    mlist.discard_message(held[2].request_id)
    mlist.defer_message(held[3].request_id)
    assert [h.subject for h in mlist.held] == [subjects[3]]
    with pytest.raises(HTTPError) as err:
        mlist.accept_message(held[1].request_id)
    assert err.value.code == 404
    assert copies(lab, subjects[2], "ann@example.net") == 0


# --- bans and header matches ------------------------------------------------------------------
def test_bans_and_header_matches_reach_the_milter(lab: Lab, client: Client, domain) -> None:
    mlist = domain.create_list("guarded")
    mlist.subscribe("ann@example.net", pre_verified=True, pre_confirmed=True)
    mlist.subscribe("troll@example.net", pre_verified=True, pre_confirmed=True)

    mlist.bans.add("troll@example.net")
    assert "troll@example.net" in mlist.bans
    assert "ann@example.net" not in mlist.bans
    refused = lab.send(
        "troll@example.net",
        [mlist.fqdn_listname],
        make_post("troll@example.net", mlist.fqdn_listname, subject=unique("troll")),
    )
    assert said(refused) == ("data", REFUSED_BY_RULE), refused
    assert refused is not None and BANNED_ADDRESS in refused.text
    for ban in mlist.bans:
        if ban.email == "troll@example.net":
            ban.delete()
    assert "troll@example.net" not in mlist.bans

    site_ban = f"^.*@{unique('spam')}\\.example$"
    client.bans.add(site_ban)
    assert site_ban in client.bans
    client.bans.remove(site_ban)
    assert site_ban not in client.bans

    hm = mlist.header_matches.add("X-Spam-Flag", "^yes", "discard")
    assert (hm.header, hm.pattern, hm.action, hm.position) == ("x-spam-flag", "^yes", "discard", 0)
    mlist.header_matches.add("X-Other", "bad", tag="t")
    assert [m.header for m in mlist.header_matches.find(tag="t")] == ["x-other"]
    hm.action = "reject"
    hm.save()
    assert mlist.header_matches[0].action == "reject"
    subject = unique("spammy")
    refused = lab.send(
        "ann@example.net",
        [mlist.fqdn_listname],
        make_post("ann@example.net", mlist.fqdn_listname, subject, headers={"X-Spam-Flag": "yes"}),
    )
    assert said(refused) == ("data", REFUSED_BY_RULE), refused
    mlist.header_matches[0].delete()
    assert [m.header for m in mlist.header_matches] == ["x-other"]


def test_an_at_list_entry_set_with_mailmanclient_lets_that_lists_members_post(
    lab: Lab, client: Client, domain
) -> None:
    """``accept_these_nonmembers = ["@friends@domain"]`` as Postorius's form saves it: the
    members of ``friends`` post to ``closed``, which holds everyone else's post; a bad
    ``@`` entry is refused with 400 naming the setting, and the setting is unchanged."""
    closed = domain.create_list("closed")
    closed.subscribe("ann@example.net", pre_verified=True, pre_confirmed=True)
    friends = domain.create_list("friends")
    friends.subscribe("carol@example.net", pre_verified=True, pre_confirmed=True)
    settings = closed.settings
    settings["accept_these_nonmembers"] = [f"@{friends.fqdn_listname}"]
    settings["default_nonmember_action"] = "hold"
    settings.save()
    fresh = client.get_list(closed.list_id).settings
    assert fresh["accept_these_nonmembers"] == [f"@{friends.fqdn_listname}"]
    fresh["accept_these_nonmembers"] = ["@not a list"]
    with pytest.raises(HTTPError) as err:
        fresh.save()
    assert err.value.code == 400 and "accept_these_nonmembers" in str(err.value.reason)
    assert client.get_list(closed.list_id).settings["accept_these_nonmembers"] == [
        f"@{friends.fqdn_listname}"
    ]

    subject = unique("friend-post")
    post = make_post("carol@example.net", closed.fqdn_listname, subject=subject)
    assert lab.send("carol@example.net", [closed.fqdn_listname], post) is None
    wait_for(lambda: copies(lab, subject, "ann@example.net"), timeout=30)
    stranger = make_post("eve@example.net", closed.fqdn_listname, subject=unique("stranger"))
    assert lab.send("eve@example.net", [closed.fqdn_listname], stranger) is None
    assert closed.get_held_count() == 1


# --- users, addresses, preferences, finding ----------------------------------------------------
def test_users_addresses_preferences_and_finding(client: Client, domain) -> None:
    mlist = domain.create_list("people")
    email = f"{unique('user')}@example.net"
    user = client.create_user(email, "s3cret!", "Ursula")
    assert user.display_name == "Ursula"
    assert "password" not in user.rest_data
    again = client.get_user(email)
    assert again.user_id == user.user_id

    extra = f"{unique('alias')}@example.net"
    user.add_address(extra)
    assert sorted(a.email for a in user.addresses) == sorted([email, extra])
    address = client.get_address(extra)
    assert address.verified_on is None
    address.verify()
    assert client.get_address(extra).verified_on is not None
    user.preferred_address = extra
    assert str(client.get_user(email).preferred_address) == extra
    address.unverify()
    assert client.get_address(extra).verified_on is None

    user.display_name = "Ursula K."
    user.save()
    assert client.get_user(user.user_id).display_name == "Ursula K."
    assert [u.user_id for u in client.find_users("ursula")] == [user.user_id]

    member = mlist.subscribe(email, pre_verified=True, pre_confirmed=True)
    prefs = member.preferences
    prefs["receive_own_postings"] = False
    prefs["delivery_mode"] = "mime_digests"
    prefs.save()
    assert mlist.get_member(email).preferences["delivery_mode"] == "mime_digests"
    prefs = mlist.get_member(email).preferences
    prefs["receive_own_postings"] = False
    prefs["delivery_mode"] = "regular"
    prefs.save()
    again_prefs = mlist.get_member(email).preferences
    assert again_prefs["receive_own_postings"] is False
    assert again_prefs["delivery_mode"] == "regular"
    member.moderation_action = "hold"
    member.save()
    assert mlist.get_member(email).moderation_action == "hold"

    found = mlist.find_members(email)
    assert [m.email for m in found] == [email]
    paged = mlist.find_members(role="member", page=1, count=10)
    assert paged.total_size == 1
    assert [lst.list_id for lst in client.find_lists(email)] == [mlist.list_id]
    with pytest.raises(HTTPError) as err:
        client.find_lists(f"{unique('nobody')}@example.net")
    assert err.value.code == 404
    assert [m.list_id for m in user.subscriptions] == [mlist.list_id]


def test_domain_owners_archivers_styles_and_system(client: Client, domain) -> None:
    domain.add_owner("dom-admin@example.net")
    assert len(domain.owners) == 1
    domain.remove_all_owners()
    assert domain.owners == []
    mlist = domain.create_list("announce", style_name="legacy-announce")
    assert mlist.settings["allow_list_posts"] is False
    archivers = mlist.archivers
    name = next(iter(archivers))
    archivers[name] = False
    assert mlist.archivers[name] is False
    mlist.set_template("list:member:regular:footer", "https://example.org/footer.txt")
    assert [(t.name, t.uri) for t in mlist.templates] == [
        ("list:member:regular:footer", "https://example.org/footer.txt")
    ]
    assert "legacy-announce" in client.styles["style_names"]
    assert client.system["api_version"] == "3.1"
    assert client.preferences["delivery_mode"] == "regular"
    assert {q.name for q in client.queues.values()} >= {"out", "retry", "bad"}
    assert client.get_domain(domain.mail_host).mail_host == domain.mail_host
    client.delete_list(mlist.fqdn_listname)
    client.delete_domain(domain.mail_host)
    with pytest.raises(HTTPError):
        client.get_domain(domain.mail_host)


# --- security and error shapes ------------------------------------------------------------------
def test_without_credentials_401_and_errors_are_json(base: str, client: Client, domain) -> None:
    status, body, headers = raw(base, "lists", auth=None)
    assert status == 401 and body["title"] == "401 Unauthorized"
    assert "Basic" in headers["www-authenticate"]
    status, body, _h = raw(base, "lists/nosuch.example.org")
    assert status == 404 and "nosuch" in body["description"]
    status, body, _h = raw(base, "lists", "POST", b"fqdn_listname=x@nosuchdomain.test")
    assert status == 400 and body["description"] == "Domain does not exist: nosuchdomain.test"
    mlist = domain.create_list("errors")
    status, body, _h = raw(base, f"lists/{mlist.list_id}/config", "PATCH", b"post_id=7")
    assert status == 400 and "post_id" in body["description"]
    status, body, _h = raw(base, f"lists/{mlist.list_id}/config", "PATCH", b"emergency=maybe")
    assert status == 400 and body["description"].startswith('Invalid Parameter "emergency"')
    status, body, _h = raw(base, "members", "POST", f"list_id={mlist.list_id}".encode())
    assert status == 400 and body["description"] == "Missing Parameter: subscriber"
    status, body, _h = raw(base, "domains", "POST", b"mail_host=a.test&colour=red")
    assert status == 400 and body["description"] == "Unexpected parameters: colour"
    status, body, _h = raw(base, f"lists/{mlist.list_id}/roster/member?count=-1")
    assert status == 400 and "count" in body["description"]
    status, body, _h = raw(base, "no/such/resource")
    assert status == 404 and body["title"] == "404 Not Found"
    for status, body in [raw(base, "lists")[:2], raw(base, "domains")[:2]]:
        assert status == 200 and {"start", "total_size", "http_etag"} <= set(body)
        assert "Traceback" not in json.dumps(body)


def test_a_list_owner_sees_only_their_lists(base: str, client: Client, domain) -> None:
    other_domain = client.create_domain(f"{unique('other')}.test")
    mine = domain.create_list("mine")
    theirs = other_domain.create_list("theirs")
    sibling = domain.create_list("sibling")
    owner = f"{unique('owner')}@example.net"
    client.create_user(owner, "owner-pw")
    mine.add_owner(owner)

    me = Client(base, owner, "owner-pw")
    assert [lst.list_id for lst in me.lists] == [mine.list_id]
    assert me.get_list(mine.list_id).settings["list_name"] == "mine"
    for hidden in (theirs, sibling):
        status, body, _h = raw(base, f"lists/{hidden.list_id}", auth=(owner, "owner-pw"))
        assert status == 403 and body["title"] == "403 Forbidden"
    status, _b, _h = raw(base, "users", auth=(owner, "owner-pw"))
    assert status == 403
    status, _b, _h = raw(base, f"lists/{mine.list_id}", auth=(owner, "wrong"))
    assert status == 401
    status, body, _h = raw(base, f"users/{owner}", auth=(owner, "owner-pw"))
    assert status == 200 and "password" not in body

    # a domain owner sees every list of the domain, and nothing of the other one
    dom_admin = f"{unique('domadmin')}@example.net"
    client.create_user(dom_admin, "dom-pw")
    domain.add_owner(dom_admin)
    them = Client(base, dom_admin, "dom-pw")
    assert sorted(lst.list_id for lst in them.lists) == sorted([mine.list_id, sibling.list_id])
    assert [d.mail_host for d in them.domains] == [domain.mail_host]
    status, _b, _h = raw(base, f"lists/{theirs.list_id}/config", auth=(dom_admin, "dom-pw"))
    assert status == 403
    status, _b, _h = raw(base, "domains", "POST", b"mail_host=x.test", auth=(dom_admin, "dom-pw"))
    assert status == 403


def test_moderator_password_is_never_returned(base: str, client: Client, domain) -> None:
    mlist = domain.create_list("secret")
    status, _b, _h = raw(
        base, f"lists/{mlist.list_id}/config", "PATCH", b"moderator_password=hunter2"
    )
    assert status == 204
    status, body, _h = raw(base, f"lists/{mlist.list_id}/config")
    assert body["moderator_password"] is None
    status, body, _h = raw(base, "users?count=100&page=1")
    assert all("password" not in entry for entry in body.get("entries", []))


def test_outbox_is_the_out_queue(client: Client, domain, db: Session) -> None:
    mlist = domain.create_list("inject")
    mlist.subscribe("ann@example.net", pre_verified=True, pre_confirmed=True)
    queue = client.queues["out"]
    queue.inject(mlist.list_id, "From: a@example.net\nSubject: injected\n\nhi\n")
    pk = db.scalar(select(MailingList.id).where(MailingList.list_id == mlist.list_id))
    rows = db.scalars(
        select(OutboxMessage).where(
            OutboxMessage.kind == "inject", OutboxMessage.mailing_list_id == pk
        )
    ).all()
    assert len(rows) == 1 and b"Subject: injected" in rows[0].raw


def test_a_members_bounce_record_as_mailmanclient_reads_it(client: Client, domain, db) -> None:
    from datetime import UTC, datetime

    from mtaplugin.enums import DeliveryStatus
    from mtaplugin.model import Member

    mlist = domain.create_list("bouncy")
    member = mlist.subscribe("dead@example.net", pre_verified=True, pre_confirmed=True)
    assert member.bounce_score == 0 and member.total_warnings_sent == 0
    assert member.last_warning_sent == "0001-01-01T00:00:00"
    assert member.last_bounce_received is None and "last_bounce_received" not in member.rest_data
    row = db.scalar(select(Member).where(Member.member_id == member.member_id))
    assert row is not None
    row.bounce_score = 4
    row.last_bounce_received = datetime(2026, 12, 3, 7, 5, tzinfo=UTC)
    row.last_warning_sent = datetime(2026, 12, 4, 7, 5, tzinfo=UTC)
    row.total_warnings_sent = 2
    row.delivery_status = DeliveryStatus.by_bounces
    db.commit()
    again = mlist.get_member("dead@example.net")
    assert again.bounce_score == 4 and again.total_warnings_sent == 2
    assert again.last_bounce_received == "2026-12-03T07:05:00"
    assert again.last_warning_sent == "2026-12-04T07:05:00"
    assert again.preferences["delivery_status"] == "by_bounces"
    # mailmanclient knows these are read-only, as Mailman serves them ...
    with pytest.raises(ValueError):
        again.bounce_score = 0
    # ... and a script that PATCHes one anyway is told which.
    again._changed_rest_data["bounce_score"] = 0
    with pytest.raises(HTTPError) as refused:
        again.save()
    assert refused.value.code == 400
    assert refused.value.reason.startswith('Invalid Parameter "bounce_score": read-only')
    assert mlist.get_member("dead@example.net").bounce_score == 4
    # Re-enabling delivery is a preference, as in Mailman.
    prefs = again.preferences
    prefs["delivery_status"] = "enabled"
    prefs.save()
    assert mlist.get_member("dead@example.net").preferences["delivery_status"] == "enabled"
