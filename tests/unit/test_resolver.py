"""mtaplugin.mailauth.resolver: the resolver, its cache and its failures, against a real loopback
DNS server (mtaplugin.testing.dns)."""

from __future__ import annotations

import threading
import time

import pytest

from mtaplugin.errors import TryLater
from mtaplugin.mailauth import resolver as resolver_module
from mtaplugin.mailauth.resolver import NEGATIVE_TTL, Resolver, install_spf_adapter, spf_check
from mtaplugin.testing.dns import DnsServer


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def resolver(server: DnsServer, clock: Clock | None = None, **kw: object) -> Resolver:
    kw.setdefault("timeout", 0.5)
    return Resolver(server.nameservers, server.port, clock=clock or time.monotonic, **kw)  # type: ignore[arg-type]


def test_txt_records_nxdomain_and_nodata(dns_server: DnsServer):
    z = dns_server.zone
    z.txt("example.org", "v=spf1 -all", "google-site-verification=x")
    z.a("host.example.org", "192.0.2.1")
    r = resolver(dns_server)
    assert sorted(r.txt("example.org")) == ["google-site-verification=x", "v=spf1 -all"]
    assert r.txt("nothing.example.org") == []  # NXDOMAIN
    assert r.txt("host.example.org") == []  # the name exists, without TXT
    assert r.txt("EXAMPLE.org.") == r.txt("example.org")  # one cache key


def test_long_txt_strings_are_joined_and_truncation_falls_back_to_tcp(dns_server: DnsServer):
    long = "v=DKIM1; k=rsa; p=" + "A" * 2000
    dns_server.zone.txt("s1._domainkey.example.org", long)
    r = resolver(dns_server)
    r._dns().use_edns(-1, 0, 0)  # plain DNS: 512-octet UDP answers
    assert r.txt("s1._domainkey.example.org") == [long]
    assert ("s1._domainkey.example.org.", "TXT") in dns_server.zone.tcp_queries
    assert r.dkim_dnsfunc(b"s1._domainkey.example.org.") == long.encode()
    assert r.dkim_dnsfunc(b"none._domainkey.example.org.") == b""


def test_servfail_raises_try_later_and_is_not_cached(dns_server: DnsServer):
    dns_server.zone.txt("_dmarc.example.org", "v=DMARC1; p=reject")
    dns_server.zone.servfail("_dmarc.example.org")
    r = resolver(dns_server)
    with pytest.raises(TryLater) as info:
        r.txt("_dmarc.example.org")
    assert "_dmarc.example.org" in str(info.value)
    assert "SERVFAIL" in str(info.value)
    dns_server.zone.heal()
    assert r.txt("_dmarc.example.org") == ["v=DMARC1; p=reject"]


def test_no_answer_is_a_timeout_and_try_later(dns_server: DnsServer):
    dns_server.zone.drop()
    r = resolver(dns_server, timeout=0.3)
    with pytest.raises(TryLater) as info:
        r.txt("_dmarc.example.org")
    assert "timed out" in str(info.value)


@pytest.mark.parametrize("mode", ["garbage", "truncate"])
def test_a_garbled_or_cut_answer_is_try_later_and_not_cached(dns_server: DnsServer, mode: str):
    # the query's ID then random bytes, or half of the right packet: dnspython waits for
    # a real answer until the timeout; never another exception, never an empty answer
    dns_server.zone.txt("_dmarc.example.org", "v=DMARC1; p=reject")
    getattr(dns_server.zone, mode)()
    r = resolver(dns_server, timeout=0.3)
    for _attempt in range(3):
        with pytest.raises(TryLater):
            r.txt("_dmarc.example.org")
    dns_server.zone.heal()
    assert r.txt("_dmarc.example.org") == ["v=DMARC1; p=reject"]


def test_nothing_listening_is_try_later():
    r = Resolver(["127.0.0.1"], 9, timeout=0.3)  # discard port: nobody answers
    with pytest.raises(TryLater):
        r.txt("example.org")


def test_positive_answers_are_kept_for_their_ttl(dns_server: DnsServer):
    clock = Clock()
    dns_server.zone.txt("_dmarc.example.org", "v=DMARC1; p=none", ttl=60)
    r = resolver(dns_server, clock)
    assert r.txt("_dmarc.example.org") == ["v=DMARC1; p=none"]
    dns_server.zone.txt("_dmarc.example.org", "v=DMARC1; p=reject", ttl=60)
    clock.now += 59
    assert r.txt("_dmarc.example.org") == ["v=DMARC1; p=none"]  # still cached
    assert dns_server.zone.queries.count(("_dmarc.example.org.", "TXT")) == 1
    clock.now += 2
    assert r.txt("_dmarc.example.org") == ["v=DMARC1; p=reject"]
    assert dns_server.zone.queries.count(("_dmarc.example.org.", "TXT")) == 2


