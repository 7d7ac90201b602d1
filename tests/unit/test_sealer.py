"""mtaplugin.mailauth.sealer: the ARC set and the DKIM signatures written in one pass, each
checked by dkimpy's verifiers against keys served by a real loopback DNS server."""

from __future__ import annotations

from datetime import UTC, datetime

import dkim
import pytest
from dkim.canonicalization import Relaxed
from sqlalchemy.orm import Session

from mtaplugin.mailauth import sealer, signing
from mtaplugin.mailauth.resolver import Resolver
from mtaplugin.mailauth.signing import SigningKey, arc_seal, seal_and_sign
from mtaplugin.testing.dns import DnsServer
from tests.unit.signed_post import LIST_ID, RECEIVED, signed_post

HEADERS = ("from", "to", "cc", "subject", "date", "message-id", "list-id", "list-post")
POST = signed_post(
    LIST_ID,
    b"List-Post: <mailto:team@lists.example.com>\r\n",
    first=RECEIVED,
    subject=b"[team]  a subject\r\n\tfolded  over two lines   ",
    body=b"Hello  members \t\r\n\ttabbed line\r\n-- \r\nteam mailing list\r\n\r\n\r\n",
)
RESULTS = "lists.example.com; dkim=pass header.d=example.org; spf=pass smtp.mailfrom=example.org"


@pytest.fixture(scope="module")
def rsa_pem() -> str:
    return signing.generate_private_key()


@pytest.fixture(scope="module")
def ed_pem() -> str:
    return signing.generate_private_key(signing.ED25519)


@pytest.fixture
def rsa(rsa_pem: str) -> SigningKey:
    return SigningKey("lists.example.com", "s1", rsa_pem.encode(), HEADERS)


@pytest.fixture
def ed(ed_pem: str) -> SigningKey:
    from mtaplugin.model import DkimKey

    row = DkimKey(selector="ed1", private_key=ed_pem, signed_headers=":".join(HEADERS))
    return signing._signing_key("lists.example.com", row)


@pytest.fixture
def resolver(dns_server: DnsServer, rsa_pem: str, ed_pem: str) -> Resolver:
    dns_server.zone.txt("s1._domainkey.lists.example.com", signing.txt_value(rsa_pem))
    dns_server.zone.txt("ed1._domainkey.lists.example.com", signing.txt_value(ed_pem))
    return dns_server.resolver()


def _verify_all(message: bytes, resolver: Resolver) -> list[bool]:
    """dkimpy's verdict on each DKIM-Signature of ``message``, top first."""
    d = dkim.DKIM(message)
    count = sum(1 for name, _v in d.headers if name.lower() == b"dkim-signature")
    verdicts = []
    for i in range(count):
        try:
            verdicts.append(bool(d.verify(idx=i, dnsfunc=resolver.dkim_dnsfunc)))
        except dkim.DKIMException:  # e.g. "body hash mismatch"
            verdicts.append(False)
    return verdicts


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"\r\n",
        b"\r\n\r\n\r\n",
        b"no final line end",
        b"trailing  \t \r\nspaces\t\r\n\r\n",
        b" leading and  inner   runs \r\n",
        b"x\r\n\r\ny\r\n\r\n",
    ],
)
def test_relaxed_body_is_dkimpys(body: bytes):
    assert sealer.relaxed_body(body) == Relaxed.canonicalize_body(body)


def test_parse_and_header_canonicalization_are_dkimpys():
    for raw in (POST, POST.replace(b"\r\n", b"\n")):
        ours, body = sealer.parse(raw)
        theirs, their_body = dkim.rfc822_parse(raw)
        assert [(n, v) for n, v in ours] == [(n, v) for n, v in theirs]
        assert body == their_body
        assert [sealer.relaxed_header(n, v) + b"\r\n" for n, v in ours] == [
            n + b":" + v for n, v in Relaxed.canonicalize_headers(theirs)
        ]


def test_one_pass_writes_arc_set_and_dkim_signature_that_verify(
    rsa: SigningKey, resolver: Resolver
):
    names = signing.include_headers(POST, rsa.headers)
    signer = signing._signer(rsa)
    request = sealer.ArcRequest(RESULTS, b"none")
    done = sealer.sign_copy(POST, [signer], (signer, request), names, 1_796_000_000)
    assert done is not None  # the first set is ours, not dkimpy's
    assert done.endswith(POST)
    assert [h.split(b":")[0] for h in done.split(b"\r\n") if h[:1].isupper()][:4] == [
        b"DKIM-Signature",
        b"ARC-Seal",
        b"ARC-Message-Signature",
        b"ARC-Authentication-Results",
    ]
    assert _verify_all(done, resolver) == [True]
    cv, sets, reason = dkim.arc_verify(done, dnsfunc=resolver.dkim_dnsfunc)
    assert cv == b"pass", reason
    assert sets[0]["cv"] == b"none" and b"spf=pass" in sets[0]["aar-value"]
    # the same body hash in both signatures
    bh = [line for line in done.split(b"\r\n") if b"bh=" in line]
    assert len(bh) == 2 and len({x[x.index(b"bh=") :] for x in bh}) == 1


