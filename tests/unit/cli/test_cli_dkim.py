"""``mtaplugin dkim keygen/show/remove`` on SQLite and PostgreSQL; the printed record
is what dkimpy needs to verify the domain's signatures."""

from __future__ import annotations

import re

import dkim
import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.mailauth.signing import dkim_sign, key_for
from mtaplugin.model import DkimKey
from mtaplugin.testing.dns import DnsServer


def keys(db: sessionmaker[Session]) -> list[tuple[str, str]]:
    with db() as s:
        rows = s.scalars(select(DkimKey).order_by(DkimKey.id))
        return [(k.domain.mail_host, k.selector) for k in rows]


def zone_value(out: str) -> str:
    """The TXT value from the printed zone-file line, its strings joined."""
    line = next(x for x in out.splitlines() if "IN TXT" in x)
    return "".join(re.findall(r'"([^"]*)"', line))


POST = b"From: anne@example.org\r\nTo: team@lists.test\r\nSubject: hi\r\n\r\nbody\r\n"


def test_keygen_prints_the_record_that_verifies(run, db, dns_server: DnsServer):
    assert run("domains", "add", "Lists.Test").code == 0
    r = run("dkim", "keygen", "lists.test", "--selector", "S2026", "--activate")
    assert r.code == 0, r.err
    assert "s2026._domainkey.lists.test. IN TXT" in r.out
    value = zone_value(r.out)
    assert value.startswith("v=DKIM1; k=rsa; p=")
    assert f"value: {value}" in r.out
    assert keys(db) == [("lists.test", "s2026")]
    dns_server.zone.txt("s2026._domainkey.lists.test", value)
    with db() as s:
        key = key_for(s, "lists.test")
    assert key is not None
    assert dkim.verify(dkim_sign(POST, key), dnsfunc=dns_server.resolver().dkim_dnsfunc)
    # 2048 bits by default: the modulus in p= makes a value longer than one string
    assert len(value) > 255


def test_keygen_default_selector_bits_and_ed25519(run, db):
    assert run("domains", "add", "a.test").code == 0
    assert run("domains", "add", "b.test").code == 0
    r = run("dkim", "keygen", "a.test", "--bits", "1024")
    assert r.code == 0, r.err
    assert re.search(r"mtaplugin\d{6}\._domainkey\.a\.test\. IN TXT", r.out)
    assert len(zone_value(r.out)) < 255  # 1024 bits
    r = run("dkim", "keygen", "b.test", "--algorithm", "ed25519", "--selector", "ed")
    assert r.code == 0, r.err
    assert zone_value(r.out).startswith("v=DKIM1; k=ed25519; p=")


def test_show_and_remove(run, db):
    assert run("domains", "add", "lists.test").code == 0
    made = run("dkim", "keygen", "lists.test", "--selector", "one", "--headers", "From:Subject")
    shown = run("dkim", "show", "LISTS.test")
    assert shown.code == 0
    assert "selector:  one" in shown.out
    assert "algorithm: rsa" in shown.out
    assert "signs:     From:Subject" in shown.out
    assert zone_value(shown.out) == zone_value(made.out)
    gone = run("dkim", "remove", "lists.test", "--yes")
    assert gone.code == 0 and "lists.test" in gone.out
    assert keys(db) == []
    again = run("dkim", "show", "lists.test")
    assert again.code == 1 and "lists.test has no DKIM key" in again.err


def test_replace_needs_the_flag(run, db):
    assert run("domains", "add", "lists.test").code == 0
    first = run("dkim", "keygen", "lists.test", "--selector", "one")
    refused = run("dkim", "keygen", "lists.test", "--selector", "two")
    assert refused.code == 1
    assert "mail_host" in refused.err and "--replace" in refused.err
    assert keys(db) == [("lists.test", "one")]
    assert zone_value(run("dkim", "show", "lists.test").out) == zone_value(first.out)
    replaced = run("dkim", "keygen", "lists.test", "--selector", "two", "--replace")
    assert replaced.code == 0
    # "one" never signed: it is dropped, not kept for a rollover
    assert keys(db) == [("lists.test", "two")]
    assert zone_value(replaced.out) != zone_value(first.out)


@pytest.mark.parametrize(
    ("argv", "field"),
    [
        (("dkim", "keygen", "nowhere.test"), "mail_host"),
        (("dkim", "show", "nowhere.test"), "mail_host"),
        (("dkim", "remove", "nowhere.test", "--yes"), "mail_host"),
        (("dkim", "keygen", "lists.test", "--selector", "bad selector"), "selector"),
        (("dkim", "keygen", "lists.test", "--bits", "512"), "bits"),
        (("dkim", "keygen", "lists.test", "--headers", "Subject:To"), "headers"),
        (("dkim", "keygen", "lists.test", "--headers", "From:Received"), "headers"),
        (("dkim", "keygen", "lists.test", "--headers", "From:X Y"), "headers"),
    ],
)
def test_errors_name_the_field_and_change_nothing(run, db, argv: tuple[str, ...], field: str):
    assert run("domains", "add", "lists.test").code == 0
    r = run(*argv)
    assert r.code == 1
    assert r.err.startswith(f"mtaplugin: error: {field}: ")
    if "nowhere.test" in argv:
        assert "nowhere.test" in r.err
    with db() as s:
        assert s.scalar(select(func.count()).select_from(DkimKey)) == 0


