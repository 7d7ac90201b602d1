"""``import mailman3`` without a Mailman: the REST-shaped answers of Mailman 3.3.10 made
into a plan (every setting read by the REST API's own parsers), users with their password
hashes and addresses, and the URL and user-id forms.  The real server is in
tests/integration/test_import_mailman3.py."""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from passlib.hash import sha256_crypt, sha512_crypt
from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin import passwords
from mtaplugin.enums import Action, DeliveryMode, DeliveryStatus, MemberRole, SubscriptionMode
from mtaplugin.importers import apply, mailman3, mm3users
from mtaplugin.importers.mm3rest import (
    ListData,
    Mailman3,
    MailmanUnavailable,
    UserData,
    api_url,
    user_id_of,
)
from mtaplugin.manage import held as manage_held
from mtaplugin.manage import lists, members, pending, subscriptions
from mtaplugin.model import Address, HeldMessage, Member, User
from tests.helpers import unique

UID = "3f6c0f2a9b4e4c1d8a7b6c5d4e3f2a1b"
#: when the pending requests were made (a minute ago: live)
NOW = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=1)


def dev(name: str) -> ListData:
    return ListData(
        name,
        name.replace("@", "."),
        config={
            "display_name": "Developers",
            "max_message_size": 123,
            "default_member_action": "hold",
            "reply_goes_to_list": "point_to_list",
            "accept_these_nonmembers": ["^.*@partner\\.example$"],
            "bounce_info_stale_after": "14d",
            "bounce_you_are_disabled_warnings_interval": "1d43200.0s",
            "digest_volume_frequency": "weekly",
            "list_id": name.replace("@", "."),
            "volume": 3,
            "next_digest_number": 7,
            "posting_address": name,
            "no_such_setting_here": "x",
            "preferred_language": "xx",
            "http_etag": '"abc"',
        },
        members=[
            (
                {
                    "email": "Ann@Example.net",
                    "role": "member",
                    "display_name": "Ann",
                    "delivery_mode": "mime_digests",
                    "subscription_mode": "as_user",
                    "user": f"http://localhost:8001/3.1/users/{UID}",
                    "bounce_score": 2,
                    "last_bounce_received": "2026-11-30T10:00:00",
                },
                {"delivery_mode": "mime_digests", "acknowledge_posts": True},
            ),
            ({"email": "bob@example.net", "role": "member", "moderation_action": "accept"}, {}),
            ({"email": "boss@example.com", "role": "owner"}, {}),
            ({"email": "not an address", "role": "member"}, {}),
        ],
        bans=["spammer@bad.example"],
        header_matches=[
            {"header": "x-spam-flag", "pattern": "yes", "action": "discard"},
            {"header": "subject", "pattern": "viagra"},
        ],
        uris=[
            {"name": "list:member:regular:footer", "uri": "https://t.example/f.txt"},
            {"name": "list:user:notice:welcome", "uri": "mailman:///welcome.txt"},
            {
                "name": "list:member:digest:footer",
                "uri": "mailman:///$listname/$language/list:member:regular:footer.txt",
            },
            {"name": "list:admin:action:post", "uri": "gopher://t.example/x"},
        ],
        held=[
            {
                "message_id": "<held-1@example.net>",
                "sender": "stranger@example.net",
                "subject": "Hello?",
                "reason": "The message is not from a list member",
                "hold_date": "2026-12-01T09:00:00",
                "msg": "From: stranger@example.net\nSubject: Hello?\n"
                "Message-ID: <held-1@example.net>\n\nAnyone there?\n",
                "request_id": 7,
            }
        ],
        requests=[
            {
                "type": "subscription",
                "token": "0123456789abcdef0123456789abcdef01234567",
                "token_owner": "subscriber",
                "email": "Pat@Example.net",
                "display_name": "Pat",
                "list_id": name.replace("@", "."),
                "when": NOW.strftime("%Y-%m-%dT%H:%M:%S"),
            },
            {
                "type": "subscription",
                "token": "fedcba9876543210fedcba9876543210fedcba98",
                "token_owner": "moderator",
                "email": "quinn@example.net",
                "when": NOW.strftime("%Y-%m-%dT%H:%M:%S"),
            },
            {
                "type": "subscription",
                "token": "00000000000000000000000000000000000000aa",
                "token_owner": "subscriber",
                "email": "late@example.net",
                "when": "2020-01-01T00:00:00",
            },
            {"type": "subscription", "token": "", "token_owner": "no_one", "email": "x@y.z"},
        ],
    )


