"""Rosters from a directory, with an SQL source: a second real PostgreSQL database with a
``people`` table (the suite's PostgreSQL server), synced into lists on SQLite and on
PostgreSQL.  The LDAP source has its own module (test_roster_sources_ldap.py)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin import wiring
from mtaplugin.clock import ManualClock
from mtaplugin.config import Settings
from mtaplugin.db import engine_of
from mtaplugin.enums import MemberRole
from mtaplugin.errors import InvalidInput
from mtaplugin.manage import bans, lists, members
from mtaplugin.manage.subscriptions import WorkflowSettings
from mtaplugin.model import AuditEntry, RosterSource
from mtaplugin.roster_sources import sources
from mtaplugin.roster_sources.directory import DirectoryEntry
from mtaplugin.roster_sources.plan import plan, removal_bound
from mtaplugin.roster_sources.sync import SyncReport, sync
from mtaplugin.testing.postgres import PostgresServer
from mtaplugin.vocabulary.job import JobContext
from mtaplugin.worker.registry import ROSTER_SYNC
from tests.unit.sites import Roster, Site, make_site

_n = itertools.count(1)
PASSWORD = "s3cret-people-pw"


# --- the pure plan ---------------------------------------------------------------------------
def entries(*emails: str) -> list[DirectoryEntry]:
    return [DirectoryEntry(e) for e in emails]


def test_plan_adds_the_new_and_removes_only_what_the_source_added() -> None:
    decided = plan(
        entries("a@x.org", "b@x.org", "new@x.org"),
        roster={"a@x.org", "b@x.org", "gone@x.org", "byhand@x.org"},
        managed={"a@x.org", "gone@x.org"},
        max_removals=10,
        max_removal_percent=10,
    )
    assert decided.additions == (("new@x.org", ""),)
    assert decided.removals == ("gone@x.org",)  # byhand@ is not the source's to remove
    assert decided.unchanged == 2
    assert not decided.over_bound


def test_the_removal_bound_is_the_larger_of_count_and_share() -> None:
    assert removal_bound(20, 5, 10) == 5
    assert removal_bound(1000, 5, 10) == 100
    assert removal_bound(1000, 0, 0) == 0
    many = plan(
        entries("keep@x.org"),
        roster={f"m{i}@x.org" for i in range(30)} | {"keep@x.org"},
        managed={f"m{i}@x.org" for i in range(30)},
        max_removals=5,
        max_removal_percent=10,
    )
    assert len(many.removals) == 30 and many.bound == 5 and many.over_bound


# --- an SQL directory: a second PostgreSQL database -------------------------------------------
@dataclass
class People:
    server: PostgresServer
    dbname: str

    @property
    def url(self) -> str:
        """The URL a source is given: a reader that may only SELECT, with its password."""
        return f"postgresql+psycopg://reader:{PASSWORD}@127.0.0.1:{self.server.port}/{self.dbname}"

    def run(self, sql: str, *params: object) -> None:
        with psycopg.connect(
            f"host=127.0.0.1 port={self.server.port} user=postgres dbname={self.dbname}",
            autocommit=True,
        ) as conn:
            conn.execute(sql, params)  # type: ignore[arg-type]

    def add(self, email: str, name: str = "", team: str = "staff") -> None:
        self.run("INSERT INTO people (email, name, team) VALUES (%s, %s, %s)", email, name, team)

    def drop(self, email: str) -> None:
        self.run("DELETE FROM people WHERE email = %s", email)


@pytest.fixture(scope="module")
def reader_role(postgres: PostgresServer) -> None:
    postgres.execute(
        "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'reader') THEN "
        f"CREATE ROLE reader LOGIN PASSWORD '{PASSWORD}'; END IF; END $$"
    )


@pytest.fixture
def people(postgres: PostgresServer, reader_role: None) -> People:
    dbname = f"people_{next(_n)}"
    postgres.execute(f"CREATE DATABASE {dbname}")
    book = People(postgres, dbname)
    book.run("CREATE TABLE people (email text, name text, team text)")
    book.run("GRANT SELECT ON people TO reader")
    return book


@pytest.fixture
def site(module_sessions: sessionmaker[Session], module_db_url: str) -> Site:
    roster = Roster(
        (("hand@example.com", MemberRole.member), ("olive@example.com", MemberRole.owner))
    )
    return make_site(module_sessions, roster, url=module_db_url)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(datetime(2026, 12, 4, 12, 0, tzinfo=UTC))


@pytest.fixture
def workflow(clock: ManualClock) -> WorkflowSettings:
    return WorkflowSettings(clock=clock)


QUERY = "SELECT email, name FROM people WHERE team = 'staff'"


def bind(site: Site, people: People, role: str = "member", **values: object) -> int:
    settings: dict[str, object] = {"kind": "sql", "url": people.url, "query": QUERY}
    settings.update(values)
    with site.sessions.begin() as s:
        return sources.save(s, site.mlist(), MemberRole(role), settings).id


def roster(site: Site, role: MemberRole = MemberRole.member) -> set[str]:
    with site.sessions() as s:
        return {a.email for _m, a in members.roster(s, lists.get(s, site.address), role)}


def run(site: Site, source_id: int, workflow: WorkflowSettings, **flags: bool) -> SyncReport:
    return sync(site.sessions, source_id, workflow, **flags)


def stored(site: Site, source_id: int) -> RosterSource:
    with site.sessions() as s:
        source = s.get_one(RosterSource, source_id)
        s.expunge(source)
        return source


def test_a_sync_adds_the_directory_people_through_the_workflow(
    site: Site, people: People, workflow: WorkflowSettings, clock: ManualClock
) -> None:
    people.add("Ann@Example.NET", "Ann Example")
    people.add("ben@example.net", "Ben")
    people.add("other@example.net", team="sales")
    source_id = bind(site, people)
    report = run(site, source_id, workflow)
    assert report.result == "ok", report.message
    assert sorted(report.added) == ["ann@example.net", "ben@example.net"]
    assert roster(site) == {"hand@example.com", "ann@example.net", "ben@example.net"}
    # the list's welcome (send_welcome_message is on by default) went to each new member
    assert site.mails_to("ann@example.net") and site.mails_to("ben@example.net")
    with site.sessions() as s:
        actions = s.scalars(
            select(AuditEntry.action).where(AuditEntry.mailing_list_id == site.mlist().id)
        ).all()
    assert actions.count("member.subscribe") == 2 and "roster.sync" in actions
    source = stored(site, source_id)
    assert (source.last_result, source.last_added, source.last_sync_at) == ("ok", 2, clock.now)
    # the same answer again changes nothing
    again = run(site, source_id, workflow)
    assert (again.result, again.added, again.removed, again.unchanged) == ("ok", [], [], 2)


def test_a_person_gone_from_the_directory_leaves_but_one_added_by_hand_stays(
    site: Site, people: People, workflow: WorkflowSettings
) -> None:
    people.add("ann@example.net")
    people.add("ben@example.net")
    people.add("hand@example.com")  # a member already, added by hand
    source_id = bind(site, people)
    assert run(site, source_id, workflow).added == ["ann@example.net", "ben@example.net"]
    people.drop("ben@example.net")
    people.drop("hand@example.com")
    report = run(site, source_id, workflow)
    assert (report.result, report.removed) == ("ok", ["ben@example.net"])
    assert roster(site) == {"hand@example.com", "ann@example.net"}
    assert any("ben@example.net" in m["To"] for m in site.mails_to("ben@example.net"))


def test_an_empty_answer_never_empties_the_list(
    site: Site, people: People, workflow: WorkflowSettings
) -> None:
    people.add("ann@example.net")
    source_id = bind(site, people)
    run(site, source_id, workflow)
    people.drop("ann@example.net")
    report = run(site, source_id, workflow, force=True)
    assert report.result == "refused" and "no addresses" in report.message
    assert roster(site) == {"hand@example.com", "ann@example.net"}
    assert stored(site, source_id).last_result == "refused"


def test_a_broken_query_is_a_clear_error_and_changes_nothing(
    site: Site, people: People, workflow: WorkflowSettings
) -> None:
    people.add("ann@example.net")
    source_id = bind(site, people, query="SELECT email FROM nosuchtable")
    report = run(site, source_id, workflow)
    assert report.result == "error"
    assert "nosuchtable" in report.message and PASSWORD not in report.message
    assert roster(site) == {"hand@example.com"}
    source = stored(site, source_id)
    assert source.last_result == "error" and "nosuchtable" in source.last_message


def test_a_database_that_is_down_is_an_error_without_the_password(
    site: Site, people: People, workflow: WorkflowSettings
) -> None:
    from mtaplugin.testing import free_port

    url = f"postgresql+psycopg://reader:{PASSWORD}@127.0.0.1:{free_port()}/nothere"
    source_id = bind(site, people, url=url, timeout=2)
    report = run(site, source_id, workflow)
    assert report.result == "error" and PASSWORD not in report.message
    assert roster(site) == {"hand@example.com"}


def test_the_query_runs_read_only(site: Site, people: People, workflow: WorkflowSettings) -> None:
    people.run("GRANT INSERT ON people TO reader")
    query = (
        "WITH x AS (INSERT INTO people VALUES ('sneaky@example.net') RETURNING email) "
        "SELECT email FROM x"
    )
    source_id = bind(site, people, query=query)
    report = run(site, source_id, workflow)
    assert report.result == "error" and "read-only" in report.message
    assert roster(site) == {"hand@example.com"}


def test_removals_over_the_bound_need_force(
    site: Site, people: People, workflow: WorkflowSettings
) -> None:
    for i in range(6):
        people.add(f"p{i}@example.net")
    source_id = bind(site, people, max_removals=2, max_removal_percent=10)
    run(site, source_id, workflow)
    for i in range(1, 6):
        people.drop(f"p{i}@example.net")
    refused = run(site, source_id, workflow)
    assert refused.result == "refused" and "bound of 2" in refused.message
    assert len(roster(site)) == 7
    dry = run(site, source_id, workflow, force=True, dry_run=True)
    assert dry.result == "ok" and len(dry.removed) == 5 and len(roster(site)) == 7
    assert stored(site, source_id).last_result == "refused"  # a dry run records nothing
    forced = run(site, source_id, workflow, force=True)
    assert forced.result == "ok" and len(forced.removed) == 5
    assert roster(site) == {"hand@example.com", "p0@example.net"}


def test_a_banned_address_is_not_added(
    site: Site, people: People, workflow: WorkflowSettings
) -> None:
    people.add("ann@example.net")
    people.add("spam@example.net")
    with site.sessions.begin() as s:
        bans.add(s, lists.get(s, site.address), "spam@example.net")
    report = run(site, bind(site, people), workflow)
    assert report.added == ["ann@example.net"] and report.refused == {"spam@example.net": "banned"}
    assert "spam@example.net" not in roster(site)


def test_a_source_for_the_moderators(
    site: Site, people: People, workflow: WorkflowSettings
) -> None:
    people.add("mod1@example.net")
    people.add("mod2@example.net")
    source_id = bind(site, people, role="moderator")
    assert run(site, source_id, workflow).result == "ok"
    assert roster(site, MemberRole.moderator) == {"mod1@example.net", "mod2@example.net"}
    assert roster(site) == {"hand@example.com"}
    people.drop("mod2@example.net")
    assert run(site, source_id, workflow).removed == ["mod2@example.net"]
    assert roster(site, MemberRole.moderator) == {"mod1@example.net"}


def test_the_password_is_kept_apart_and_never_shown(site: Site, people: People) -> None:
    source_id = bind(site, people)
    source = stored(site, source_id)
    assert source.bind_password == PASSWORD and PASSWORD not in source.url
    shown = sources.view(source)
    assert PASSWORD not in repr(shown) and shown["bind_password_set"] is True


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"kind": "nis", "url": "x"}, "kind"),
        ({"kind": "sql", "url": "not a url", "query": QUERY}, "url"),
        ({"kind": "sql", "url": "sqlite://", "query": "DELETE FROM people"}, "query"),
        ({"kind": "ldap", "url": "http://x"}, "url"),
        ({"kind": "ldap", "url": "ldap://127.0.0.1"}, "base_dn"),
        ({"kind": "ldap", "url": "ldap://h", "base_dn": "o=x", "ldap_filter": "(a=b"},
         "ldap_filter"),
        ({"kind": "sql", "url": "sqlite://", "query": QUERY, "interval": "30"}, "interval"),
        ({"kind": "sql", "url": "sqlite://", "query": QUERY, "max_removal_percent": "101"},
         "max_removal_percent"),
        ({"kind": "sql", "url": "sqlite://", "query": QUERY, "colour": "red"}, "colour"),
    ],
)  # fmt: skip
def test_bad_settings_name_their_field_and_store_nothing(
    site: Site, values: dict[str, object], field: str
) -> None:
    with pytest.raises(InvalidInput) as caught, site.sessions.begin() as s:
        sources.save(s, site.mlist(), MemberRole.member, values)
    assert caught.value.field == field
    with site.sessions() as s:
        assert sources.for_list(s, lists.get(s, site.address)) == []


def test_the_job_syncs_each_source_when_its_interval_has_passed(
    module_sessions: sessionmaker[Session], site: Site, people: People, clock: ManualClock
) -> None:
    world = wiring.build(Settings(), db=engine_of(module_sessions), clock=clock)
    people.add("ann@example.net")
    source_id = bind(site, people, interval=3600)

    def job() -> None:
        ROSTER_SYNC.run(JobContext(world, clock()))

    job()
    assert "ann@example.net" in roster(site)
    people.add("ben@example.net")
    clock.advance(minutes=30)
    job()
    assert "ben@example.net" not in roster(site)  # not due yet
    clock.advance(minutes=31)
    job()
    assert "ben@example.net" in roster(site)
    assert stored(site, source_id).last_sync_at == clock.now
    with site.sessions.begin() as s:
        sources.save(s, site.mlist(), MemberRole.member, {"interval": "0"})
    people.add("cat@example.net")
    clock.advance(timedelta(days=1))
    job()
    assert "cat@example.net" not in roster(site)  # on demand only


def test_removing_the_list_removes_its_source_and_a_hand_removal_its_mark(
    site: Site, people: People, workflow: WorkflowSettings
) -> None:
    from mtaplugin.model import RosterSourceMember

    people.add("ann@example.net")
    people.add("ben@example.net")
    source_id = bind(site, people)
    run(site, source_id, workflow)
    with site.sessions.begin() as s:
        members.remove(s, lists.get(s, site.address), "ann@example.net", MemberRole.member)
    with site.sessions() as s:
        marks = s.scalars(
            select(RosterSourceMember).where(RosterSourceMember.source_id == source_id)
        ).all()
        assert len(marks) == 1
    with site.sessions.begin() as s:
        lists.remove(s, site.address)
    with site.sessions() as s:
        assert s.get(RosterSource, source_id) is None
        assert not s.scalars(
            select(RosterSourceMember).where(RosterSourceMember.source_id == source_id)
        ).all()