def test_removing_the_domain_removes_its_key(run, db):
    assert run("domains", "add", "lists.test").code == 0
    assert run("dkim", "keygen", "lists.test", "--bits", "1024").code == 0
    assert run("domains", "remove", "lists.test", "--yes").code == 0
    with db() as s:
        assert s.scalar(select(func.count()).select_from(DkimKey)) == 0


def test_check_tells_whether_dns_publishes_the_key(
    run, db, dns_server: DnsServer, monkeypatch: pytest.MonkeyPatch
):
    for k, v in {**dns_server.environ(), "MTAPLUGIN_DNS_TIMEOUT": "3"}.items():
        monkeypatch.setenv(k, v)
    assert run("domains", "add", "lists.test").code == 0
    made = run("dkim", "keygen", "lists.test", "--selector", "sel", "--bits", "1024")
    assert "signing:   not yet" in made.out and "dkim check lists.test" in made.out

    def signs() -> bool:
        with db() as s:
            return key_for(s, "lists.test") is not None

    missing = run("dkim", "check", "lists.test")
    assert missing.code == 1 and "no TXT record at sel._domainkey.lists.test" in missing.err
    assert "does not sign until DNS publishes it" in missing.err
    dns_server.zone.dkim("lists.test", "sel", "v=DKIM1; k=rsa; p=MIGfMA0GCSqGSIb3DQEBAQUAA")
    other = run("dkim", "check", "lists.test")
    assert other.code == 1 and "publishes another key" in other.err
    assert not signs()
    assert "signing:   not yet" in run("dkim", "show", "lists.test").out
    dns_server.zone.txt("sel._domainkey.lists.test", zone_value(made.out))
    ok = run("dkim", "check", "lists.test")
    assert ok.code == 0 and "sel._domainkey.lists.test publishes this key" in ok.out
    assert "signs from now on" in ok.out
    assert signs()
    assert keys(db) == [("lists.test", "sel")]
    assert "signing:   yes, since" in run("dkim", "show", "lists.test").out
    # a rollover: the new key waits, the old one signs until DNS publishes the new one
    rolled = run("dkim", "keygen", "lists.test", "--bits", "1024", "--replace")
    assert rolled.code == 0, rolled.err
    assert keys(db)[0] == ("lists.test", "sel") and len(keys(db)) == 2
    new_selector = keys(db)[1][1]
    with db() as s:
        assert key_for(s, "lists.test").selector == "sel"  # type: ignore[union-attr]
    assert run("dkim", "check", "lists.test").code == 1
    dns_server.zone.txt(f"{new_selector}._domainkey.lists.test", zone_value(rolled.out))
    assert run("dkim", "check", "lists.test").code == 0
    assert keys(db) == [("lists.test", new_selector)]
    with db() as s:
        assert key_for(s, "lists.test").selector == new_selector  # type: ignore[union-attr]
    dns_server.zone.servfail()
    down = run("dkim", "check", "lists.test")
    assert down.code == 1 and "SERVFAIL" in down.err
    assert signs()  # an active key is not switched off by a DNS failure


def test_a_new_key_does_not_sign_until_activated(run, db):
    assert run("domains", "add", "a.test").code == 0
    assert run("domains", "add", "b.test").code == 0
    assert run("dkim", "keygen", "a.test", "--bits", "1024").code == 0
    now = run("dkim", "keygen", "b.test", "--bits", "1024", "--activate")
    assert now.code == 0 and "signing:   yes, since" in now.out
    with db() as s:
        assert key_for(s, "a.test") is None
        assert key_for(s, "b.test") is not None
    # a replacement waits too, and the key it replaces signs meanwhile (a rollover)
    with db() as s:
        old = key_for(s, "b.test")
    assert old is not None
    same = run("dkim", "keygen", "b.test", "--selector", old.selector, "--replace")
    assert same.code == 1 and "selector" in same.err  # both records must be publishable
    new = run("dkim", "keygen", "b.test", "--bits", "1024", "--replace")
    assert new.code == 0 and f"until then the key with selector {old.selector} signs" in new.out
    with db() as s:
        still = key_for(s, "b.test")
    assert still is not None and still.selector == old.selector
    assert len(keys(db)) == 3  # a.test's, and b.test's two


def test_an_ed25519_key_beside_the_rsa_key(run, db):
    assert run("domains", "add", "both.test").code == 0
    assert run("dkim", "keygen", "both.test", "--selector", "r1", "--activate").code == 0
    added = run("dkim", "keygen", "both.test", "--algorithm", "ed25519", "--selector", "e1")
    assert added.code == 0, added.err
    assert zone_value(added.out).startswith("v=DKIM1; k=ed25519; p=")
    assert keys(db) == [("both.test", "r1"), ("both.test", "e1")]
    shown = run("dkim", "show", "both.test")
    assert "selector:  r1" in shown.out and "selector:  e1" in shown.out
    assert "algorithm: rsa" in shown.out and "algorithm: ed25519" in shown.out
    # a second key of one algorithm still needs --replace
    again = run("dkim", "keygen", "both.test", "--algorithm", "ed25519", "--selector", "e2")
    assert again.code == 1 and "--replace" in again.err
