"""mtaplugin.mailauth.dmarc: RFC 7489 policy discovery over a real loopback DNS server, and
Mailman's mitigation decision."""

from __future__ import annotations

import pytest

from mtaplugin.enums import DMARCMitigateAction
from mtaplugin.errors import TryLater
from mtaplugin.mailauth.dmarc import DmarcPolicy, lookup_policy, parse_record, should_mitigate
from mtaplugin.mailauth.resolver import Resolver
from mtaplugin.model import MailingList
from mtaplugin.testing.dns import DnsServer


def mitigates(
    policy: DmarcPolicy | None,
    action: str,
    unconditionally: bool,
    dmarc_addresses: list[str],
    sender: str,
) -> bool:
    """The one mitigation decision, for a list with these settings."""
    mlist = MailingList(
        dmarc_mitigate_action=DMARCMitigateAction(action),
        dmarc_mitigate_unconditionally=unconditionally,
        dmarc_addresses=dmarc_addresses,
        anonymous_list=False,
    )
    return should_mitigate(mlist, policy, sender)


@pytest.fixture
def r(dns_server: DnsServer) -> Resolver:
    return dns_server.resolver(timeout=0.4)


def test_record_at_the_from_domain(dns_server: DnsServer, r: Resolver):
    dns_server.zone.txt("_dmarc.example.org", "v=DMARC1; p=reject; sp=none; rua=mailto:d@x")
    p = lookup_policy(r, "Example.ORG")
    assert p == DmarcPolicy(
        "example.org",
        "example.org",
        "reject",
        "none",
        True,
        "example.org",
        "v=DMARC1; p=reject; sp=none; rua=mailto:d@x",
    )
    assert p.strict


def test_subdomain_falls_back_to_the_organizational_domain_and_its_sp(
    dns_server: DnsServer, r: Resolver
):
    dns_server.zone.txt("_dmarc.example.co.uk", "v=DMARC1; p=none; sp=quarantine")
    p = lookup_policy(r, "mail.news.example.co.uk")
    assert (p.domain, p.org_domain, p.record_domain) == (
        "mail.news.example.co.uk",
        "example.co.uk",
        "example.co.uk",
    )
    assert (p.policy, p.subdomain_policy, p.found) == ("quarantine", "quarantine", True)
    # The org domain itself gets p=, not sp=.
    assert lookup_policy(r, "example.co.uk").policy == "none"
    # Only two names were asked: no walk up the labels.
    asked = [q for q, _t in dns_server.zone.queries]
    assert "_dmarc.news.example.co.uk." not in asked
    assert "_dmarc.co.uk." not in asked


def test_without_sp_the_subdomain_gets_p(dns_server: DnsServer, r: Resolver):
    dns_server.zone.txt("_dmarc.example.com", "v=DMARC1; p=reject")
    p = lookup_policy(r, "lists.example.com")
    assert (p.policy, p.subdomain_policy) == ("reject", "reject")


def test_a_record_at_the_subdomain_wins(dns_server: DnsServer, r: Resolver):
    dns_server.zone.txt("_dmarc.example.com", "v=DMARC1; p=reject")
    dns_server.zone.txt("_dmarc.lists.example.com", "v=DMARC1; p=none")
    assert lookup_policy(r, "lists.example.com").policy == "none"


def test_two_dmarc_records_mean_no_policy_and_no_fallback(dns_server: DnsServer, r: Resolver):
    dns_server.zone.txt("_dmarc.example.com", "v=DMARC1; p=reject")
    dns_server.zone.txt("_dmarc.sub.example.com", "v=DMARC1; p=reject", "v=DMARC1; p=none")
    p = lookup_policy(r, "sub.example.com")
    assert not p.found and p.policy == "" and not p.strict
    assert ("_dmarc.example.com.", "TXT") not in dns_server.zone.queries


def test_other_txt_records_are_ignored(dns_server: DnsServer, r: Resolver):
    dns_server.zone.txt("_dmarc.example.com", "v=spf1 -all", "v=DMARC1;p=quarantine", "hello")
    p = lookup_policy(r, "example.com")
    assert p.found and p.policy == "quarantine"


def test_no_record_anywhere(dns_server: DnsServer, r: Resolver):
    p = lookup_policy(r, "a.b.example.net")
    assert p == DmarcPolicy("a.b.example.net", "example.net", "", "", False)
    assert not p.strict


