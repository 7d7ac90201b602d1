"""Who is asking: the client's IP address behind the TLS proxy.

gunicorn leaves ``REMOTE_ADDR`` at the proxy's address, so every visitor would be
127.0.0.1 to the log-in limit.  ``X-Forwarded-For`` names the client, but anyone can send
that header: it is read only when the connection comes from a proxy named in
``[web] forwarded_allow_ips`` (the setting gunicorn's ``forwarded_allow_ips`` is set from),
and then from the right, skipping those proxies: the first other address is the one the
last trusted proxy saw (what a client wrote into the header itself is further left).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

import falcon

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def networks(values: Iterable[str]) -> tuple[Network, ...]:
    """The setting's addresses and networks (``10.0.0.0/8``; host bits allowed)."""
    return tuple(ipaddress.ip_network(v, strict=False) for v in values)


def _address(value: str) -> Address | None:
    try:
        found = ipaddress.ip_address(value.strip())
    except ValueError:
        return None
    if isinstance(found, ipaddress.IPv6Address) and found.ipv4_mapped is not None:
        return found.ipv4_mapped
    return found


def _trusted(ip: Address, proxies: tuple[Network, ...]) -> bool:
    return any(ip.version == net.version and ip in net for net in proxies)


def client_ip(req: falcon.Request, proxies: tuple[Network, ...]) -> str:
    """The client's address: the connection's, or, from a trusted proxy, the
    right-most address of ``X-Forwarded-For`` that is not a trusted proxy."""
    peer_text = req.remote_addr or ""
    peer = _address(peer_text)
    if peer is None:
        return peer_text
    if not _trusted(peer, proxies):
        return peer.compressed
    hops = [h for h in (req.get_header("X-Forwarded-For") or "").split(",") if h.strip()]
    for hop in reversed(hops):
        ip = _address(hop)
        if ip is None:
            break  # not written by a proxy of ours: believe nothing further left
        if not _trusted(ip, proxies):
            return ip.compressed
    return peer.compressed
