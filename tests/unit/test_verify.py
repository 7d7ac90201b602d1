"""mtaplugin.mailauth.verify: DKIM, SPF, DMARC and ARC of incoming posts, checked against a real
loopback DNS server, or believed from a trusted verifier's Authentication-Results."""

from __future__ import annotations

import authres
import dkim
import pytest

from mtaplugin.mailauth import signing
from mtaplugin.mailauth.identity import AuthenticationPolicy, identify
from mtaplugin.mailauth.resolver import Resolver
from mtaplugin.mailauth.results import AuthResults, DkimResult, read_trusted
from mtaplugin.mailauth.service import Deliverability, install
from mtaplugin.mailauth.signing import SigningKey, arc_seal, dkim_sign
from mtaplugin.mailauth.verify import check
from mtaplugin.testing.dns import DnsServer
from mtaplugin.vocabulary.envelope import Envelope, Post
from tests.unit.signed_post import signed_post

POST = signed_post()
HEADERS = ("from", "to", "subject", "date", "message-id")
CLIENT = "192.0.2.25"


@pytest.fixture(scope="module", autouse=True)
def installed() -> None:
    install()  # what the composition root does: SPF through our resolver


@pytest.fixture(scope="module")
def pem() -> str:
    return signing.generate_private_key()


@pytest.fixture
def world(dns_server: DnsServer, pem: str) -> DnsServer:
    """example.org: a DKIM key (selector s1), SPF for 192.0.2.0/24, DMARC p=reject."""
    z = dns_server.zone
    z.txt("s1._domainkey.example.org", signing.txt_value(pem))
    z.txt("s1._domainkey.mail.example.org", signing.txt_value(pem))
    z.txt("example.org", "v=spf1 ip4:192.0.2.0/24 -all")
    z.txt("bounces.example.org", "v=spf1 ip4:192.0.2.0/24 -all")
    z.txt("_dmarc.example.org", "v=DMARC1; p=reject")
    z.txt("other.example", "v=spf1 ip4:192.0.2.0/24 -all")
    return dns_server


@pytest.fixture
def r(world: DnsServer) -> Resolver:
    return world.resolver(timeout=0.5)


def signed(pem: str, domain: str = "example.org", raw: bytes = POST) -> bytes:
    return dkim_sign(raw, SigningKey(domain, "s1", pem.encode(), HEADERS))


def env(mail_from: str = "anne@example.org", client: str = CLIENT) -> Envelope:
    return Envelope(mail_from=mail_from, client_address=client, helo="mx.example.org")


def test_dkim_and_spf_pass_give_dmarc_pass(pem: str, r: Resolver):
    res = check(signed(pem), env(), r)
    assert res.dkim == (DkimResult("pass", "example.org", "s1"),)
    assert (res.spf, res.spf_domain, res.spf_scope) == ("pass", "example.org", "mailfrom")
    assert (res.dmarc, res.dmarc_policy) == ("pass", "reject")
    assert res.arc == "none" and res.source == ""
    assert res.signals == ("dkim:example.org", "spf:example.org", "dmarc:example.org")
    assert not res.temporary_failure


def test_the_header_is_a_parsable_authentication_results_value(pem: str, r: Resolver):
    value = check(signed(pem), env(), r).header("lists.example.com")
    parsed = authres.all_features().parse("Authentication-Results: " + value)
    assert parsed.authserv_id == "lists.example.com"
    got = {(str(x.method), str(x.result)) for x in parsed.results}
    assert got == {("dkim", "pass"), ("spf", "pass"), ("dmarc", "pass")}
    assert "header.d=example.org" in value and "header.s=s1" in value
    assert "smtp.mailfrom=anne@example.org" in value
    assert "header.from=example.org" in value and "policy.dmarc=reject" in value


def test_spf_fail_and_unsigned_post_fail_dmarc(r: Resolver):
    res = check(POST, env(client="203.0.113.5"), r)
    assert res.dkim == ()
    assert res.spf == "fail"
    assert res.dmarc == "fail"
    assert res.signals == ()
    assert "spf=fail" in res.header("lists.example.com")


