"""``mtaplugin people``: one person's data (export, forget) and one address across many
lists (find, remove, ban, moderate), on SQLite and PostgreSQL."""

from __future__ import annotations

import base64
import json
import re
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.archive import store
from mtaplugin.enums import Action, MemberRole, RequestType, TokenOwner
from mtaplugin.manage import bans, lists, members
from mtaplugin.manage.people.forget import pseudonym
from mtaplugin.model import (
    Address,
    AuditEntry,
    BounceEvent,
    HeldMessage,
    Member,
    OutboxMessage,
    PendingRequest,
    User,
)
from mtaplugin.model.archive import ArchivedMessage
from tests.unit.cli.util import roster

SECRET = "people-test-secret-0123456789abcdef0123456789"
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
POST = (
    b"From: Anne Person <anne@example.com>\r\nTo: team@lists.test\r\n"
    b"Subject: hello from anne\r\nMessage-ID: <p1@example.com>\r\n"
    b"Date: Tue, 01 Dec 2026 10:00:00 +0000\r\n\r\nHi all, this is anne@example.com.\r\n"
)
BINARY = b"From: anne@example.com\r\nSubject: bin\r\nMessage-ID: <b1@x>\r\n\r\n\xff\xfe\r\n"


@pytest.fixture(autouse=True)
def secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MTAPLUGIN_SITE_SECRET_KEY", SECRET)


@pytest.fixture
def anne(run, db: sessionmaker[Session], team: str) -> str:
    """anne@example.com: member of team and owner of other, with a user and a second
    address, a held post, a pending request, a bounce, an audit entry, archived posts."""
    assert run("lists", "create", "other@lists.test").code == 0
    assert run("members", "add", team, "Anne Person <anne@example.com>").code == 0
    assert (
        run("members", "add", "other@lists.test", "anne@example.com", "--role", "owner").code == 0
    )
    with db() as s, s.begin():
        mlist = lists.get(s, team)
        # Subscribing made anne@example.com's user (as Mailman does); name it.
        (address,) = s.scalars(select(Address).where(Address.email == "anne@example.com"))
        user = s.get(User, address.user_id)
        assert user is not None
        user.display_name = "Anne"
        s.add(Address(email="anne@work.test", original_email="anne@work.test", user_id=user.id))
        s.add(
            HeldMessage(
                mailing_list_id=mlist.id, sender="anne@work.test", subject="held", raw=BINARY
            )
        )
        s.add(
            PendingRequest(
                token="tok-anne",
                request_type=RequestType.subscription,
                token_owner=TokenOwner.subscriber,
                mailing_list_id=mlist.id,
                email="anne@work.test",
                expires_at=NOW + timedelta(days=3),
            )
        )
        s.add(BounceEvent(mailing_list_id=mlist.id, email="anne@example.com", status="5.1.1"))
        s.add(
            AuditEntry(
                actor="web:joanne@example.com", action="x", detail={"email": "joanne@example.com"}
            )
        )
        store.archive(s, mlist, POST, NOW, check=False)
    return "anne@example.com"


def test_export_holds_everything_about_the_person(run, anne: str, team: str):
    r = run("people", "export", "ANNE@example.com")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert doc["format"] == "mtaplugin-person/1"
    assert [a["email"] for a in doc["addresses"]] == ["anne@example.com", "anne@work.test"]
    assert doc["user"]["display_name"] == "Anne"
    assert {(m["list"], m["role"]) for m in doc["memberships"]} == {
        (team, "member"),
        ("other@lists.test", "owner"),
    }
    # the held post's bytes are not UTF-8: base64; the archived post's are text
    (held,) = doc["held_posts"]
    assert held["raw_encoding"] == "base64"
    assert base64.b64decode(held["raw"]) == BINARY
    (post,) = doc["archived_posts"]
    assert post["raw_encoding"] == "text" and "Hi all" in post["raw"]
    assert [p["type"] for p in doc["pending_requests"]] == ["subscription"]
    assert [b["status"] for b in doc["bounce_events"]] == ["5.1.1"]
    actions = [a["action"] for a in doc["audit_entries"]]
    assert "member.subscribe" in actions  # the subscription was audited
    # joanne@example.com is someone else: not in anne's audit entries
    assert all("joanne" not in json.dumps(a) for a in doc["audit_entries"])