def test_a_lists_rest_config_becomes_the_plan_with_notes_for_what_does_not_carry() -> None:
    plan = mailman3.plan(dev("dev@example.com"))
    s = plan.settings
    assert s["display_name"] == "Developers" and s["max_message_size"] == 123
    assert s["default_member_action"] is Action.hold
    assert s["bounce_info_stale_after"] == timedelta(days=14)
    assert s["bounce_you_are_disabled_warnings_interval"] == timedelta(days=1, hours=12)
    assert s["accept_these_nonmembers"] == ["^.*@partner\\.example$"]
    assert (s["volume"], s["next_digest_number"]) == (3, 7)
    assert "list_id" not in s and "posting_address" not in s and "preferred_language" not in s
    notes = "\n".join(plan.notes)
    assert "no_such_setting_here" in notes
    assert "preferred_language" in notes  # no catalog "xx": refused, named
    assert "not an address" in notes
    assert "1 held post(s) copied" in notes
    assert [(p.token[:4], p.owner, p.email) for p in plan.pending] == [
        ("0123", "subscriber", "pat@example.net"),
        ("fedc", "moderator", "quinn@example.net"),
        ("0000", "subscriber", "late@example.net"),
    ]
    assert "the pending request of x@y.z (token ?) cannot be carried" in notes
    # A mailman: URI naming a shipped template is carried (it works at run time); one
    # naming none, or another scheme, is a note.
    assert "mailman:///welcome.txt names no template mtaplugin ships" in notes
    assert "gopher://t.example/x is not an http, https, file or mailman URI" in notes
    assert plan.template_uris["list:member:digest:footer"] == (
        "mailman:///$listname/$language/list:member:regular:footer.txt",
        "",
        "",
    )
    ann = plan.members[0]
    assert (ann.email, ann.role, ann.display_name) == ("ann@example.net", MemberRole.member, "Ann")
    assert ann.delivery_mode is DeliveryMode.mime_digests and ann.acknowledge_posts is True
    assert ann.receive_own_postings is None  # not set on the member: falls through
    assert ann.subscription_mode is SubscriptionMode.as_user and ann.user_id == UID
    assert ann.bounce_score == 2
    assert ann.last_bounce_received == datetime(2026, 11, 30, 10, tzinfo=UTC)
    assert plan.members[1].moderation_action is Action.accept
    assert [m.role for m in plan.members] == [
        MemberRole.member,
        MemberRole.member,
        MemberRole.owner,
    ]
    assert plan.header_matches == [
        ("x-spam-flag", "yes", Action.discard),
        ("subject", "viagra", None),
    ]
    assert plan.template_uris["list:member:regular:footer"] == ("https://t.example/f.txt", "", "")
    assert len(plan.template_uris) == 2
    (held,) = plan.held
    assert (held.message_id, held.sender, held.subject) == (
        "<held-1@example.net>",
        "stranger@example.net",
        "Hello?",
    )
    assert held.raw.endswith(b"Anyone there?\n")
    assert held.hold_date == datetime(2026, 12, 1, 9, tzinfo=UTC)


def user_data(email: str, password: str | None) -> UserData:
    user = {"user_id": UID, "display_name": "Ann", "created_on": "2020-01-02T03:04:05"}
    if password:
        user["password"] = password
    return UserData(
        user,
        {"receive_own_postings": False, "delivery_status": "by_user"},
        email,
        [
            (
                {"email": email, "original_email": email, "verified_on": "2020-01-02T03:04:05"},
                {"hide_address": False},
            ),
            ({"email": f"work.{email}", "registered_on": "2021-01-01T00:00:00"}, {}),
        ],
    )


