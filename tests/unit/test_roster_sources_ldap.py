"""Rosters from a real OpenLDAP (Debian's slapd, a private instance on 127.0.0.1 with its
own database: the ``ldap_server`` fixture), synced into lists on SQLite and PostgreSQL.

The acceptance: a list bound to an LDAP group gains a member when the group does, within
one sync, and keeps its members when the LDAP server is stopped (the sync says why)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.clock import ManualClock
from mtaplugin.enums import MemberRole
from mtaplugin.manage import lists, members
from mtaplugin.manage.subscriptions import WorkflowSettings
from mtaplugin.model import RosterSource
from mtaplugin.roster_sources import sources
from mtaplugin.roster_sources.sync import SyncReport, sync
from mtaplugin.testing.ldap import (
    GROUPS,
    MANAGER_DN,
    MANAGER_PASSWORD,
    PEOPLE,
    SMALL_DN,
    SMALL_PASSWORD,
    Directory,
    LdapServer,
    group_dn,
)
from tests.unit.sites import Roster, Site, make_site


@pytest.fixture
def site(module_sessions: sessionmaker[Session], module_db_url: str) -> Site:
    roster = Roster((("hand@example.com", MemberRole.member),))
    return make_site(module_sessions, roster, url=module_db_url)


@pytest.fixture
def directory(ldap_server: LdapServer) -> Directory:
    book = Directory(ldap_server)
    book.add_person("ann", "ann@example.net", "Ann Example")
    book.add_person("ben", "Ben@Example.NET", "Ben")
    book.add_person("cat", "cat@example.net")
    book.add_person("nomail", None)
    book.add_group("staff", "ann", "ben")
    return book


@pytest.fixture
def workflow() -> WorkflowSettings:
    return WorkflowSettings(clock=ManualClock(datetime(2026, 12, 4, 12, tzinfo=UTC)))


def bind(site: Site, server: LdapServer, **values: object) -> int:
    settings: dict[str, object] = {
        "kind": "ldap",
        "url": server.url,
        "bind_dn": MANAGER_DN,
        "bind_password": MANAGER_PASSWORD,
        "timeout": 3,
    }
    settings.update(values)
    with site.sessions.begin() as s:
        return sources.save(s, site.mlist(), MemberRole.member, settings).id


def roster(site: Site) -> set[str]:
    with site.sessions() as s:
        mlist = lists.get(s, site.address)
        return {a.email for _m, a in members.roster(s, mlist, MemberRole.member)}


def stored(site: Site, source_id: int) -> RosterSource:
    with site.sessions() as s:
        source = s.get_one(RosterSource, source_id)
        s.expunge(source)
        return source


def run(site: Site, source_id: int, workflow: WorkflowSettings, **flags: bool) -> SyncReport:
    return sync(site.sessions, source_id, workflow, **flags)


def test_a_list_bound_to_a_group_follows_it_and_survives_the_server_stopping(
    site: Site, ldap_server: LdapServer, directory: Directory, workflow: WorkflowSettings
) -> None:
    source_id = bind(site, ldap_server, group_dn=group_dn("staff"), name_attribute="cn")
    first = run(site, source_id, workflow)
    assert first.result == "ok", first.message
    assert roster(site) == {"hand@example.com", "ann@example.net", "ben@example.net"}
    directory.join("staff", "cat")
    second = run(site, source_id, workflow)
    assert second.added == ["cat@example.net"]
    assert "cat@example.net" in roster(site)
    directory.leave("staff", "ben")
    assert run(site, source_id, workflow).removed == ["ben@example.net"]
    directory.close()
    ldap_server.stop()
    down = run(site, source_id, workflow, force=True)
    assert down.result == "error" and ldap_server.url in down.message
    assert MANAGER_PASSWORD not in down.message
    assert roster(site) == {"hand@example.com", "ann@example.net", "cat@example.net"}
    source = stored(site, source_id)
    assert source.last_result == "error" and "cannot be reached" in source.last_message


def test_a_search_reads_every_entry_with_an_address(
    site: Site, ldap_server: LdapServer, directory: Directory, workflow: WorkflowSettings
) -> None:
    source_id = bind(site, ldap_server, base_dn=PEOPLE, ldap_filter="(objectClass=inetOrgPerson)")
    report = run(site, source_id, workflow)
    assert report.result == "ok", report.message
    assert sorted(report.added) == ["ann@example.net", "ben@example.net", "cat@example.net"]
    assert report.skipped == 1  # uid=nomail has no address


def test_a_search_reads_page_after_page(
    site: Site, ldap_server: LdapServer, directory: Directory, workflow: WorkflowSettings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    from mtaplugin.roster_sources import ldap

    monkeypatch.setattr(ldap, "PAGE", 1)
    source_id = bind(site, ldap_server, base_dn=PEOPLE, ldap_filter="(mail=*)")
    assert len(run(site, source_id, workflow).added) == 3


@pytest.mark.parametrize(
    ("values", "why"),
    [
        # more entries than the server lets this account read
        ({"base_dn": PEOPLE, "ldap_filter": "(mail=*)", "bind_dn": SMALL_DN,
          "bind_password": SMALL_PASSWORD}, "sizeLimitExceeded"),
        ({"base_dn": PEOPLE, "bind_password": "wrong-pw-123"}, "invalidCredentials"),
        ({"group_dn": f"cn=nosuch,{GROUPS}"}, "cn=nosuch"),
    ],
    ids=["truncated", "refused-bind", "missing-group"],
)  # fmt: skip
def test_a_sync_that_fails_says_why_hides_the_password_and_changes_nothing(
    site: Site,
    ldap_server: LdapServer,
    directory: Directory,
    workflow: WorkflowSettings,
    values: dict[str, str],
    why: str,
) -> None:
    report = run(site, bind(site, ldap_server, **values), workflow)
    assert report.result == "error" and why in report.message
    assert values.get("bind_password", MANAGER_PASSWORD) not in report.message
    assert roster(site) == {"hand@example.com"}


def test_a_posix_group_lists_uids_looked_up_under_the_base(
    site: Site, ldap_server: LdapServer, directory: Directory, workflow: WorkflowSettings
) -> None:
    directory.add_posix_group("unix", 5000, "ann", "cat", "ghost")
    source_id = bind(site, ldap_server, group_dn=group_dn("unix"), member_attribute="memberUid")
    refused = run(site, source_id, workflow)
    assert refused.result == "error" and "base_dn" in refused.message
    with site.sessions.begin() as s:
        sources.save(s, site.mlist(), MemberRole.member, {"base_dn": PEOPLE})
    report = run(site, source_id, workflow)
    assert report.result == "ok", report.message
    assert sorted(report.added) == ["ann@example.net", "cat@example.net"]
    assert report.skipped == 1  # uid "ghost" has no entry
