"""A real, authoritative DNS server on 127.0.0.1 for tests (UDP and TCP, one port).

    with DnsServer() as server:
        server.zone.txt("_dmarc.example.org", "v=DMARC1; p=reject")
        resolver = Resolver([server.host], server.port, timeout=0.5)

It answers from :attr:`DnsServer.zone`, which tests change at run time: TXT (strings longer
than 255 octets are split as RFC 1035 requires), A, AAAA, MX.  A name without records is
NXDOMAIN (or NODATA when records exist below it), with an SOA whose minimum gives the
negative TTL.  ``zone.servfail(name)``, ``zone.refuse(name)`` and ``zone.drop(name)`` make
it answer SERVFAIL, REFUSED or nothing at all (the client times out) for one name, or for
every name without an argument; ``zone.garbage(name)`` answers the query's ID followed by
random bytes, ``zone.truncate(name)`` the first half of the right answer (no TC flag: a
broken packet); ``zone.heal()`` undoes them.  Built with dnspython's
message parsing, in threads: no daemon.
"""

from __future__ import annotations

import os
import random
import socket
import socketserver
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import dns.exception
import dns.flags
import dns.message
import dns.name
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.rrset

from mtaplugin.mailauth.resolver import Resolver

#: what :meth:`Zone.servfail`/:meth:`Zone.drop` without a name applies to
EVERY_NAME = "*"


def _key(name: str) -> str:
    return name.strip().rstrip(".").lower() + "."


def split_txt(text: str | bytes) -> list[bytes]:
    """A TXT value as character-strings of at most 255 octets."""
    data = text.encode() if isinstance(text, str) else text
    return [data[i : i + 255] for i in range(0, len(data), 255)] or [b""]


def _quote(chunk: bytes) -> str:
    return '"' + chunk.decode("latin-1").replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass
class Zone:
    """The records the server answers with; safe to change while it runs."""

    #: the TTL of records added without one
    ttl: int = 300
    #: the SOA minimum, i.e. how long resolvers keep a negative answer
    negative_ttl: int = 30
    _records: dict[tuple[str, int], tuple[int, list[str]]] = field(default_factory=dict)
    #: the names (or EVERY_NAME) answered wrongly, by how: "servfail", "refuse", "drop",
    #: "garbage", "truncate" (the methods of those names)
    _failing: dict[str, set[str]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    #: questions received, as (name, type) (for tests that count lookups)
    queries: list[tuple[str, str]] = field(default_factory=list)
    #: the questions of them that came over TCP
    tcp_queries: list[tuple[str, str]] = field(default_factory=list)

    def _set(self, name: str, rdtype: int, values: list[str], ttl: int | None) -> None:
        with self._lock:
            self._records[(_key(name), rdtype)] = (self.ttl if ttl is None else ttl, values)

    def txt(self, name: str, *values: str | bytes, ttl: int | None = None) -> None:
        """Replace the TXT records of ``name`` (one record per value)."""
        texts = [" ".join(_quote(c) for c in split_txt(v)) for v in values]
        self._set(name, dns.rdatatype.TXT, texts, ttl)

    def a(self, name: str, *addresses: str, ttl: int | None = None) -> None:
        self._set(name, dns.rdatatype.A, list(addresses), ttl)

    def aaaa(self, name: str, *addresses: str, ttl: int | None = None) -> None:
        self._set(name, dns.rdatatype.AAAA, list(addresses), ttl)

    def mx(self, name: str, *hosts: tuple[int, str], ttl: int | None = None) -> None:
        self._set(name, dns.rdatatype.MX, [f"{p} {_key(h)}" for p, h in hosts], ttl)

    def remove(self, name: str, rdtype: str | None = None) -> None:
        """Forget the records of ``name`` (of one type, or all)."""
        key = _key(name)
        with self._lock:
            for k in [k for k in self._records if k[0] == key]:
                if rdtype is None or k[1] == dns.rdatatype.from_text(rdtype):
                    del self._records[k]

    def _fail(self, how: str, name: str) -> None:
        with self._lock:
            self._failing.setdefault(how, set()).add(name if name == EVERY_NAME else _key(name))

    def _fails(self, how: str, key: str) -> bool:
        """Whether the answer for ``key`` (a name as :func:`_key` makes it) fails ``how``;
        the caller holds the lock."""
        names = self._failing.get(how, set())
        return EVERY_NAME in names or key in names

    def servfail(self, name: str = EVERY_NAME) -> None:
        """Answer SERVFAIL for ``name`` (or every name)."""
        self._fail("servfail", name)

    def refuse(self, name: str = EVERY_NAME) -> None:
        """Answer REFUSED for ``name`` (or every name)."""
        self._fail("refuse", name)

    def drop(self, name: str = EVERY_NAME) -> None:
        """Answer nothing for ``name`` (or every name): the client times out."""
        self._fail("drop", name)

    def garbage(self, name: str = EVERY_NAME) -> None:
        """Answer ``name`` (or every name) with the query's ID and random bytes."""
        self._fail("garbage", name)

    def truncate(self, name: str = EVERY_NAME) -> None:
        """Answer ``name`` (or every name) with the first half of the right answer."""
        self._fail("truncate", name)

    def mangling(self, qname: str) -> str:
        """How the answer to ``qname`` is broken on the wire: "garbage", "truncate" or ""."""
        key = _key(qname)
        with self._lock:
            for mode in ("garbage", "truncate"):
                if self._fails(mode, key):
                    return mode
        return ""

    def clear(self) -> None:
        """Forget every record and failure (between tests sharing one server)."""
        with self._lock:
            self._records.clear()
            self._failing.clear()
            self.queries.clear()
            self.tcp_queries.clear()

    # --- the records of mail authentication ---------------------------------------------
    def dkim(self, domain: str, selector: str, value: str, ttl: int | None = None) -> None:
        """Publish a DKIM key record (``v=DKIM1; k=...; p=...``) at SELECTOR._domainkey."""
        self.txt(f"{selector}._domainkey.{domain}", value, ttl=ttl)

    def dmarc(
        self, domain: str, record: str = "v=DMARC1; p=reject", ttl: int | None = None
    ) -> None:
        self.txt(f"_dmarc.{domain}", record, ttl=ttl)

    def spf(self, domain: str, record: str, ttl: int | None = None) -> None:
        self.txt(domain, record, ttl=ttl)

    def heal(self) -> None:
        """Answer normally again."""
        with self._lock:
            self._failing.clear()

    def answer(self, query: dns.message.Message) -> dns.message.Message | None:
        """The response to ``query`` (None: do not answer)."""
        response = dns.message.make_response(query)
        response.flags |= dns.flags.AA
        if not query.question:
            response.set_rcode(dns.rcode.FORMERR)
            return response
        question = query.question[0]
        qname = question.name.to_text().lower()
        with self._lock:
            self.queries.append((qname, dns.rdatatype.to_text(question.rdtype)))
            if self._fails("drop", qname):
                return None
            for how, rcode in (("servfail", dns.rcode.SERVFAIL), ("refuse", dns.rcode.REFUSED)):
                if self._fails(how, qname):
                    response.set_rcode(rcode)
                    return response
            found = self._records.get((qname, question.rdtype))
            exists = any(n == qname or n.endswith("." + qname) for n, _t in self._records)
        if found is not None:
            ttl, values = found
            rrset = dns.rrset.from_text_list(
                question.name, ttl, dns.rdataclass.IN, question.rdtype, values
            )
            response.answer.append(rrset)
            return response
        if not exists:
            response.set_rcode(dns.rcode.NXDOMAIN)
        soa = dns.rrset.from_text(
            ".",
            self.negative_ttl,
            dns.rdataclass.IN,
            dns.rdatatype.SOA,
            f"ns.test. hostmaster.test. 1 3600 600 86400 {self.negative_ttl}",
        )
        response.authority.append(soa)
        return response


def _wire(zone: Zone, data: bytes, max_size: int) -> bytes | None:
    try:
        query = dns.message.from_wire(data)
    except dns.exception.DNSException:
        return None
    if max_size > 512 and query.question:
        q = query.question[0]
        zone.tcp_queries.append((q.name.to_text().lower(), dns.rdatatype.to_text(q.rdtype)))
    response = zone.answer(query)
    if response is None:
        return None
    if query.edns >= 0:
        max_size = max(max_size, query.payload)
    mangling = zone.mangling(query.question[0].name.to_text()) if query.question else ""
    if mangling == "garbage":
        return data[:2] + os.urandom(random.randint(1, 200))
    if mangling == "truncate":
        whole = response.to_wire()
        return whole[: len(whole) // 2]
    try:
        return response.to_wire(max_size=max_size)
    except dns.exception.TooBig:
        # RFC 1035 §4.2.1: truncate; the client asks again over TCP
        truncated = dns.message.make_response(query)
        truncated.flags |= dns.flags.AA | dns.flags.TC
        return truncated.to_wire()


class _UdpHandler(socketserver.BaseRequestHandler):
    server: _UdpServer

    def handle(self) -> None:
        data, sock = self.request
        wire = _wire(self.server.zone, data, 512)
        if wire is not None:
            sock.sendto(wire, self.client_address)


class _TcpHandler(socketserver.BaseRequestHandler):
    server: _TcpServer

    def handle(self) -> None:
        conn: socket.socket = self.request
        conn.settimeout(30)
        try:
            while True:
                head = conn.recv(2, socket.MSG_WAITALL)
                if len(head) < 2:
                    return
                (length,) = struct.unpack("!H", head)
                data = conn.recv(length, socket.MSG_WAITALL)
                wire = _wire(self.server.zone, data, 65535)
                if wire is None:
                    continue  # say nothing: the client gives up on its own
                conn.sendall(struct.pack("!H", len(wire)) + wire)
        except OSError:
            return


class _UdpServer(socketserver.ThreadingMixIn, socketserver.UDPServer):
    daemon_threads = True
    zone: Zone


class _TcpServer(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True
    zone: Zone


class DnsServer:
    """The server: :meth:`start` binds a free port on 127.0.0.1 for UDP and TCP."""

    host = "127.0.0.1"

    def __init__(self, zone: Zone | None = None) -> None:
        self.zone = zone or Zone()
        self.port = 0
        self._servers: list[socketserver.BaseServer] = []
        self._threads: list[threading.Thread] = []

    def start(self) -> DnsServer:
        for _attempt in range(50):
            udp = _UdpServer((self.host, 0), _UdpHandler)
            port = udp.server_address[1]
            try:
                tcp = _TcpServer((self.host, port), _TcpHandler)
            except OSError:
                udp.server_close()
                continue
            break
        else:  # pragma: no cover - 50 taken ports in a row
            raise OSError("no free port for the test DNS server")
        udp.zone = tcp.zone = self.zone
        self.port = port
        self._servers = [udp, tcp]
        for server in self._servers:
            thread = threading.Thread(
                target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True
            )
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> None:
        for server in self._servers:
            server.shutdown()
            server.server_close()
        for thread in self._threads:
            thread.join(timeout=5)
        self._servers, self._threads = [], []

    def __enter__(self) -> DnsServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def nameservers(self) -> list[str]:
        return [self.host]

    def environ(self) -> dict[str, str]:
        """Settings (``[dns]`` by environment) that point an mtaplugin process here."""
        return {"MTAPLUGIN_DNS_NAMESERVERS": self.host, "MTAPLUGIN_DNS_PORT": str(self.port)}

    def resolver(self, timeout: float = 1.0, cache_size: int = 4096) -> Resolver:
        """A :class:`mtaplugin.mailauth.resolver.Resolver` that asks this server."""
        return Resolver(self.nameservers, self.port, timeout=timeout, cache_size=cache_size)


@contextmanager
def dns_server(zone: Zone | None = None) -> Iterator[DnsServer]:
    """A started :class:`DnsServer`, stopped on exit."""
    server = DnsServer(zone).start()
    try:
        yield server
    finally:
        server.stop()