def test_spf_pass_alone_aligned_relaxed_passes_dmarc(r: Resolver):
    res = check(POST, env(mail_from="bounce+x@bounces.example.org"), r)
    assert (res.spf, res.spf_domain) == ("pass", "bounces.example.org")
    assert res.dmarc == "pass"
    assert res.signals == ("spf:bounces.example.org", "dmarc:example.org")


def test_strict_alignment(world: DnsServer, pem: str):
    world.zone.txt("_dmarc.example.org", "v=DMARC1; p=quarantine; adkim=s; aspf=s")
    r = world.resolver(timeout=0.5)
    res = check(POST, env(mail_from="bounce@bounces.example.org"), r)
    assert res.spf == "pass" and res.dmarc == "fail"
    res = check(signed(pem, "mail.example.org"), env(mail_from="", client="203.0.113.5"), r)
    assert res.dkim[0].result == "pass" and res.dmarc == "fail"
    assert res.dmarc_policy == "quarantine"


def test_unaligned_pass_does_not_count(pem: str, r: Resolver):
    res = check(POST, env(mail_from="someone@other.example"), r)
    assert res.spf == "pass"
    assert res.dmarc == "fail"
    assert res.signals == ()


def test_tampered_signature_fails_and_missing_key_is_permerror(pem: str, r: Resolver):
    tampered = signed(pem).replace(b"Hello members", b"Buy now")
    res = check(tampered, env(client="203.0.113.5"), r)
    assert res.dkim[0].result == "fail"
    nokey = dkim_sign(POST, SigningKey("example.org", "gone", pem.encode(), HEADERS))
    res = check(nokey, env(client="203.0.113.5"), r)
    assert res.dkim[0].result == "permerror"


def test_dns_failures_are_temperror(pem: str, world: DnsServer):
    world.zone.servfail()
    r = world.resolver(timeout=0.3)
    res = check(signed(pem), env(), r)
    assert res.dkim[0].result == "temperror"
    assert res.spf == "temperror"
    assert res.dmarc == "temperror"
    assert res.temporary_failure
    assert "dmarc=temperror" in res.header("lists.example.com")


def test_no_dmarc_record_is_none(dns_server: DnsServer):
    res = check(POST, env(mail_from="x@nodmarc.example"), dns_server.resolver(timeout=0.5))
    assert (res.spf, res.dmarc) == ("none", "none")


def test_arc_chain_of_the_incoming_post_is_validated(pem: str, world: DnsServer, r: Resolver):
    relay_pem = signing.generate_private_key(bits=1024)
    world.zone.txt("hop._domainkey.relay.example.net", signing.txt_value(relay_pem))
    relay = SigningKey("relay.example.net", "hop", relay_pem.encode(), HEADERS)
    sealed = arc_seal(signed(pem), relay, "relay.example.net", "relay.example.net; dkim=pass")
    res = check(sealed, env(), r)
    assert res.arc == "pass"
    broken = sealed.replace(b"Hello members", b"Changed")
    assert check(broken, env(), r).arc == "fail"


def test_arc_then_list_seal_gives_cv_pass_after_two_hops(pem: str, world: DnsServer):
    """relay seals (i=1) -> the list checks the chain on receipt, decorates, seals (i=2)."""
    r = world.resolver(timeout=0.5)
    relay_pem = signing.generate_private_key(bits=1024)
    world.zone.txt("hop._domainkey.relay.example.net", signing.txt_value(relay_pem))
    world.zone.txt("s1._domainkey.lists.example.com", signing.txt_value(pem))
    relay = SigningKey("relay.example.net", "hop", relay_pem.encode(), HEADERS)
    incoming = arc_seal(signed(pem), relay, "relay.example.net", "relay.example.net; spf=pass")
    results = check(incoming, env(), r)
    decorated = incoming + b"-- \r\nteam mailing list\r\n"
    mine = SigningKey("lists.example.com", "s1", pem.encode(), HEADERS)
    out = dkim_sign(
        arc_seal(decorated, mine, "lists.example.com", results.header("lists.example.com")), mine
    )
    cv, sets, reason = dkim.arc_verify(out, dnsfunc=r.dkim_dnsfunc)
    assert cv == b"pass", reason
    assert [s["cv"] for s in sets] == [b"pass", b"none"]
    assert b"arc=pass" in sets[0]["aar-value"]
    assert dkim.verify(out, dnsfunc=r.dkim_dnsfunc)