@pytest.mark.parametrize("scheme", [sha512_crypt, sha256_crypt])
def test_users_keep_their_mailman_password_and_a_rerun_changes_nothing(
    txn_session: Session, scheme: object
) -> None:
    email = unique("ann") + "@example.net"
    hashed = scheme.using(rounds=5000).hash("her old password")  # type: ignore[attr-defined]
    notes: list[str] = []
    assert mm3users.apply_user(txn_session, user_data(email, hashed), notes)
    assert notes == []
    user = txn_session.scalar(select(User).where(User.user_id == UID))
    assert user is not None and user.password == hashed
    assert passwords.verify("her old password", user.password)
    assert passwords.needs_update(user.password)  # a log-in rehashes it with argon2
    assert user.receive_own_postings is False and user.delivery_status is DeliveryStatus.by_user
    assert user.created_on.replace(tzinfo=None) == datetime(2020, 1, 2, 3, 4, 5)
    by_email = {a.email: a for a in user.addresses}
    assert by_email[email].verified_on is not None and by_email[email].hide_address is False
    assert by_email[f"work.{email}"].verified_on is None
    assert user.preferred_address_id == by_email[email].id
    assert not mm3users.apply_user(txn_session, user_data(email, hashed), notes)
    # once the person has a password here (argon2: set, or rehashed at a log-in), a rerun
    # keeps it
    user.password = passwords.hash_password("a new one")
    assert not mm3users.apply_user(txn_session, user_data(email, hashed), notes)
    assert passwords.verify("a new one", user.password)


def test_a_hash_that_cannot_be_checked_here_is_a_note_not_a_password(
    txn_session: Session,
) -> None:
    notes: list[str] = []
    email = unique("ann") + "@example.net"
    mm3users.apply_user(txn_session, user_data(email, "{plain}secret"), notes)
    user = txn_session.scalar(select(User).where(User.user_id == UID))
    assert user is not None and user.password is None
    assert any("cannot check" in n for n in notes)


def test_the_plan_applies_and_links_memberships_to_the_imported_user(
    txn_session: Session,
) -> None:
    name = unique("dev") + "@example.com"
    data = dev(name)
    data.members[0][0]["email"] = "ann@example.net"
    mm3users.apply_user(txn_session, user_data("ann@example.net", None), [])
    report = apply.apply(txn_session, mailman3.plan(data))
    assert report.created_list and report.added[MemberRole.member] == 2
    member = txn_session.scalar(
        select(Member).join(Address).where(Address.email == "ann@example.net")
    )
    assert member is not None and member.user is not None and member.user.user_id == UID
    assert member.subscription_mode is SubscriptionMode.as_user
    held = txn_session.scalars(
        select(HeldMessage).where(HeldMessage.sender == "stranger@example.net")
    ).all()
    assert [h.subject for h in held if h.mailing_list_id == member.mailing_list_id] == ["Hello?"]
    again = apply.apply(txn_session, mailman3.plan(data))
    assert not again.changed
    # a carried held post is moderated here like one held here
    (mine,) = [h for h in held if h.mailing_list_id == member.mailing_list_id]
    mlist = lists.get(txn_session, name)
    released = manage_held.approve(
        manage_held.Moderator(txn_session, mlist, "boss@example.com"), mine.id
    )
    assert released.action == "approve" and released.outbox_id is not None
    assert manage_held.all_held(txn_session, mlist) == []


def test_the_url_gets_the_api_version_and_user_ids_become_hex() -> None:
    assert api_url("http://localhost:8001") == "http://localhost:8001/3.1/"
    assert api_url("http://localhost:8001/3.0/") == "http://localhost:8001/3.0/"
    with pytest.raises(MailmanUnavailable, match="url"):
        api_url("localhost:8001")
    assert user_id_of(f"http://h/3.1/users/{UID}") == UID
    assert user_id_of("http://h/3.0/users/255") == f"{255:032x}"
    assert user_id_of(None) is None


class _Canned(http.server.BaseHTTPRequestHandler):
    """Answers 500 under /3.1/broken, nothing for 3 s under /3.1/slow, else an empty
    collection."""

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        if self.path.startswith("/3.1/slow"):
            time.sleep(3)
            return
        status, body = (
            (500, b'{"title": "500 Internal Server Error", "description": "boom"}')
            if self.path.startswith("/3.1/broken")
            else (200, b'{"start": 0, "total_size": 0}')
        )
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def canned() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Canned)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_an_error_or_no_answer_from_mailman_names_the_resource(canned: str) -> None:
    source = Mailman3(canned, "restadmin", "restpass", timeout=0.5)
    assert list(source.collection("lists")) == []
    with pytest.raises(MailmanUnavailable, match=r"answered 500 for broken/roster: boom"):
        source.get("broken/roster")
    with pytest.raises(MailmanUnavailable, match=r"no answer from Mailman .* for slow"):
        source.get("slow")


