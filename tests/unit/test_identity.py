"""mtaplugin.mailauth.identity: what backs the From: address."""

from __future__ import annotations

import pytest

from mtaplugin.mailauth.dmarc import aligned, organizational_domain
from mtaplugin.mailauth.identity import AuthenticationPolicy, identify
from mtaplugin.mailauth.results import read_trusted
from mtaplugin.vocabulary.envelope import Envelope, Post

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
    as_ann = Envelope(auth_user="bob", mail_from="<ann@example.com>")
    assert identify(p, as_ann, trusting).signals == ("sasl:bob",)


def test_a_trusted_login_does_not_vouch_for_a_from_that_is_not_the_envelope_sender():
    """M2: Postfix's reject_sender_login_mismatch ties the login to MAIL FROM only; a
    mailbox user bob sending MAIL FROM <bob@...> with From: owner@... is not the owner."""
    p = post("owner@corp.example")
    trusting = AuthenticationPolicy(trust_sasl_senders=True)
    for mail_from in ("<bob@corp.example>", "", "<>"):
        bob = Envelope(auth_user="bob@corp.example", mail_from=mail_from)
        assert not identify(p, bob, trusting).authenticated, mail_from
    # the envelope sender alone, without a login, proves nothing either
    anyone = Envelope(mail_from="<owner@corp.example>")
    assert not identify(p, anyone, trusting).authenticated
    owner = Envelope(auth_user="bob@corp.example", mail_from="<Owner@Corp.example>")
    assert identify(p, owner, trusting).signals == ("sasl:bob@corp.example",)


# --- M1: only the topmost Authentication-Results are believed -----------------------------
FORGED = "mx.lists.test; dkim=pass header.d=corp.example; dmarc=pass header.from=corp.example"


def headers(*lines: str) -> Post:
    return Post(("\r\n".join([*lines, "Subject: x"]) + "\r\n\r\nbody\r\n").encode())


def test_a_trusted_header_below_a_received_is_never_believed():
    """The review's case: the local verifier's own header on top says dkim=none; the
    sender's forged one, of the same authserv-id, came in below the hops' Received:."""
    p = headers(
        "Authentication-Results: mx.lists.test; dkim=none",
        "Received: from attacker.test by mx.lists.test",
        f"Authentication-Results: {FORGED}",
        "From: owner@corp.example",
    )
    assert not identify(p, Envelope(), TRUST).authenticated
    assert read_trusted(p, "corp.example", TRUST.trusted_authserv_ids) is not None  # (the top)
    below_only = headers(
        "Received: from a by b", f"Authentication-Results: {FORGED}", "From: owner@corp.example"
    )
    assert read_trusted(below_only, "corp.example", TRUST.trusted_authserv_ids) is None


def test_after_the_queue_the_mtas_own_received_is_skipped_and_no_other():
    p = headers(
        "Received: from client by mx.lists.test (Postfix)",  # the local MTA's
        "Authentication-Results: mx.lists.test; dkim=pass header.d=corp.example",
        "Received: from relay.corp.example by mx.lists.test",
        f"Authentication-Results: {FORGED.replace('dkim=pass header.d=corp.example; ', '')}",
        "From: owner@corp.example",
    )
    assert not identify(p, Envelope(), TRUST).authenticated  # (a milter sees no Received:)
    after_queue = identify(p, Envelope(local_received=1), TRUST)
    assert after_queue.signals == ("dkim:corp.example",)  # not the dmarc=pass further down


def test_with_our_own_checks_no_header_of_the_post_is_read():
    p = post("owner@corp.example", FORGED)
    assert identify(p, Envelope(), TRUST).authenticated  # (checks off: the top is believed)
    assert not identify(p, Envelope(), TRUST, verified=()).authenticated
    assert identify(p, Envelope(), TRUST, verified=("spf:corp.example",)).signals == (
        "spf:corp.example",
    )


def test_no_from_means_no_identity():
    p = Post(b"Subject: x\r\n\r\nbody\r\n")
    assert (
        identify(
            p, Envelope(auth_user="ann"), AuthenticationPolicy(trust_sasl_senders=True)
        ).address
        == ""
    )
