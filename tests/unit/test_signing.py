"""mtaplugin.mailauth.signing: DKIM signatures and ARC seals that dkimpy verifies, with the public
key served by a real loopback DNS server."""

from __future__ import annotations

import email

import dkim
import pytest
from cryptography.hazmat.primitives import serialization
from sqlalchemy.orm import Session

from mtaplugin.mailauth import openssl_rsa, signing
from mtaplugin.mailauth.keys import KEYS
from mtaplugin.mailauth.resolver import Resolver
from mtaplugin.mailauth.signing import SigningKey, arc_seal, dkim_sign, key_for
from mtaplugin.manage import dkim as dkim_keys
from mtaplugin.manage import domains
from mtaplugin.testing.dns import DnsServer
from tests.unit.signed_post import LIST_ID, RECEIVED, signed_post

HEADERS = ("from", "to", "cc", "subject", "date", "message-id", "reply-to", "list-id")
POST = signed_post(
    LIST_ID, RECEIVED, b"MIME-Version: 1.0\r\n", b"Content-Type: text/plain; charset=utf-8\r\n"
)


@pytest.fixture(scope="module")
def rsa_pem() -> str:
    return signing.generate_private_key()


@pytest.fixture
def key(rsa_pem: str) -> SigningKey:
    return SigningKey("lists.example.com", "s1", rsa_pem.encode(), HEADERS)


@pytest.fixture
def published(dns_server: DnsServer, rsa_pem: str) -> Resolver:
    dns_server.zone.txt("s1._domainkey.lists.example.com", signing.txt_value(rsa_pem))
    return dns_server.resolver()


def test_dkim_signature_verifies(key: SigningKey, published: Resolver):
    signed = dkim_sign(POST, key)
    assert signed.endswith(POST)
    assert signed.startswith(b"DKIM-Signature: ")
    assert dkim.verify(signed, dnsfunc=published.dkim_dnsfunc)
    sig = email.message_from_bytes(signed)["DKIM-Signature"]
    tags = dict(t.strip().split("=", 1) for t in " ".join(sig.split()).split(";") if "=" in t)
    assert tags["c"] == "relaxed/relaxed"
    assert tags["a"] == "rsa-sha256"
    assert tags["d"] == "lists.example.com" and tags["s"] == "s1"
    h = [x.strip() for x in tags["h"].split(":")]
    assert h.count("from") == 2  # oversigned
    assert "received" not in h and "cc" not in h  # never signed; absent
    assert {"to", "subject", "date", "message-id", "list-id"} <= set(h)


def test_changes_after_signing_break_the_signature(key: SigningKey, published: Resolver):
    signed = dkim_sign(POST, key)
    tampered = signed.replace(b"Subject: Hello", b"Subject: Buy now")
    assert not dkim.verify(tampered, dnsfunc=published.dkim_dnsfunc)
    added_from = signed.replace(b"To: team", b"From: mallory@evil.example\r\nTo: team")
    assert not dkim.verify(added_from, dnsfunc=published.dkim_dnsfunc)
    # relaxed body canonicalization: trailing whitespace changes do not break it
    assert dkim.verify(signed + b"\r\n\r\n", dnsfunc=published.dkim_dnsfunc)


def test_a_wrong_published_key_fails(key: SigningKey, dns_server: DnsServer):
    other = signing.generate_private_key(bits=1024)
    dns_server.zone.txt("s1._domainkey.lists.example.com", signing.txt_value(other))
    assert not dkim.verify(dkim_sign(POST, key), dnsfunc=dns_server.resolver().dkim_dnsfunc)


def test_lf_messages_stay_lf(key: SigningKey, published: Resolver):
    lf = POST.replace(b"\r\n", b"\n")
    signed = dkim_sign(lf, key)
    assert b"\r\n" not in signed
    assert dkim.verify(signed, dnsfunc=published.dkim_dnsfunc)


