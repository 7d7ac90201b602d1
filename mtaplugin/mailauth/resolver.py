"""One DNS resolver for the DMARC, DKIM and SPF lookups, with timeouts and a shared cache.

- Built on dnspython.  ``nameservers`` empty means the system's ``/etc/resolv.conf``;
  otherwise those servers on ``port`` (the tests point it at the loopback server of
  :mod:`mtaplugin.testing.dns`).
- ``timeout`` bounds one lookup as a whole (every server and retry included).
- A small LRU cache, shared by all lookups and threads, keeps each answer for its TTL.  A
  negative answer (NXDOMAIN, or the name without records of the type) is kept for the
  SOA minimum of the zone (RFC 2308), or :data:`NEGATIVE_TTL` seconds when the answer has
  no SOA.  Failures (SERVFAIL, REFUSED, timeouts) are never cached.
- A failure raises :class:`~mtaplugin.errors.TryLater`: the SMTP front ends answer 4xx,
  so a post is delayed, never lost, while DNS cannot answer.

**pyspf** has its own DNS layer: a module function ``spf.DNSLookup(name, qtype, strict,
timeout)`` that every ``spf.query`` calls, and no other hook point.
:func:`install_spf_adapter` replaces that function, process-wide, with one that asks the
resolver of the current :func:`spf_check` (held in a context variable, so each milter
thread uses its own) and falls back to pyspf's own lookup outside a check.  SPF lookups
thus share this cache, these nameservers and these timeouts.  Importing this module
changes nothing: the composition root calls :func:`mtaplugin.mailauth.service.install`
(which calls :func:`install_spf_adapter`), and :func:`spf_check` refuses to run before.
"""

from __future__ import annotations

import contextvars
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import dns.exception
import dns.flags
import dns.message
import dns.name
import dns.rcode
import dns.rdata
import dns.rdatatype
import dns.resolver

from mtaplugin.errors import TryLater
from mtaplugin.i18n import _

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)

#: seconds a negative answer is kept when it carries no SOA record
NEGATIVE_TTL = 60
#: the longest time any answer is kept, whatever its TTL says
MAX_TTL = 86_400
#: an SPF check may take this many times the lookup timeout in all (then: temperror)
SPF_LOOKUPS_TIMED = 5


@dataclass(frozen=True)
class _Entry:
    expires: float
    records: tuple[dns.rdata.Rdata, ...]


class _Cache:
    """A thread-safe LRU of (name, type) → records, each with its expiry time."""

    def __init__(self, size: int, clock: Callable[[], float]) -> None:
        self.size = size
        self.clock = clock
        self._data: OrderedDict[tuple[str, int], _Entry] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, int]) -> tuple[dns.rdata.Rdata, ...] | None:
        with self._lock:
            entry = self._data.get(key)
            if entry is None:
                return None
            if entry.expires <= self.clock():
                del self._data[key]
                return None
            self._data.move_to_end(key)
            return entry.records

    def put(self, key: tuple[str, int], records: tuple[dns.rdata.Rdata, ...], ttl: int) -> None:
        if self.size <= 0 or ttl <= 0:
            return
        with self._lock:
            self._data[key] = _Entry(self.clock() + min(ttl, MAX_TTL), records)
            self._data.move_to_end(key)
            while len(self._data) > self.size:
                self._data.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()

    def __len__(self) -> int:
        return len(self._data)


def _negative_ttl(response: dns.message.Message | None) -> int:
    """RFC 2308 §5: the smaller of the SOA's TTL and its MINIMUM field."""
    if response is not None:
        for rrset in response.authority:
            if rrset.rdtype == dns.rdatatype.SOA and len(rrset):
                return int(min(rrset.ttl, rrset[0].minimum))
    return NEGATIVE_TTL


def _canonical(name: str | bytes) -> str:
    if isinstance(name, bytes):
        name = name.decode("ascii", errors="replace")
    return name.strip().rstrip(".").lower() + "."


