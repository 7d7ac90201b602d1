"""The mail admin's path, as processes: ``mtaplugin dkim keygen`` prints the record, the
record goes into DNS (a real loopback server), and what mtaplugin signs and seals with the
stored key verifies with dkimpy, through the resolver that the [dns] settings describe."""

from __future__ import annotations

import re

import dkim
import pytest
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin import config, wiring
from mtaplugin.errors import TryLater
from mtaplugin.mailauth.dmarc import lookup_policy
from mtaplugin.mailauth.signing import arc_seal, dkim_sign, key_for
from mtaplugin.mailauth.verify import check
from mtaplugin.testing.dns import DnsServer
from mtaplugin.testing.mailauth import (
    lab_dns,  # noqa: F401  (a pytest fixture)
    publish_domain_key,
)
from mtaplugin.vocabulary.envelope import Envelope
from tests.helpers import run_mtaplugin

POST = (
    b"From: Anne <anne@example.org>\r\nTo: team@lists.test\r\nSubject: hi\r\n"
    b"Message-ID: <k@example.org>\r\nDate: Thu, 03 Dec 2026 10:00:00 +0000\r\n\r\nhello\r\n"
)

mtaplugin = run_mtaplugin  # (the name the tests below read best with)


def test_keygen_record_published_verifies_signature_and_seal(
    db_url: str, sessions: sessionmaker[Session], dns_server: DnsServer
):
    env = {"MTAPLUGIN_DATABASE_URL": db_url, **dns_server.environ()}
    assert mtaplugin("domains", "add", "lists.test", env=env).returncode == 0
    made = mtaplugin("dkim", "keygen", "lists.test", "--selector", "ml1", env=env)
    assert made.returncode == 0, made.stderr
    line = next(x for x in made.stdout.splitlines() if " IN TXT " in x)
    assert line.startswith("ml1._domainkey.lists.test. IN TXT ")
    strings = re.findall(r'"([^"]*)"', line)
    assert all(len(s) <= 255 for s in strings) and len(strings) >= 2
    with sessions() as s:
        assert key_for(s, "lists.test") is None  # it signs nothing before DNS publishes it
    dns_server.zone.txt("ml1._domainkey.lists.test", "".join(strings))
    checked = mtaplugin("dkim", "check", "lists.test", env=env)
    assert checked.returncode == 0 and "signs from now on" in checked.stdout, checked.stderr

    settings = config.load(None, environ=env)
    resolver = wiring.resolver(settings)
    assert resolver.port == dns_server.port
    with sessions() as s:
        key = key_for(s, "lists.test")
        # the helper for end-to-end tests publishes the same value
        assert publish_domain_key(dns_server.zone, s, "lists.test") == "".join(strings)
    assert key is not None
    results = check(POST, Envelope(mail_from="anne@example.org"), resolver)
    out = dkim_sign(arc_seal(POST, key, "lists.test", results.header("lists.test")), key)
    assert dkim.verify(out, dnsfunc=resolver.dkim_dnsfunc)
    assert dkim.arc_verify(out, dnsfunc=resolver.dkim_dnsfunc)[0] == b"pass"

    unknown = mtaplugin("dkim", "keygen", "nowhere.test", env=env)
    assert unknown.returncode == 1
    assert "mail_host" in unknown.stderr and "nowhere.test" in unknown.stderr
    shown = mtaplugin("dkim", "show", "lists.test", env=env)
    assert shown.returncode == 0 and line in shown.stdout


def test_dns_down_is_try_later_for_the_dmarc_lookup(dns_server: DnsServer):
    env = {**dns_server.environ(), "MTAPLUGIN_DNS_TIMEOUT": "0.3"}
    resolver = wiring.resolver(config.load(None, environ=env))
    dns_server.zone.dmarc("example.org", "v=DMARC1; p=reject")
    assert lookup_policy(resolver, "example.org").policy == "reject"
    dns_server.zone.drop()
    with pytest.raises(TryLater):
        lookup_policy(resolver, "sub.example.org")
    dns_server.zone.heal()
    dns_server.zone.servfail()
    with pytest.raises(TryLater):
        lookup_policy(resolver, "other.example.org")
    mitigate = wiring.resolver(
        config.load(None, environ={**env, "MTAPLUGIN_DNS_ON_FAILURE": "mitigate"})
    )
    assert lookup_policy(mitigate, "other.example.org", on_failure="mitigate").dns_error


def test_the_end_to_end_fixture_serves_what_the_settings_ask(lab_dns: DnsServer):  # noqa: F811
    lab_dns.zone.clear()
    lab_dns.zone.dmarc("example.org", "v=DMARC1; p=quarantine")
    lab_dns.zone.spf("example.org", "v=spf1 -all")
    resolver = wiring.resolver(config.load(None, environ=lab_dns.environ()))
    assert lookup_policy(resolver, "news.example.org").policy == "quarantine"
    assert resolver.txt("example.org") == ["v=spf1 -all"]
    assert ("_dmarc.example.org.", "TXT") in lab_dns.zone.queries