def test_ed25519_signature_verifies(dns_server: DnsServer, txn_session: Session):
    domains.create(txn_session, "ed.example.com")
    row = dkim_keys.create(txn_session, "ed.example.com", "ed1", algorithm="ed25519", activate=True)
    txt = signing.txt_value(row.private_key)
    assert txt.startswith("v=DKIM1; k=ed25519; p=")
    dns_server.zone.txt("ed1._domainkey.ed.example.com", txt)
    key = key_for(txn_session, "ED.example.com")
    assert key is not None and key.algorithm == "ed25519"
    signed = dkim_sign(POST, key)
    assert b"a=ed25519-sha256" in signed
    assert dkim.verify(signed, dnsfunc=dns_server.resolver().dkim_dnsfunc)
    # ARC allows only RSA: no seal, the message unchanged
    assert arc_seal(signed, key, "lists.example.com", "lists.example.com; none") == signed


def test_key_for_reads_the_stored_key(txn_session: Session, dns_server: DnsServer):
    domains.create(txn_session, "lists.example.net")
    assert key_for(txn_session, "lists.example.net") is None
    assert key_for(txn_session, "unknown.example") is None
    row = dkim_keys.create(
        txn_session, "lists.example.net", "sel", headers="From:Subject:To", activate=True
    )
    key = key_for(txn_session, "lists.example.net")
    assert key == SigningKey(
        "lists.example.net", "sel", row.private_key.encode(), ("from", "subject", "to")
    )
    dns_server.zone.txt("sel._domainkey.lists.example.net", signing.txt_value(row.private_key))
    assert dkim.verify(dkim_sign(POST, key), dnsfunc=dns_server.resolver().dkim_dnsfunc)


def test_a_key_read_again_is_not_parsed_again(
    txn_session: Session, monkeypatch: pytest.MonkeyPatch
):
    """The list domain's key row is read again every KEY_TTL seconds (a lone post after a
    quiet spell reads it): the PEM is parsed once per process, the ~30 ms an RSA parse
    costs not paid again, and the sealer signs with that same parsed key."""
    domains.create(txn_session, "parse.example")
    dkim_keys.create(txn_session, "parse.example", "sel", activate=True)
    KEYS.clear()
    parses: list[bytes] = []
    parse = serialization.load_pem_private_key

    def counting(data: bytes, password: bytes | None) -> object:
        parses.append(data)
        return parse(data, password)

    monkeypatch.setattr(serialization, "load_pem_private_key", counting)
    for _ in range(3):
        key = key_for(txn_session, "parse.example")
        assert key is not None
        arc_seal(dkim_sign(POST, key), key, "parse.example", "parse.example; none")
    assert len(parses) == 1


# --- ARC ------------------------------------------------------------------------------------
def test_arc_first_hop_records_the_results_with_cv_none(key: SigningKey, published: Resolver):
    results = (
        "lists.example.com; dkim=pass header.d=example.org; spf=pass smtp.mailfrom=example.org"
    )
    sealed = arc_seal(POST, key, "lists.example.com", results)
    cv, sets, reason = dkim.arc_verify(sealed, dnsfunc=published.dkim_dnsfunc)
    assert cv == b"pass", reason
    assert len(sets) == 1 and sets[0]["cv"] == b"none"
    assert b"dkim=pass header.d=example.org" in sets[0]["aar-value"]
    msg = email.message_from_bytes(sealed)
    assert msg["Authentication-Results"].startswith("lists.example.com;")
    assert "i=1;" in msg["ARC-Seal"]


def test_arc_second_hop_cv_pass(key: SigningKey, published: Resolver, dns_server: DnsServer):
    first = arc_seal(
        POST, key, "lists.example.com", "lists.example.com; dkim=pass header.d=example.org"
    )
    # the next hop validates the chain it received, then seals, with its own key
    other_pem = signing.generate_private_key()
    dns_server.zone.txt("hop._domainkey.relay.example.net", signing.txt_value(other_pem))
    relay = SigningKey("relay.example.net", "hop", other_pem.encode(), HEADERS)
    cv, _sets, _reason = dkim.arc_verify(first, dnsfunc=published.dkim_dnsfunc)
    second = arc_seal(first, relay, "relay.example.net", f"relay.example.net; arc={cv.decode()}")
    cv2, sets, reason = dkim.arc_verify(second, dnsfunc=published.dkim_dnsfunc)
    assert cv2 == b"pass", reason
    assert [s["instance"] for s in sets] == [2, 1]
    assert sets[0]["cv"] == b"pass"