class Resolver:
    """DNS lookups for DMARC, DKIM and SPF; safe to share between threads."""

    def __init__(
        self,
        nameservers: Sequence[str] = (),
        port: int = 53,
        timeout: float = 2.0,
        cache_size: int = 4096,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.nameservers = tuple(nameservers)
        self.port = port
        self.timeout = timeout
        self.cache = _Cache(cache_size, clock)
        self._local = threading.local()

    def _dns(self) -> dns.resolver.Resolver:
        """One dnspython resolver per thread (its objects are not documented thread-safe)."""
        resolver: dns.resolver.Resolver | None = getattr(self._local, "resolver", None)
        if resolver is None:
            resolver = dns.resolver.Resolver(configure=not self.nameservers)
            if self.nameservers:
                resolver.nameservers = list(self.nameservers)
            resolver.port = self.port
            resolver.timeout = self.timeout
            resolver.lifetime = self.timeout
            resolver.use_edns(0, 0, 1232)
            resolver.cache = None  # ours is shared and caches negative answers too
            self._local.resolver = resolver
        return resolver

    def query(self, name: str | bytes, rdtype: str | int) -> tuple[dns.rdata.Rdata, ...]:
        """The records of ``rdtype`` at ``name`` (CNAMEs followed); () when there are none.

        Raises :class:`TryLater` when DNS cannot answer (SERVFAIL, REFUSED, timeout)."""
        qname = _canonical(name)
        qtype = dns.rdatatype.RdataType.make(rdtype)
        key = (qname, int(qtype))
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        try:
            answer = self._dns().resolve(qname, qtype, raise_on_no_answer=False, search=False)
        except dns.resolver.NXDOMAIN as exc:
            try:
                # NXDOMAIN.response is the one dnspython method left unannotated
                response = exc.response(dns.name.from_text(qname))  # type: ignore[no-untyped-call]
            except (KeyError, IndexError, AttributeError):
                response = None
            self.cache.put(key, (), _negative_ttl(response))
            return ()
        except dns.resolver.NoNameservers as exc:
            raise TryLater(
                _("DNS lookup of {name} {type} failed (SERVFAIL or refused): {error}").format(
                    name=qname, type=qtype.name, error=exc
                )
            ) from None
        except dns.exception.Timeout:
            raise TryLater(
                _("DNS lookup of {name} {type} timed out after {seconds} s").format(
                    name=qname, type=qtype.name, seconds=self.timeout
                )
            ) from None
        except dns.exception.DNSException as exc:
            raise TryLater(
                _("DNS lookup of {name} {type} failed: {error}").format(
                    name=qname, type=qtype.name, error=exc
                )
            ) from None
        if answer.rrset is None:
            self.cache.put(key, (), _negative_ttl(answer.response))
            return ()
        records = tuple(answer.rrset)
        self.cache.put(key, records, answer.rrset.ttl)
        return records

    def txt(self, name: str) -> list[str]:
        """Every TXT record at ``name``, each with its strings joined ([] if none)."""
        return [
            b"".join(r.strings).decode("utf-8", errors="replace")  # type: ignore[attr-defined]
            for r in self.query(name, "TXT")
        ]

    def dkim_dnsfunc(self, name: bytes, timeout: int = 5) -> bytes:
        """dkimpy's ``dnsfunc``: the first TXT record at ``name``, or b"" if none.

        A DNS failure raises :class:`TryLater` out of ``dkim.verify``; callers turn it
        into a ``temperror`` result."""
        records = self.query(name, "TXT")
        for record in records:
            return b"".join(record.strings)  # type: ignore[attr-defined]
        return b""


# --- pyspf ---------------------------------------------------------------------------------
_current: contextvars.ContextVar[Resolver | None] = contextvars.ContextVar(
    "mtaplugin_spf_resolver", default=None
)
_install_lock = threading.Lock()
_original_lookup: Callable[..., Any] | None = None


def _spf_lookup(name: str, qtype: str, strict: Any = True, timeout: Any = None) -> list[Any]:
    """pyspf's ``DNSLookup`` contract: [((name, type), value), ...]; errors as TempError."""
    import spf

    resolver = _current.get()
    if resolver is None:
        assert _original_lookup is not None
        return list(_original_lookup(name, qtype, strict, timeout))
    try:
        records = resolver.query(name, qtype)
    except TryLater as exc:
        raise spf.TempError(str(exc)) from None
    out: list[Any] = []
    for r in records:
        if qtype in ("A", "AAAA"):
            out.append(((name, qtype), r.address))  # type: ignore[attr-defined]
        elif qtype == "MX":
            out.append(((name, qtype), (r.preference, r.exchange)))  # type: ignore[attr-defined]
        elif qtype == "PTR":
            out.append(((name, qtype), r.target.to_text(True)))  # type: ignore[attr-defined]
        elif qtype in ("TXT", "SPF"):
            out.append(((name, qtype), r.strings))  # type: ignore[attr-defined]
    return out


def install_spf_adapter() -> None:
    """Send pyspf's DNS lookups through the resolver of the current :func:`spf_check`
    (it replaces ``spf.DNSLookup``, process-wide).  Idempotent and thread-safe."""
    global _original_lookup
    import spf

    with _install_lock:
        if spf.DNSLookup is not _spf_lookup:
            _original_lookup = spf.DNSLookup
            spf.DNSLookup = _spf_lookup


def spf_check(
    resolver: Resolver, client_address: str, mail_from: str, helo: str
) -> tuple[str, str]:
    """pyspf's RFC 7208 check through ``resolver``: (result, explanation), result one of
    pass, fail, softfail, neutral, none, permerror, temperror."""
    import spf

    if spf.DNSLookup is not _spf_lookup:
        # pyspf would ask the system's resolver, not ours: a silent difference
        raise RuntimeError("SPF needs mtaplugin.mailauth.resolver.install_spf_adapter() first")
    token = _current.set(resolver)
    try:
        # each lookup is bounded by the resolver's timeout; the whole check (up to 10
        # DNS-querying mechanisms, RFC 7208 §4.6.4) by SPF_LOOKUPS_TIMED of them
        query = spf.query(
            i=client_address,
            s=mail_from,
            h=helo,
            timeout=resolver.timeout,
            querytime=resolver.timeout * SPF_LOOKUPS_TIMED,
        )
        result, _code, explanation = query.check()
    finally:
        _current.reset(token)
    return str(result), str(explanation)
