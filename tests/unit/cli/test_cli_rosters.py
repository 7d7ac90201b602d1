"""``mtaplugin lists source-set|source|sync|source-remove`` against a real OpenLDAP (the
``ldap_server`` fixture): the dry run prints what would change, the sync does it, the
password is read from standard input and never printed, a stopped server is an error
that changes nothing."""

from __future__ import annotations

import io

import pytest

from mtaplugin.testing.ldap import MANAGER_DN, MANAGER_PASSWORD, Directory, LdapServer, group_dn
from tests.unit.cli.conftest import Run


def test_sync_a_list_from_an_ldap_group(
    run: Run, team: str, ldap_server: LdapServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    book = Directory(ldap_server)
    book.add_person("ann", "ann@example.net")
    book.add_person("ben", "ben@example.net")
    book.add_group("staff", "ann")
    assert run("members", "add", team, "hand@example.org").code == 0
    monkeypatch.setattr("sys.stdin", io.StringIO(MANAGER_PASSWORD + "\n"))
    r = run(
        "lists", "source-set", team, "kind=ldap", f"url={ldap_server.url}",
        f"bind_dn={MANAGER_DN}", f"group_dn={group_dn('staff')}", "--bind-password-stdin",
    )  # fmt: skip
    assert r.code == 0, r.err
    refused = run("lists", "source-set", team, f"bind_password={MANAGER_PASSWORD}")
    assert refused.code != 0 and "standard input" in refused.err
    shown = run("lists", "source", team)
    assert "bind_password_set: True" in shown.out and MANAGER_PASSWORD not in shown.out

    dry = run("lists", "sync", team, "--dry-run")
    assert dry.code == 0 and "+ ann@example.net" in dry.out and "would change" in dry.out
    assert "ann@example.net" not in run("members", "list", team).out
    done = run("lists", "sync", team)
    assert done.code == 0 and "+ ann@example.net" in done.out
    book.join("staff", "ben")
    book.leave("staff", "ann")
    again = run("lists", "sync", team)
    assert "+ ben@example.net" in again.out and "- ann@example.net" in again.out
    listed = run("members", "list", team).out
    assert "ben@example.net" in listed and "hand@example.org" in listed
    assert "ann@example.net" not in listed

    book.close()
    ldap_server.stop()
    down = run("lists", "sync", team)
    assert down.code == 1 and "error" in down.out and MANAGER_PASSWORD not in down.out
    assert "ben@example.net" in run("members", "list", team).out
    assert run("lists", "source-remove", team).code == 0
    assert run("lists", "sync", team).code == 1
    assert "ben@example.net" in run("members", "list", team).out