def test_arc_seal_after_decoration(key: SigningKey, published: Resolver):
    """The post is changed (footer) after it came in; the seal covers the copy that leaves."""
    decorated = POST + b"-- \r\nteam mailing list\r\n"
    sealed = dkim_sign(arc_seal(decorated, key, "lists.example.com", "x; dmarc=pass"), key)
    assert dkim.arc_verify(sealed, dnsfunc=published.dkim_dnsfunc)[0] == b"pass"
    assert dkim.verify(sealed, dnsfunc=published.dkim_dnsfunc)


def test_a_chain_not_validated_on_receipt_is_sealed_as_failed(key: SigningKey, published: Resolver):
    first = arc_seal(POST, key, "lists.example.com", "lists.example.com; none")
    second = arc_seal(first, key, "lists.example.com", "lists.example.com; dkim=none")
    assert b"cv=fail" in second
    # dkimpy reports a chain whose newest seal says cv=fail as ended (None), never pass
    assert dkim.arc_verify(second, dnsfunc=published.dkim_dnsfunc)[0] in (None, b"fail")


def test_forged_results_with_our_authserv_id_are_dropped(key: SigningKey, published: Resolver):
    forged = b"Authentication-Results: lists.example.com; dkim=pass header.d=bank.example\r\n"
    other = b"Authentication-Results: mx.example.org; spf=pass smtp.mailfrom=example.org\r\n"
    sealed = arc_seal(
        forged + other + POST, key, "lists.example.com", "lists.example.com; dkim=fail"
    )
    assert b"bank.example" not in sealed
    assert b"mx.example.org; spf=pass" in sealed
    cv, sets, _ = dkim.arc_verify(sealed, dnsfunc=published.dkim_dnsfunc)
    assert cv == b"pass" and b"dkim=fail" in sets[0]["aar-value"]


def test_txt_record_splits_long_values():
    pem = signing.generate_private_key(bits=4096)
    line = signing.txt_record("lists.example.com", "s1", pem)
    assert line.startswith('s1._domainkey.lists.example.com. IN TXT ( "v=DKIM1; k=rsa; p=')
    strings = line.split("( ", 1)[1].rsplit(" )", 1)[0].split(" ")
    chunks = [s.strip('"') for s in " ".join(strings).split('" "')]
    assert len(chunks) > 2 and all(len(c) <= 255 for c in chunks)
    assert "".join(chunks).replace('"', "") == signing.txt_value(pem)


@pytest.mark.parametrize("bad", ["", "a b", "-x", "x_y", "a." * 3])
def test_bad_selectors_are_refused(bad: str):
    from mtaplugin.errors import InvalidInput

    with pytest.raises(InvalidInput) as info:
        signing.check_selector(bad)
    assert info.value.field == "selector"


def test_openssl_rsa_gives_dkimpys_bytes(rsa_pem: str):
    import hashlib

    from dkim.crypto import RSASSA_PKCS1_v1_5_sign, parse_pem_private_key

    assert openssl_rsa.install_openssl_rsa()
    assert openssl_rsa.install_openssl_rsa()  # idempotent: dkimpy's own is still kept
    assert dkim.RSASSA_PKCS1_v1_5_sign is openssl_rsa.openssl_rsa_sign
    assert openssl_rsa._dkimpy_rsa_sign is RSASSA_PKCS1_v1_5_sign
    pk = parse_pem_private_key(rsa_pem.encode())
    for name in ("sha256", "sha1"):
        data = b"the canonicalized header fields " + name.encode()
        ours = openssl_rsa.openssl_rsa_sign(hashlib.new(name, data), pk)
        theirs = RSASSA_PKCS1_v1_5_sign(hashlib.new(name, data), pk)
        assert ours == theirs