def test_export_to_a_file_and_unknown_address(run, anne: str, tmp_path):
    out = tmp_path / "anne.json"
    assert run("people", "export", anne, "-o", str(out)).code == 0
    assert json.loads(out.read_text("utf-8"))["email"] == anne
    r = run("people", "export", "nobody@example.com")
    assert r.code == 1
    assert "holds nothing about nobody@example.com" in r.err
    r = run("people", "export", "not an address")
    assert r.code == 1 and r.err


def test_forget_shows_first_and_changes_nothing_without_yes(run, db, anne: str, team: str):
    r = run("people", "forget", anne)
    assert r.code == 0
    assert "nothing was changed" in r.out
    assert "member of team@lists.test (anne@example.com)" in r.out
    assert "held post on team@lists.test: held" in r.out
    assert ("anne@example.com", "member", "Anne Person") in roster(db, team)


def test_forget_removes_and_pseudonymises(run, db, anne: str, team: str):
    with db() as s:
        subscribed = s.scalars(
            select(AuditEntry).where(AuditEntry.action == "member.subscribe")
        ).all()
        assert any(e.detail.get("email") == anne for e in subscribed)
        mailed_before = _mailed(s, anne)
    r = run("people", "forget", anne, "--yes", "--archive", "remove", "--as", "dpo@site.test")
    assert r.code == 0, r.err
    assert roster(db, team) == []
    assert [e for e, *_ in roster(db, "other@lists.test")] == []
    stand_in = pseudonym(SECRET.encode(), anne)
    with db() as s:
        assert s.scalars(select(Address)).all() == []
        assert s.scalars(select(User)).all() == []
        assert s.scalars(select(HeldMessage)).all() == []
        assert s.scalars(select(PendingRequest)).all() == []
        assert s.scalars(select(BounceEvent)).all() == []
        (post,) = s.scalars(select(ArchivedMessage)).all()
        assert post.removed and post.raw == b""
        entries = s.scalars(select(AuditEntry).order_by(AuditEntry.id)).all()
        text = json.dumps([(e.actor, e.detail) for e in entries])
        assert not re.search(r"(?<![\w.])anne@(example\.com|work\.test)", text)
        assert "joanne@example.com" in text  # someone else's entry is untouched
        assert any(e.detail.get("email") == stand_in for e in entries)
        last = entries[-1]
        assert (last.actor, last.action) == ("dpo@site.test", "person.forget")
        assert stand_in in last.detail["person"]
        # no goodbye to the forgotten person (the list sends goodbyes otherwise)
        assert _mailed(s, anne) == mailed_before
    assert run("people", "export", anne).code == 1
    # forgetting again: nothing is known any more
    assert run("people", "forget", anne, "--yes").code == 1


def _mailed(s: Session, email: str) -> int:
    return sum(email in m.recipients for m in s.scalars(select(OutboxMessage)))


def test_pseudonym_is_stable_and_keyed():
    assert pseudonym(b"k1", "a@b.test") == pseudonym(b"k1", "A@B.test")
    assert pseudonym(b"k1", "a@b.test") != pseudonym(b"k2", "a@b.test")
    assert pseudonym(b"k1", "a@b.test").endswith("@invalid")


def test_forget_anonymises_archived_posts(run, db, anne: str):
    r = run("people", "forget", anne, "--yes", "--archive", "anonymise")
    assert r.code == 0, r.err
    stand_in = pseudonym(SECRET.encode(), anne)
    with db() as s:
        (post,) = s.scalars(select(ArchivedMessage)).all()
        assert not post.removed
        assert post.sender == stand_in and post.sender_name == ""
        assert b"anne@example.com" not in post.raw and b"Anne Person" not in post.raw
        assert stand_in.encode() in post.raw and post.subject == "hello from anne"
        assert "anne@example.com" not in post.text


def test_forget_bad_archive_choice_changes_nothing(run, db, anne: str, team: str):
    r = run("people", "forget", anne, "--yes", "--archive", "shred")
    assert r.code == 1 and "archive" in r.err
    assert ("anne@example.com", "member", "Anne Person") in roster(db, team)


# --- one address across many lists --------------------------------------------------------
@pytest.fixture
def three(run, db) -> list[str]:
    assert run("domains", "add", "lists.test").code == 0
    names = [f"l{n}@lists.test" for n in range(3)]
    for name in names:
        assert run("lists", "create", name).code == 0
        assert run("members", "add", name, "zed@example.net").code == 0
    with db() as s, s.begin():
        lists.get(s, names[1]).send_goodbye_message = False
        lists.get(s, names[2]).admin_notify_mchanges = True
    return names