def test_an_address_of_no_user_keeps_its_verification_through_a_list_import(
    txn_session: Session,
) -> None:
    email = unique("poster") + "@example.org"
    notes: list[str] = []
    resource = {"email": email, "original_email": email, "display_name": "Poster"}
    assert mm3users.apply_address(txn_session, resource, {"delivery_status": "by_user"}, notes)
    assert not mm3users.apply_address(txn_session, resource, {"delivery_status": "by_user"}, notes)
    data = dev(unique("dev") + "@example.com")
    data.members = [({"email": email, "role": "nonmember", "moderation_action": "accept"}, {})]
    apply.apply(txn_session, mailman3.plan(data))
    address = txn_session.scalar(select(Address).where(Address.email == email))
    assert address is not None and address.user_id is None
    assert address.verified_on is None and address.display_name == "Poster"
    assert address.delivery_status is DeliveryStatus.by_user


def test_an_at_list_entry_carries_with_the_rest_of_its_setting() -> None:
    """Mailman 3.3.10 takes ``@list@domain`` in the nonmember settings: the import keeps
    the whole setting (it used to refuse it, valid addresses and all)."""
    data = dev("dev@example.com")
    data.config["accept_these_nonmembers"] = ["@Users@Example.com", "^.*@partner\\.example$"]
    data.config["discard_these_nonmembers"] = ["@spam@example.com"]
    plan = mailman3.plan(data)
    assert plan.settings["accept_these_nonmembers"] == [
        "@users@example.com",
        "^.*@partner\\.example$",
    ]
    assert plan.settings["discard_these_nonmembers"] == ["@spam@example.com"]
    assert not any("these_nonmembers" in n for n in plan.notes)


def test_pending_requests_carry_with_their_tokens_and_the_confirmation_still_works(
    txn_session: Session,
) -> None:
    """Mailman mailed Pat a confirmation with its token: after the move, that token
    confirms here (the list's policy is confirm: Pat is a member); Quinn's waits for a
    moderator, whose accept subscribes; an expired one is not carried; a rerun, after
    both are done, adds neither again."""
    name = unique("dev") + "@example.com"
    report = apply.apply(txn_session, mailman3.plan(dev(name)))
    assert "carried the pending subscription of pat@example.net with its token" in report.changes
    assert "1 pending request(s) had expired in Mailman; not carried" in report.notes
    mlist = lists.get(txn_session, name)
    pat = pending.get(
        txn_session, "0123456789abcdef0123456789abcdef01234567", datetime.now(UTC), mlist=mlist
    )
    assert pat.expires_at.replace(tzinfo=UTC) == NOW + timedelta(days=3)  # as in Mailman
    status, _token = subscriptions.confirm(
        txn_session, mlist, "0123456789abcdef0123456789abcdef01234567"
    )
    assert status is subscriptions.Status.subscribed
    assert members.is_member(txn_session, mlist, "pat@example.net")
    status2 = subscriptions.moderate(
        txn_session,
        mlist,
        "fedcba9876543210fedcba9876543210fedcba98",
        "accept",
        actor="boss@example.com",
    )
    assert status2 is subscriptions.Status.subscribed
    again = apply.apply(txn_session, mailman3.plan(dev(name)), merge=True)
    assert not any("pending" in c for c in again.changes)


def test_a_request_carried_then_discarded_here_is_not_carried_again(
    txn_session: Session,
) -> None:
    """A moderator here discards the request Mailman still holds: a later run of the
    import (before Mailman is switched off) does not bring it back; the audit log keeps
    the token's hash, never the token."""
    from mtaplugin.model import AuditEntry, PendingRequest

    name = unique("dev") + "@example.com"
    apply.apply(txn_session, mailman3.plan(dev(name)))
    mlist = lists.get(txn_session, name)
    token = "fedcba9876543210fedcba9876543210fedcba98"
    status = subscriptions.moderate(txn_session, mlist, token, "discard", actor="boss@example.com")
    assert status is not None
    assert (
        txn_session.scalars(select(PendingRequest).where(PendingRequest.token == token)).first()
        is None
    )
    again = apply.apply(txn_session, mailman3.plan(dev(name)), merge=True)
    assert not any("pending" in c for c in again.changes)
    assert (
        txn_session.scalars(select(PendingRequest).where(PendingRequest.token == token)).first()
        is None
    )
    logged = [
        str(e.detail)
        for e in txn_session.scalars(
            select(AuditEntry).where(AuditEntry.mailing_list_id == mlist.id)
        )
    ]
    assert logged and not any(token in d for d in logged)