def test_seal_and_sign_after_decoration_and_tampering(rsa: SigningKey, resolver: Resolver):
    done = seal_and_sign(POST, rsa, "lists.example.com", RESULTS)
    assert _verify_all(done, resolver) == [True]
    assert dkim.arc_verify(done, dnsfunc=resolver.dkim_dnsfunc)[0] == b"pass"
    tampered = done.replace(b"Hello  members", b"Buy now")
    assert _verify_all(tampered, resolver) == [False]
    assert dkim.arc_verify(tampered, dnsfunc=resolver.dkim_dnsfunc)[0] != b"pass"
    forged_from = done.replace(b"To: team", b"From: mallory@evil.example\r\nTo: team")
    assert _verify_all(forged_from, resolver) == [False]


def test_lf_copies_stay_lf_and_verify(rsa: SigningKey, resolver: Resolver):
    lf = POST.replace(b"\r\n", b"\n")
    done = seal_and_sign(lf, rsa, "lists.example.com", RESULTS)
    assert b"\r\n" not in done
    assert _verify_all(done, resolver) == [True]
    assert dkim.arc_verify(done, dnsfunc=resolver.dkim_dnsfunc)[0] == b"pass"


def test_second_set_on_a_passing_chain_is_ours_and_verifies(
    rsa: SigningKey, resolver: Resolver, dns_server: DnsServer
):
    first = seal_and_sign(POST, rsa, "lists.example.com", RESULTS)
    relay_pem = signing.generate_private_key()
    dns_server.zone.txt("hop._domainkey.relay.example.net", signing.txt_value(relay_pem))
    relay = SigningKey("relay.example.net", "hop", relay_pem.encode(), HEADERS)
    cv, _sets, _reason = dkim.arc_verify(first, dnsfunc=resolver.dkim_dnsfunc)
    assert cv == b"pass"
    headers, _body = sealer.parse(first)
    assert sealer.prior_sets(headers) is not None  # one complete set: the native path
    second = seal_and_sign(first, relay, "relay.example.net", "relay.example.net; arc=pass")
    cv2, sets, reason = dkim.arc_verify(second, dnsfunc=resolver.dkim_dnsfunc)
    assert cv2 == b"pass", reason
    assert [s["instance"] for s in sets] == [2, 1] and sets[0]["cv"] == b"pass"
    assert _verify_all(second, resolver)[0] is True  # the relay's own DKIM-Signature


def test_incomplete_chains_are_left_to_dkimpy():
    headers, _ = sealer.parse(b"ARC-Seal: i=1; cv=none; a=rsa-sha256; b=x\r\nFrom: a@b\r\n\r\n")
    assert sealer.prior_sets(headers) is None
    headers, _ = sealer.parse(b"ARC-Seal: i=2; b=x\r\nFrom: a@b\r\n\r\n")
    assert sealer.prior_sets(headers) is None
    headers, _ = sealer.parse(b"From: a@b\r\n\r\n")
    assert sealer.prior_sets(headers) == []


def test_ed25519_beside_rsa_both_verify(rsa: SigningKey, ed: SigningKey, resolver: Resolver):
    assert ed.algorithm == signing.ED25519
    done = seal_and_sign(POST, rsa, "lists.example.com", RESULTS, also=(ed,))
    assert done.count(b"DKIM-Signature:") == 2
    assert b"a=ed25519-sha256" in done and b"a=rsa-sha256" in done
    assert _verify_all(done, resolver) == [True, True]
    assert dkim.arc_verify(done, dnsfunc=resolver.dkim_dnsfunc)[0] == b"pass"
    alone = signing.dkim_sign(POST, ed)
    assert _verify_all(alone, resolver) == [True]
    # ARC allows only RSA: an Ed25519-only domain gets its DKIM signature, no ARC set
    assert b"ARC-Seal" not in seal_and_sign(POST, ed, "lists.example.com", RESULTS)
    assert arc_seal(POST, ed, "lists.example.com", RESULTS) == POST