def test_invalid_policy_without_rua_is_no_record(dns_server: DnsServer, r: Resolver):
    dns_server.zone.txt("_dmarc.example.com", "v=DMARC1; p=bounce")
    dns_server.zone.txt("_dmarc.example.net", "v=DMARC1; p=bounce; rua=mailto:a@example.net")
    assert not lookup_policy(r, "example.com").found
    p = lookup_policy(r, "example.net")
    assert p.found and p.policy == "none"


def test_servfail_is_try_later_or_mitigation(dns_server: DnsServer, r: Resolver):
    dns_server.zone.txt("_dmarc.example.org", "v=DMARC1; p=none")
    dns_server.zone.servfail("_dmarc.example.org")
    with pytest.raises(TryLater):
        lookup_policy(r, "example.org")
    p = lookup_policy(r, "example.org", on_failure="mitigate")
    assert p.dns_error and p.strict and not p.found
    assert mitigates(p, "munge_from", False, [], "anne@example.org")


def test_timeout_is_try_later(dns_server: DnsServer, r: Resolver):
    dns_server.zone.drop("_dmarc.sub.example.org")
    with pytest.raises(TryLater):
        lookup_policy(r, "sub.example.org")


def test_failure_at_the_org_domain_is_try_later_too(dns_server: DnsServer, r: Resolver):
    dns_server.zone.servfail("_dmarc.example.org")
    with pytest.raises(TryLater):
        lookup_policy(r, "sub.example.org")


def test_cached_policy_follows_the_ttl(dns_server: DnsServer):
    now = [0.0]
    r = Resolver(dns_server.nameservers, dns_server.port, timeout=0.4, clock=lambda: now[0])
    dns_server.zone.txt("_dmarc.example.org", "v=DMARC1; p=none", ttl=30)
    assert lookup_policy(r, "example.org").policy == "none"
    dns_server.zone.txt("_dmarc.example.org", "v=DMARC1; p=reject", ttl=30)
    now[0] += 10
    assert lookup_policy(r, "example.org").policy == "none"
    now[0] += 21
    assert lookup_policy(r, "example.org").policy == "reject"


def test_parse_record():
    assert parse_record("v=DMARC1; p=reject; pct=50") == {"v": "DMARC1", "p": "reject", "pct": "50"}
    assert parse_record("v=DMARC1") == {"v": "DMARC1"}
    assert parse_record("v=DMARC2; p=reject") is None
    assert parse_record("p=reject; v=DMARC1") is None
    assert parse_record("v=DMARC10; p=reject") is None


# --- should_mitigate --------------------------------------------------------------------
REJECT = DmarcPolicy("example.org", "example.org", "reject", "reject", True)
QUARANTINE = DmarcPolicy("example.org", "example.org", "quarantine", "quarantine", True)
NONE = DmarcPolicy("example.org", "example.org", "none", "none", True)
ABSENT = DmarcPolicy("example.org", "example.org", "", "", False)


@pytest.mark.parametrize("action", ["munge_from", "wrap_message", "reject", "discard"])
def test_strict_policies_are_mitigated(action: str):
    assert mitigates(REJECT, action, False, [], "a@example.org")
    assert mitigates(QUARANTINE, action, False, [], "a@example.org")
    assert not mitigates(NONE, action, False, [], "a@example.org")
    assert not mitigates(ABSENT, action, False, [], "a@example.org")
    assert not mitigates(None, action, False, [], "a@example.org")


def test_no_mitigation_never_mitigates():
    assert not mitigates(REJECT, "no_mitigation", True, ["a@example.org"], "a@example.org")
    assert not mitigates(REJECT, DMARCMitigateAction.no_mitigation, True, [], "a@x")
    assert mitigates(REJECT, DMARCMitigateAction.munge_from, False, [], "a@x")


def test_unconditionally_applies_to_munge_and_wrap_only():
    assert mitigates(NONE, "munge_from", True, [], "a@example.org")
    assert mitigates(ABSENT, "wrap_message", True, [], "a@example.org")
    assert not mitigates(NONE, "reject", True, [], "a@example.org")
    assert not mitigates(NONE, "discard", True, [], "a@example.org")


def test_dmarc_addresses_exact_or_regex():
    addrs = ["Boss@Example.ORG", "^.*@partner\\.example$", "^[bad regex", ""]
    assert mitigates(NONE, "reject", False, addrs, "boss@example.org")
    assert mitigates(ABSENT, "munge_from", False, addrs, "Someone@Partner.example")
    assert not mitigates(NONE, "munge_from", False, addrs, "other@example.org")
    assert not mitigates(NONE, "munge_from", False, addrs, "x@partner.example.com")
