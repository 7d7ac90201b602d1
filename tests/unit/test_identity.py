"""mtaplugin.mailauth.identity: what backs the From: address."""

from __future__ import annotations

import pytest

from mtaplugin.mailauth.dmarc import aligned, organizational_domain
from mtaplugin.mailauth.identity import AuthenticationPolicy, identify
from mtaplugin.posting.envelope import Envelope, Post

TRUST = AuthenticationPolicy(trusted_authserv_ids=frozenset({"mx.lists.test"}))


def post(sender: str, *auth_results: str) -> Post:
    lines = [f"From: {sender}", "Subject: x"]
    lines += [f"Authentication-Results: {a}" for a in auth_results]
    return Post(("\r\n".join(lines) + "\r\n\r\nbody\r\n").encode())


@pytest.mark.parametrize(
    ("domain", "org"),
    [
        ("mail.example.co.uk", "example.co.uk"),
        ("Example.COM.", "example.com"),
        ("a.b.example.org", "example.org"),
    ],
)
def test_organizational_domain(domain: str, org: str):
    assert organizational_domain(domain) == org


def test_alignment_is_relaxed():
    assert aligned("mail.example.com", "example.com")
    assert aligned("example.com", "lists.example.com")
    assert not aligned("example.net", "example.com")
    assert not aligned("", "example.com")
    assert aligned("Mail.Example.com.", "example.com", strict=False)
    assert not aligned("mail.example.com", "example.com", strict=True)
    assert aligned("EXAMPLE.com", "example.com.", strict=True)


def test_aligned_dkim_pass_from_a_trusted_verifier():
    p = post(
        "Ann <ann@example.com>", "mx.lists.test; dkim=pass header.d=mail.example.com header.s=s1"
    )
    ident = identify(p, Envelope(), TRUST)
    assert ident.authenticated and ident.signals == ("dkim:mail.example.com",)


def test_spf_and_dmarc_passes():
    p = post(
        "ann@example.com",
        "mx.lists.test; spf=pass smtp.mailfrom=bounces.example.com;"
        " dmarc=pass header.from=example.com",
    )
    assert identify(p, Envelope(), TRUST).signals == (
        "spf:bounces.example.com",
        "dmarc:example.com",
    )


@pytest.mark.parametrize(
    "header",
    [
        "evil.test; dkim=pass header.d=example.com",  # untrusted verifier
        "mx.lists.test; dkim=pass header.d=attacker.test",  # not aligned
        "mx.lists.test; dkim=fail header.d=example.com",  # not a pass
        "mx.lists.test; spf=pass smtp.mailfrom=attacker.test",
        "mx.lists.test; dmarc=pass header.from=other.example.com",
        "this is not ; an = authentication results header",
    ],
)
def test_what_does_not_count(header: str):
    assert not identify(post("ann@example.com", header), Envelope(), TRUST).authenticated


def test_nothing_is_trusted_by_default():
    p = post("ann@example.com", "mx.lists.test; dkim=pass header.d=example.com")
    assert not identify(p, Envelope(), AuthenticationPolicy()).authenticated


def test_smtp_auth_as_the_from_address():
    p = post("Ann@Example.com")
    assert identify(p, Envelope(auth_user="ann@example.com"), AuthenticationPolicy()).signals == (
        "sasl:ann@example.com",
    )
    assert not identify(p, Envelope(auth_user="bob"), AuthenticationPolicy()).authenticated
    trusting = AuthenticationPolicy(trust_sasl_senders=True)
    assert identify(p, Envelope(auth_user="bob"), trusting).signals == ("sasl:bob",)


def test_no_from_means_no_identity():
    p = Post(b"Subject: x\r\n\r\nbody\r\n")
    assert (
        identify(
            p, Envelope(auth_user="ann"), AuthenticationPolicy(trust_sasl_senders=True)
        ).address
        == ""
    )
