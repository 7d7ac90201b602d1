"""mtaplugin.manage.held and `mtaplugin held ...`: moderating held posts."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.cli import main
from mtaplugin.engine import ListEngine
from mtaplugin.errors import InvalidInput, NotFound
from mtaplugin.mailauth.identity import AuthenticationPolicy
from mtaplugin.manage import held, lists
from mtaplugin.model import (
    ArchivedMessage,
    AuditEntry,
    HeldMessage,
    MailingList,
    OutboxMessage,
    PendingRequest,
)
from mtaplugin.posting.rules.moderation import NONMEMBER_MODERATION
from mtaplugin.posting.verdict import Discard
from mtaplugin.vocabulary.envelope import Envelope
from tests.helpers import drain, make_post
from tests.unit.sites import Roster, make_site


@pytest.fixture
def team(module_sessions: sessionmaker[Session]) -> str:
    return make_site(module_sessions, Roster.members("anne@example.com", "bob@example.com")).address


def hold(sessions: sessionmaker[Session], address: str, sender: str, auth_user: str = "") -> int:
    engine = ListEngine(sessions, auth_policy=AuthenticationPolicy(trust_sasl_senders=True))
    env = Envelope(mail_from=sender, recipients=[f"<{address}>"], auth_user=auth_user)
    verdict = engine.decide(env, make_post(sender, address, subject="please hold"))
    assert isinstance(verdict, Discard)
    (held_id,) = verdict.stored.held.values()
    return held_id


def rows(sessions: sessionmaker[Session], address: str, kind: str) -> list[OutboxMessage]:
    with sessions() as s:
        mlist = lists.get(s, address)
        return list(
            s.scalars(
                select(OutboxMessage).where(
                    OutboxMessage.mailing_list_id == mlist.id, OutboxMessage.kind == kind
                )
            )
        )


def audit(sessions: sessionmaker[Session], address: str) -> list[AuditEntry]:
    with sessions() as s:
        mlist = lists.get(s, address)
        return list(s.scalars(select(AuditEntry).where(AuditEntry.mailing_list_id == mlist.id)))


def test_approve_queues_the_post_for_the_members_and_removes_the_hold(module_sessions, team):
    held_id = hold(module_sessions, team, "stranger@example.net")
    with module_sessions.begin() as s:
        mlist = lists.get(s, team)
        result = held.approve(held.Moderator(s, mlist, "mod@example.com"), held_id)
    (row,) = rows(module_sessions, team, "release")
    assert row.id == result.outbox_id
    assert sorted(row.recipients) == ["anne@example.com", "bob@example.com"]
    assert b"please hold" in row.raw
    with module_sessions() as s:
        assert s.get(HeldMessage, held_id) is None
        assert lists.get(s, team).post_id == 2
    (entry,) = audit(module_sessions, team)
    assert (entry.actor, entry.action, entry.detail["request_id"]) == (
        "mod@example.com",
        "held.approve",
        held_id,
    )


def test_approve_strips_the_approval_headers(module_sessions, team):
    raw = make_post("x@y.test", team, headers={"Approved": "wrong-password"})
    with module_sessions.begin() as s:
        mlist = lists.get(s, team)
        h = HeldMessage(mailing_list_id=mlist.id, sender="x@y.test", raw=raw)
        s.add(h)
        s.flush()
        held.approve(held.Moderator(s, mlist, "mod"), h.id)
    (row,) = rows(module_sessions, team, "release")
    assert b"Approved:" not in row.raw and b"wrong-password" not in row.raw


def test_reject_tells_an_authenticated_poster_only(module_sessions, team):
    quiet = hold(module_sessions, team, "stranger@example.net")
    told = hold(module_sessions, team, "carl@example.net", auth_user="carl@example.net")
    with module_sessions.begin() as s:
        mlist = lists.get(s, team)
        r1 = held.reject(held.Moderator(s, mlist, "mod"), quiet, "off topic")
        r2 = held.reject(held.Moderator(s, mlist, "mod"), told, "off topic")
    assert not r1.notified and r2.notified
    notices = [r for r in rows(module_sessions, team, "notice") if r.id == r2.outbox_id]
    assert notices[0].recipients == ["carl@example.net"]
    assert b"off topic" in notices[0].raw
    assert {e.action for e in audit(module_sessions, team)} == {"held.reject"}


def test_discard_and_defer(module_sessions, team):
    a = hold(module_sessions, team, "s1@example.net")
    b = hold(module_sessions, team, "s2@example.net")
    with module_sessions.begin() as s:
        mlist = lists.get(s, team)
        held.discard(held.Moderator(s, mlist, "mod"), a)
        held.defer(held.Moderator(s, mlist, "mod"), b, "ask the owner")
    with module_sessions() as s:
        mlist = lists.get(s, team)
        assert [h.id for h in held.all_held(s, mlist)] == [b]
    assert rows(module_sessions, team, "release") == []
    assert sorted(e.action for e in audit(module_sessions, team)) == ["held.defer", "held.discard"]


def test_unknown_held_post_and_action_are_refused_naming_the_field(module_sessions, team):
    with module_sessions.begin() as s:
        mlist: MailingList = lists.get(s, team)
        with pytest.raises(NotFound) as err:
            held.approve(held.Moderator(s, mlist, "mod"), 999_999)
        assert err.value.field == "request_id"
        with pytest.raises(InvalidInput) as err2:
            held.act(held.Moderator(s, mlist, "mod"), 1, "bless")
        assert err2.value.field == "action"


def test_a_post_held_on_another_list_is_not_found(module_sessions, team):
    held_id = hold(module_sessions, team, "stranger@example.net")
    other = team.replace("team@", "other@")
    with module_sessions.begin() as s:
        lists.create(s, other)
    with module_sessions.begin() as s, pytest.raises(NotFound):
        held.discard(held.Moderator(s, lists.get(s, other), "mod"), held_id)


# --- the CLI ------------------------------------------------------------------------------
@pytest.fixture
def cli_env(monkeypatch: pytest.MonkeyPatch, module_db_url: str) -> None:
    monkeypatch.setenv("MTAPLUGIN_DATABASE_URL", module_db_url)


def test_cli_list_show_approve(cli_env, module_sessions, team, capsys):
    held_id = hold(module_sessions, team, "stranger@example.net")
    assert main(["held", "list", team]) == 0
    listing = capsys.readouterr().out
    assert f"{held_id}\t" in listing and "stranger@example.net" in listing
    assert NONMEMBER_MODERATION in listing
    assert main(["held", "show", team, str(held_id)]) == 0
    shown = capsys.readouterr().out
    assert "not authenticated" in shown and "is not a member" in shown
    assert main(["held", "approve", team, str(held_id), "--as", "olive@example.com"]) == 0
    assert "queued for the members" in capsys.readouterr().out
    assert audit(module_sessions, team)[0].actor == "olive@example.com"


def test_cli_errors_change_nothing(cli_env, module_sessions, team, capsys):
    held_id = hold(module_sessions, team, "stranger@example.net")
    # One good id and one unknown: the whole command is refused, the good one stays held.
    assert main(["held", "discard", team, str(held_id), "424242"]) == 1
    err = capsys.readouterr().err
    assert "request_id" in err and "424242" in err
    with module_sessions() as s:
        assert s.get(HeldMessage, held_id) is not None


def test_forward_sends_a_copy_and_keeps_the_hold(module_sessions, team):
    a = hold(module_sessions, team, "s3@example.net")
    with module_sessions.begin() as s:
        mlist = lists.get(s, team)
        held.forward(held.Moderator(s, mlist, "mod"), a, ["boss@example.org"])
    (row,) = rows(module_sessions, team, "notice")
    assert row.recipients == ["boss@example.org"]
    assert b"please hold" in row.raw and b"message/rfc822" in row.raw
    with module_sessions() as s:
        assert [h.id for h in held.all_held(s, lists.get(s, team))] == [a]
    assert [e.action for e in audit(module_sessions, team)] == ["held.forward"]


def test_the_id_of_a_discarded_held_post_is_never_given_again(module_sessions, team):
    """SQLite without AUTOINCREMENT gave the newest rowid again: a stale notice or browser
    tab for the discarded post would then act on the next one."""
    first = hold(module_sessions, team, "stranger@example.net")
    newest = hold(module_sessions, team, "other@example.net")
    assert newest > first
    with module_sessions.begin() as s:
        held.discard(held.Moderator(s, lists.get(s, team), "mod@example.com"), newest)
    again = hold(module_sessions, team, "third@example.net")
    assert again > newest
    with module_sessions.begin() as s:  # and the same after the last one is gone
        mlist = lists.get(s, team)
        for held_id in (first, again):
            held.discard(held.Moderator(s, mlist, "mod@example.com"), held_id)
    assert hold(module_sessions, team, "fourth@example.net") > again


def test_the_id_of_a_removed_pending_request_is_never_given_again(module_sessions):
    from datetime import UTC, datetime

    from mtaplugin.enums import RequestType
    from tests.unit.dbutil import pending_request

    def create(email: str) -> int:
        with module_sessions.begin() as s:
            now = datetime(2026, 12, 4, tzinfo=UTC)
            return pending_request(s, RequestType.subscription, email, now).id

    newest = create("a@example.net")
    with module_sessions.begin() as s:
        s.delete(s.get(PendingRequest, newest))
    assert create("b@example.net") > newest


def test_a_release_happens_at_the_callers_time(module_sessions, team):
    """The release is dated by the caller's clock (the web's, the API's, the mail
    command's), not the wall clock: here its archive entry."""
    when = datetime(2031, 5, 6, 7, 8, 9, tzinfo=UTC)
    held_id = hold(module_sessions, team, "stranger@example.net")
    with module_sessions.begin() as s:
        mlist = lists.get(s, team)
        held.act(held.Moderator(s, mlist, "mod@example.com", lambda: when), held_id, "approve")
    drain(module_sessions)  # the worker, later: the entry keeps the release's time
    with module_sessions() as s:
        mlist = lists.get(s, team)
        (archived,) = s.scalars(
            select(ArchivedMessage).where(ArchivedMessage.mailing_list_id == mlist.id)
        ).all()
        assert archived.archived_at == when