@pytest.mark.parametrize(
    "raw",
    [
        b"From: a@b\r\n\r\n",
        b"From: a@b\r\n",
        b"From: a@b",
        b"From: a@b\n\nbody\nlines\n",
        b"From: a@b\r\n\r\nmixed\nline\r\nends\r\r\n",
        b"From: a@b\r\nX: y\r\n\r\n\r\n\r\n",
    ],
)
def test_parse_edges_are_dkimpys(raw: bytes):
    ours, body = sealer.parse(raw)
    theirs, their_body = dkim.rfc822_parse(raw)
    assert [(n, v) for n, v in ours] == [(n, v) for n, v in theirs]
    assert body == their_body
    assert sealer.relaxed_body(body) == Relaxed.canonicalize_body(their_body)


def test_large_bodies_with_and_without_whitespace_are_dkimpys():
    plain = (b"x" * 76 + b"\r\n") * 3000
    text = (b"some words  with\truns of space \r\n" * 3000) + b"\r\n\r\n"
    for body in (plain, text):
        assert sealer.relaxed_body(body) == Relaxed.canonicalize_body(body)


# --- an Ed25519 key beside the RSA key (key management) ----------------------------------
def test_a_domain_signs_with_its_rsa_and_its_ed25519_key(
    txn_session: Session, dns_server: DnsServer
):
    from mtaplugin.mailauth.service import Deliverability, SealInfo
    from mtaplugin.manage import dkim as dkim_keys
    from mtaplugin.manage import domains

    domains.create(txn_session, "both.example")
    rsa_row = dkim_keys.create(txn_session, "both.example", "r1", activate=True)
    # a key of the other algorithm needs no --replace and leaves the RSA key alone
    ed_row = dkim_keys.create(txn_session, "both.example", "e1", algorithm="ed25519")
    assert [k.selector for k in dkim_keys.keys(txn_session, "both.example")] == ["r1", "e1"]
    key = signing.key_for(txn_session, "both.example")
    assert key is not None and key.algorithm == signing.RSA and key.also == ()  # e1 waits
    for row in (rsa_row, ed_row):
        dns_server.zone.txt(
            f"{row.selector}._domainkey.both.example", signing.txt_value(row.private_key)
        )
    resolver = dns_server.resolver()
    ok, _found = dkim_keys.check(resolver, ed_row, datetime.now(UTC))
    assert ok and ed_row.active
    # activating the Ed25519 key removed nothing: no RSA key was replaced
    assert len(dkim_keys.keys(txn_session, "both.example")) == 2
    key = signing.key_for(txn_session, "both.example")
    assert key is not None and key.selector == "r1"
    assert [k.algorithm for k in key.also] == [signing.ED25519]
    service = Deliverability(resolver, authserv_id="both.example")
    out = service.seal(txn_session, SealInfo("both.example", RESULTS), POST)
    assert _verify_all(out, resolver) == [True, True]
    assert dkim.arc_verify(out, dnsfunc=resolver.dkim_dnsfunc)[0] == b"pass"
    assert b"s=r1" in out and b"s=e1" in out


def test_replacing_one_algorithms_key_keeps_the_other(txn_session: Session, dns_server: DnsServer):
    from mtaplugin.errors import AlreadyExists
    from mtaplugin.manage import dkim as dkim_keys
    from mtaplugin.manage import domains

    domains.create(txn_session, "roll.example")
    dkim_keys.create(txn_session, "roll.example", "r1", activate=True)
    dkim_keys.create(txn_session, "roll.example", "e1", algorithm="ed25519", activate=True)
    with pytest.raises(AlreadyExists):
        dkim_keys.create(txn_session, "roll.example", "r2")
    new = dkim_keys.create(txn_session, "roll.example", "r2", replace=True)
    assert {k.selector for k in dkim_keys.keys(txn_session, "roll.example")} == {"r1", "e1", "r2"}
    dns_server.zone.txt("r2._domainkey.roll.example", signing.txt_value(new.private_key))
    ok, _found = dkim_keys.check(dns_server.resolver(), new, datetime.now(UTC))
    assert ok
    # the rollover removed the RSA key it replaced, not the Ed25519 key
    assert {k.selector for k in dkim_keys.keys(txn_session, "roll.example")} == {"e1", "r2"}
    key = signing.key_for(txn_session, "roll.example")
    assert key is not None and key.selector == "r2" and [k.selector for k in key.also] == ["e1"]


@pytest.mark.parametrize(
    "value",
    [
        b" plain\r\n",
        b"  two  runs\t\tand tabs \r\n",
        b" folded\r\n\tover\r\n  lines \r\n",
        b"x\r\r\n",
    ],
)
def test_relaxed_header_values_are_dkimpys(value: bytes):
    ((name, theirs),) = Relaxed.canonicalize_headers([(b"Subject ", value)])
    assert sealer.relaxed_header(b"Subject ", value) + b"\r\n" == name + b":" + theirs
