"""What mail authentication costs per post: DMARC lookups (cached and not), checking an
incoming post (DKIM + SPF + DMARC + ARC) and signing + sealing the copy that leaves.

The DNS answers come from the loopback server of mtaplugin.testing.dns, so the figures
are CPU and protocol costs, not Internet latency.  Baselines in the same run: a cached
lookup is measured against an uncached one, sign + seal against DKIM signing alone, and
mtaplugin's signing (mailauth.sealer, OpenSSL) against dkimpy with its own pure-Python RSA.

    .venv/bin/python bench/mailauth.py [--rounds 200]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import dkim

from mtaplugin.mailauth import openssl_rsa, signing
from mtaplugin.mailauth.dmarc import lookup_policy
from mtaplugin.mailauth.resolver import Resolver
from mtaplugin.mailauth.service import install
from mtaplugin.mailauth.signing import SigningKey, arc_seal, dkim_sign
from mtaplugin.mailauth.verify import check
from mtaplugin.testing.dns import DnsServer
from mtaplugin.vocabulary.envelope import Envelope

HEADERS = ("from", "to", "subject", "date", "message-id", "list-id")


def post(size: int) -> bytes:
    body = (b"x" * 76 + b"\r\n") * max(1, size // 78)
    return (
        b"From: Anne <anne@example.org>\r\nTo: team@lists.example.com\r\nSubject: bench\r\n"
        b"Date: Thu, 03 Dec 2026 10:00:00 +0000\r\nMessage-ID: <b@example.org>\r\n"
        b"List-Id: <team.lists.example.com>\r\n\r\n" + body
    )


def dkimpy_sign(raw: bytes, key: SigningKey) -> bytes:
    """dkimpy's own DKIM signature (mtaplugin signs with mailauth.sealer)."""
    names = signing.include_headers(raw, key.headers)
    sig: bytes = dkim.sign(
        raw,
        key.selector.encode(),
        key.domain.encode(),
        key.private_key,
        canonicalize=(b"relaxed", b"relaxed"),
        include_headers=names,
    )
    return sig + raw


def per_op(fn: Callable[[], object], rounds: int) -> float:
    fn()
    start = time.perf_counter()
    for _ in range(rounds):
        fn()
    return (time.perf_counter() - start) / rounds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=200)
    rounds = parser.parse_args().rounds
    pem = signing.generate_private_key()
    install()  # what the composition root does: OpenSSL RSA, SPF through our resolver
    with DnsServer() as server:
        z = server.zone
        z.dmarc("example.org", "v=DMARC1; p=reject")
        z.spf("example.org", "v=spf1 ip4:192.0.2.0/24 -all")
        z.dkim("example.org", "s1", signing.txt_value(pem))
        z.dkim("lists.example.com", "s1", signing.txt_value(pem))
        uncached = Resolver(server.nameservers, server.port, cache_size=0)
        cached = Resolver(server.nameservers, server.port)
        t_uncached = per_op(lambda: lookup_policy(uncached, "news.example.org"), rounds)
        t_cached = per_op(lambda: lookup_policy(cached, "news.example.org"), rounds)
        print(f"DMARC lookup, subdomain (2 queries), uncached: {t_uncached * 1e3:8.3f} ms")
        print(
            f"DMARC lookup, cached:                          {t_cached * 1e3:8.3f} ms"
            f"  ({t_uncached / t_cached:.0f}x faster)"
        )
        sender = SigningKey("example.org", "s1", pem.encode(), HEADERS)
        lists = SigningKey("lists.example.com", "s1", pem.encode(), HEADERS)
        envelope = Envelope(mail_from="anne@example.org", client_address="192.0.2.1")
        for size in (2_000, 200_000):
            raw = dkim_sign(post(size), sender)
            t_check = per_op(lambda raw=raw: check(raw, envelope, cached), rounds)
            results = check(raw, envelope, cached).header("lists.example.com")
            t_sign = per_op(lambda raw=raw: dkim_sign(raw, lists), rounds)
            t_both = per_op(
                lambda raw=raw, results=results: dkim_sign(
                    arc_seal(raw, lists, "lists.example.com", results), lists
                ),
                rounds,
            )
            dkim.RSASSA_PKCS1_v1_5_sign = openssl_rsa._dkimpy_rsa_sign
            t_pure = per_op(lambda raw=raw: dkimpy_sign(raw, lists), max(10, rounds // 10))
            openssl_rsa.install_openssl_rsa()
            print(
                f"{size // 1000:>4} kB post: DKIM sign by dkimpy with its pure-Python RSA "
                f"{t_pure * 1e3:6.2f} ms, by mtaplugin through OpenSSL {t_sign * 1e3:6.2f} ms "
                f"({t_pure / t_sign:.1f}x faster)"
            )
            print(
                f"{size // 1000:>4} kB post: check {t_check * 1e3:7.2f} ms, "
                f"DKIM sign {t_sign * 1e3:6.2f} ms, ARC seal + DKIM sign "
                f"{t_both * 1e3:6.2f} ms ({t_both / t_sign:.1f}x signing alone)"
            )


if __name__ == "__main__":
    main()