def test_a_short_real_ttl_expires(dns_server: DnsServer):
    dns_server.zone.txt("t.example.org", "one", ttl=1)
    r = resolver(dns_server)
    assert r.txt("t.example.org") == ["one"]
    dns_server.zone.txt("t.example.org", "two", ttl=1)
    deadline = time.monotonic() + 10
    while r.txt("t.example.org") == ["one"] and time.monotonic() < deadline:
        time.sleep(0.2)
    assert r.txt("t.example.org") == ["two"]


def test_negative_answers_are_kept_for_the_soa_minimum(dns_server: DnsServer):
    clock = Clock()
    dns_server.zone.negative_ttl = 20
    r = resolver(dns_server, clock)
    assert r.txt("_dmarc.example.org") == []
    dns_server.zone.txt("_dmarc.example.org", "v=DMARC1; p=reject")
    clock.now += 19
    assert r.txt("_dmarc.example.org") == []
    clock.now += 2
    assert r.txt("_dmarc.example.org") == ["v=DMARC1; p=reject"]
    assert NEGATIVE_TTL > 0


def test_the_cache_is_a_bounded_lru(dns_server: DnsServer):
    for n in range(5):
        dns_server.zone.txt(f"n{n}.example.org", str(n))
    r = resolver(dns_server, cache_size=3)
    for n in range(5):
        r.txt(f"n{n}.example.org")
    assert len(r.cache) == 3
    before = len(dns_server.zone.queries)
    r.txt("n4.example.org")  # kept
    assert len(dns_server.zone.queries) == before
    r.txt("n0.example.org")  # evicted
    assert len(dns_server.zone.queries) == before + 1


def test_no_cache_asks_every_time(dns_server: DnsServer):
    dns_server.zone.txt("x.example.org", "x")
    r = resolver(dns_server, cache_size=0)
    r.txt("x.example.org")
    r.txt("x.example.org")
    assert dns_server.zone.queries.count(("x.example.org.", "TXT")) == 2


def test_threads_share_one_resolver(dns_server: DnsServer):
    for n in range(20):
        dns_server.zone.txt(f"t{n}.example.org", f"value {n}")
    r = resolver(dns_server, timeout=2.0)
    results: dict[int, list[str]] = {}
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for _ in range(5):
                results[n] = r.txt(f"t{n % 20}.example.org")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert all(results[n] == [f"value {n % 20}"] for n in range(40))


# --- SPF through the same resolver ----------------------------------------------------------
@pytest.fixture
def spf_adapter() -> None:
    install_spf_adapter()  # what the composition root does


def test_spf_needs_the_adapter_installed_once(dns_server: DnsServer, monkeypatch):
    import spf

    install_spf_adapter()
    install_spf_adapter()  # idempotent: pyspf's own lookup is still the fallback
    assert spf.DNSLookup is resolver_module._spf_lookup
    assert resolver_module._original_lookup is not resolver_module._spf_lookup
    monkeypatch.setattr(spf, "DNSLookup", resolver_module._original_lookup)
    with pytest.raises(RuntimeError, match="install_spf_adapter"):
        spf_check(resolver(dns_server), "192.0.2.1", "anne@example.org", "h")


@pytest.mark.usefixtures("spf_adapter")
def test_spf_pass_fail_and_softfail_from_published_records(dns_server: DnsServer):
    z = dns_server.zone
    z.txt("example.org", "v=spf1 ip4:192.0.2.0/24 a:mail.example.org mx -all")
    z.a("mail.example.org", "198.51.100.7")
    z.mx("example.org", (10, "mx.example.org"))
    z.a("mx.example.org", "203.0.113.9")
    z.txt("soft.example.net", "v=spf1 ~all")
    r = resolver(dns_server)
    assert spf_check(r, "192.0.2.55", "anne@example.org", "h.example.org")[0] == "pass"
    assert spf_check(r, "198.51.100.7", "anne@example.org", "h")[0] == "pass"
    assert spf_check(r, "203.0.113.9", "anne@example.org", "h")[0] == "pass"
    assert spf_check(r, "10.1.1.1", "anne@example.org", "h")[0] == "fail"
    assert spf_check(r, "10.1.1.1", "bob@soft.example.net", "h")[0] == "softfail"
    assert spf_check(r, "10.1.1.1", "bob@unpublished.example", "h")[0] == "none"
    # every lookup went to the loopback server, none to the system resolver
    assert ("example.org.", "TXT") in z.queries
    assert ("mx.example.org.", "A") in z.queries


@pytest.mark.usefixtures("spf_adapter")
def test_spf_dns_failure_is_temperror(dns_server: DnsServer):
    dns_server.zone.servfail("example.org")
    r = resolver(dns_server)
    assert spf_check(r, "192.0.2.1", "anne@example.org", "h")[0] == "temperror"


def test_refused_is_try_later(dns_server: DnsServer):
    dns_server.zone.txt("example.org", "v=spf1 -all")
    dns_server.zone.refuse()
    r = resolver(dns_server)
    with pytest.raises(TryLater) as info:
        r.txt("example.org")
    assert "REFUSED" in str(info.value)
    dns_server.zone.heal()
    assert r.txt("example.org") == ["v=spf1 -all"]