# --- trusted verifiers ----------------------------------------------------------------------
def test_trusted_authentication_results_are_read_as_they_are():
    ar = (
        b"Authentication-Results: mx.example.net; dkim=pass header.d=example.org header.s=k;"
        b" spf=fail smtp.mailfrom=anne@example.org; dmarc=pass header.from=example.org"
        b" policy.dmarc=reject; arc=none; iprev=pass smtp.remote-ip=192.0.2.1\r\n"
    )
    other = b"Authentication-Results: evil.example; dkim=pass header.d=example.org\r\n"
    res = read_trusted(Post(other + ar + POST), "example.org", frozenset({"mx.example.net"}))
    assert res is not None and res.source == "mx.example.net"
    assert res.dkim == (DkimResult("pass", "example.org", "k"),)
    assert (res.spf, res.spf_domain) == ("fail", "example.org")
    assert (res.dmarc, res.dmarc_policy) == ("pass", "reject")
    assert res.signals == ("dkim:example.org", "dmarc:example.org")
    assert "iprev=pass" in res.header("lists.example.com")


def test_our_own_checks_never_read_the_posts_authentication_results(
    dns_server: DnsServer, r: Resolver
):
    """M1: with verify_incoming, a header of a trusted authserv-id in the post (a forgery
    on top, where the local verifier's would be) does not take the place of the checks."""
    forged = b"Authentication-Results: mx.example.net; dkim=pass header.d=example.org\r\n"
    service = Deliverability(r, verify_incoming=True, trusted_authserv_ids=["mx.example.net"])
    res = service.authenticate(Post(forged + POST), env(client="203.0.113.5"))
    assert res is not None
    assert res.source == "" and res.dkim == () and res.dmarc == "fail"
    assert res.signals == ()
    assert dns_server.zone.queries  # the checks ran
    # Off, the same header on top is the trusted verifier's (docs/security.md: the MTA
    # must remove such headers arriving from outside).
    believed = Deliverability(r, trusted_authserv_ids=["mx.example.net"]).authenticate(
        Post(forged + POST), env()
    )
    assert believed is not None and believed.source == "mx.example.net"


def test_identity_from_results(pem: str, r: Resolver):
    raw = signed(pem)
    post = Post(raw)
    res = check(raw, env(client="203.0.113.5"), r)
    who = identify(post, env(), AuthenticationPolicy(), verified=res.signals)
    assert who.address == "anne@example.org"
    assert who.signals == ("dkim:example.org", "dmarc:example.org")
    assert who.authenticated
    nobody = identify(Post(POST), env(), AuthenticationPolicy(), AuthResults().signals)
    assert not nobody.authenticated
    sasl = Envelope(auth_user="anne@example.org")
    assert identify(Post(POST), sasl, AuthenticationPolicy(), AuthResults().signals).signals == (
        "sasl:anne@example.org",
    )


def test_one_reader_for_the_results_and_the_identity():
    """The SPF result DMARC judges is MAIL FROM's: a HELO result after it does not replace
    it; the identity is backed by exactly what the recorded results say."""
    ar = (
        b"Authentication-Results: mx.example.net; spf=pass smtp.mailfrom=anne@example.org;"
        b" spf=fail smtp.helo=mx.elsewhere.example; dkim=fail header.d=example.org\r\n"
    )
    post = Post(ar + POST)
    res = read_trusted(post, "example.org", frozenset({"mx.example.net"}))
    assert res is not None
    assert (res.spf, res.spf_domain, res.spf_scope) == ("pass", "example.org", "mailfrom")
    assert res.signals == ("spf:example.org",)
    policy = AuthenticationPolicy(trusted_authserv_ids=frozenset({"mx.example.net"}))
    assert identify(post, env(), policy).signals == res.signals
    assert read_trusted(Post(POST), "example.org", frozenset({"mx.example.net"})) is None
