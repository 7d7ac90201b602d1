"""Where a template URI may be fetched from: public addresses, or hosts the site allows.

A list owner gives the URI of a footer or a notice (REST ``uris``, Postorius); the
``template-fetch`` job fetches it from the server's network, which is not the owner's.
Without a check, ``http://127.0.0.1:8001/3.1/addresses`` (the REST API), cloud metadata
(``169.254.169.254``) or an intranet server would answer, and the answer would be appended
to every post of the list.  So a fetch goes only to a **public** address: not loopback,
private (RFC 1918, ``fc00::/7``), shared (``100.64/10``), link-local, multicast,
unspecified or reserved, also when written as an IPv4-mapped, 6to4 or NAT64 IPv6 address.
The name is resolved once, every address it gives is checked, and the connection goes to
a checked address (no second resolution that could give another one: no DNS rebinding);
a redirect's target is checked again.

The site admin may allow a host that is not public by its name in
``[templates] allow_hosts`` (``"postorius.internal"``, or with a port,
``"127.0.0.1:8000"``): the name in the URI must be written the same way.  Credentials
(the template's user name and password) never go to a loopback address unless the
allowing entry names the port too: a host-only entry for ``127.0.0.1`` cannot carry
``restadmin``'s password to the REST API on another port of the same machine.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_NAT64 = ipaddress.ip_network("64:ff9b::/96")
DEFAULT_PORTS = {"http": 80, "https": 443}
_UNRESOLVED = "the host name does not resolve"


class Refused(Exception):
    """The URI's host may not be fetched from (the message is its category, in English,
    and names no resolved address or error number; ``kind`` says which)."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        #: "uri" (not http(s), no host, a bad port), "resolve" or "address"
        self.kind = kind


@dataclass(frozen=True)
class Destination:
    host: str
    port: int
    #: (family, socket address) to connect to, in order: all of them were checked
    addresses: tuple[tuple[int, tuple[object, ...]], ...]
    #: credentials may go there
    credentials: bool


def is_public(ip: IpAddress) -> bool:
    """Whether ``ip`` is an address of the public internet."""
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour
        if embedded is None and ip in _NAT64:
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if embedded is not None and not is_public(embedded):
            return False
    return ip.is_global and not (
        ip.is_loopback
        or ip.is_private
        or ip.is_link_local
        or ip.is_multicast
        or ip.is_unspecified
        or ip.is_reserved
    )


def _entry(entry: str) -> tuple[str, int | None]:
    """An ``allow_hosts`` entry as (host, port or None)."""
    parts = urlsplit("//" + entry.strip())
    try:
        port = parts.port
    except ValueError:
        port = None
    return (parts.hostname or "").lower(), port


def allowance(host: str, port: int, allow_hosts: Sequence[str]) -> str:
    """``"port"`` when an entry names ``host`` and ``port``, ``"host"`` when one names the
    host alone, ``""`` when none allows it."""
    found = ""
    for entry in allow_hosts:
        name, named_port = _entry(entry)
        if name != host.lower():
            continue
        if named_port == port:
            return "port"
        if named_port is None:
            found = "host"
    return found


def _address(sockaddr: tuple[object, ...]) -> IpAddress:
    return ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])


def resolve(host: str, port: int) -> list[tuple[int, tuple[object, ...]]]:
    """Every (family, socket address) ``host`` resolves to; :class:`Refused` when none."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise Refused(_UNRESOLVED, "resolve") from None
    addresses: list[tuple[int, tuple[object, ...]]] = []
    for family, _type, _proto, _name, sockaddr in found:
        if family in (socket.AF_INET, socket.AF_INET6) and (family, sockaddr) not in addresses:
            addresses.append((family, tuple(sockaddr)))
    if not addresses:
        raise Refused(_UNRESOLVED, "resolve")
    return addresses


def _host_port(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = parts.hostname or ""
    try:
        port = parts.port or DEFAULT_PORTS.get(scheme, 0)
    except ValueError:
        raise Refused("not a valid port", "uri") from None
    if scheme not in DEFAULT_PORTS or not host:
        raise Refused("not an http or https URI", "uri")
    return host, port


def destination(
    url: str, allow_hosts: Sequence[str], with_credentials: bool = False
) -> Destination:
    """Where to connect for ``url``, checked; :class:`Refused` when it may not be fetched."""
    host, port = _host_port(url)
    allowed = allowance(host, port, allow_hosts)
    addresses = resolve(host, port)
    ips = [_address(sockaddr) for _family, sockaddr in addresses]
    if not allowed and not all(is_public(ip) for ip in ips):
        raise Refused("not a public address (templates.allow_hosts may allow it)", "address")
    loopback = any(ip.is_loopback or ip.is_unspecified for ip in ips)
    credentials = with_credentials and (not loopback or allowed == "port")
    return Destination(host, port, tuple(addresses), credentials)


def owner_problem(uri: str, allow_hosts: Sequence[str]) -> str | None:
    """Why a list owner may not set ``uri`` (its variables filled in): the
    :attr:`Refused.kind`, or None when the host is allowed or resolves to public
    addresses only."""
    try:
        host, port = _host_port(uri)
        if not allowance(host, port, allow_hosts):
            destination(uri, allow_hosts)
    except Refused as exc:
        return exc.kind
    return None