def test_find_remove_across_lists(run, db, three: list[str]):
    r = run("people", "find", "zed@example.net")
    assert r.code == 0
    assert [line.split("\t")[0] for line in r.out.splitlines()] == three
    with db() as s:
        before = len(s.scalars(select(OutboxMessage)).all())
    r = run("people", "remove", "zed@example.net", "--as", "boss@example.org")
    assert r.code == 0, r.err
    assert r.out.count("removed") == 3
    for name in three:
        assert roster(db, name) == []
    with db() as s:
        goodbyes = [
            m
            for m in s.scalars(select(OutboxMessage)).all()[before:]
            if m.recipients == ["zed@example.net"]
        ]
        # a goodbye from each list that sends one (l1 does not)
        assert len(goodbyes) == 2
        # the owners' notice from the list that asks for one (l2), to its staff
        notices = [
            m
            for m in s.scalars(select(OutboxMessage)).all()[before:]
            if m.recipients != ["zed@example.net"]
        ]
        assert [m.mailing_list_id for m in notices] == [lists.get(s, three[2]).id]
        audit = s.scalars(select(AuditEntry).where(AuditEntry.action == "member.unsubscribe")).all()
        assert [a.actor for a in audit] == ["boss@example.org"] * 3
    assert run("people", "find", "zed@example.net").code == 1


def test_remove_only_named_lists(run, db, three: list[str]):
    r = run("people", "remove", "zed@example.net", "--lists", f"{three[0]},{three[2]}")
    assert r.code == 0
    assert roster(db, three[1]) != [] and roster(db, three[0]) == []
    r = run("people", "remove", "zed@example.net", "--lists", "nosuch@lists.test")
    assert r.code == 1 and "nosuch@lists.test" in r.err


def test_ban_and_moderate_across_lists(run, db, three: list[str]):
    assert run("people", "ban", "zed@example.net").code == 0
    with db() as s:
        for name in three:
            assert bans.is_banned(s, lists.get(s, name), "zed@example.net")
    r = run("people", "ban", "zed@example.net")
    assert r.out.count("already banned") == 3
    assert run("people", "moderate", "zed@example.net", "hold").code == 0
    with db() as s:
        for name in three:
            m = members.get(s, lists.get(s, name), "zed@example.net", MemberRole.member)
            assert m.moderation_action is Action.hold
    assert run("people", "moderate", "zed@example.net", "default").code == 0
    with db() as s:
        assert {m.moderation_action for m in s.scalars(select(Member))} == {None}
    r = run("people", "moderate", "zed@example.net", "sometimes")
    assert r.code == 1 and "moderation_action" in r.err


def test_a_failed_forget_changes_nothing(run, db, anne: str, team: str, monkeypatch):
    from mtaplugin.archive import removal

    def broken(*args: object, **kw: object) -> int:
        raise RuntimeError("disk full")

    monkeypatch.setattr(removal, "remove_author", broken)
    with pytest.raises(RuntimeError):
        run("people", "forget", anne, "--yes", "--archive", "remove")
    assert ("anne@example.com", "member", "Anne Person") in roster(db, team)
    with db() as s:
        assert len(s.scalars(select(HeldMessage)).all()) == 1
        assert len(s.scalars(select(PendingRequest)).all()) == 1
        assert not s.scalars(select(AuditEntry).where(AuditEntry.action == "person.forget")).all()
    assert json.loads(run("people", "export", anne).out)["email"] == anne


def test_a_nonmember_known_by_a_held_post_only(run, db, team: str):
    with db() as s, s.begin():
        mlist = lists.get(s, team)
        s.add(HeldMessage(mailing_list_id=mlist.id, sender="drifter@example.org", raw=POST))
    doc = json.loads(run("people", "export", "drifter@example.org").out)
    assert doc["addresses"] == [] and doc["user"] is None
    assert [h["raw_encoding"] for h in doc["held_posts"]] == ["text"]
    assert run("people", "forget", "drifter@example.org", "--yes").code == 0
    with db() as s:
        assert s.scalars(select(HeldMessage)).all() == []
        entry = s.scalars(select(AuditEntry).where(AuditEntry.action == "held.discard")).one()
        assert entry.detail["sender"] == pseudonym(SECRET.encode(), "drifter@example.org")
