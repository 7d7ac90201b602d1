"""Speak a few words of each protocol to a listener, to see that the right server answers
(not just that something holds the socket): the milter's option negotiation, a socketmap
lookup, an LMTP greeting.  Each returns "" when the answer is right, else what went wrong
(in the protocol's own words: these are read together with a translated finding)."""

from __future__ import annotations

import socket
import struct

from mtaplugin.config import InetSocket, Socket, UnixSocket

TIMEOUT = 5.0
#: milter protocol version 6 (what Postfix and Sendmail speak), every action and step
_OPTNEG = struct.pack("!III", 6, 0x1FF, 0x1FFFFF)


def connect(sock: Socket, timeout: float = TIMEOUT) -> socket.socket:
    if isinstance(sock, UnixSocket):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout)
        try:
            s.connect(sock.path)
        except OSError:
            s.close()
            raise
        return s
    assert isinstance(sock, InetSocket)
    return socket.create_connection((sock.host, sock.port), timeout=timeout)


def _recv_exactly(s: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            break
        data += chunk
    return data


def milter(sock: Socket) -> str:
    """Negotiate options as the MTA does, then quit."""
    try:
        with connect(sock) as s:
            s.sendall(struct.pack("!I", 1 + len(_OPTNEG)) + b"O" + _OPTNEG)
            head = _recv_exactly(s, 4)
            if len(head) < 4:
                return "the connection was closed without an answer"
            (length,) = struct.unpack("!I", head)
            body = _recv_exactly(s, min(length, 4096))
            s.sendall(struct.pack("!I", 1) + b"Q")
    except OSError as exc:
        return str(exc)
    if not body.startswith(b"O"):
        return f"not a milter's answer: {body[:20]!r}"
    return ""


def _netstring(text: str) -> bytes:
    data = text.encode()
    return str(len(data)).encode() + b":" + data + b","


def socketmap(sock: Socket, request: str = "recipients check@mtaplugin.invalid") -> str:
    """One socketmap lookup; an ``OK`` or ``NOTFOUND`` answer is right."""
    try:
        with connect(sock) as s:
            s.sendall(_netstring(request))
            answer = b""
            while not answer.endswith(b",") and len(answer) < 10_000:
                chunk = s.recv(4096)
                if not chunk:
                    break
                answer += chunk
    except OSError as exc:
        return str(exc)
    text = answer.partition(b":")[2].rstrip(b",").decode(errors="replace")
    if text.startswith(("OK", "NOTFOUND")):
        return ""
    return text or "no answer"


def greeting(sock: Socket) -> str:
    """An SMTP/LMTP server's greeting: 220."""
    try:
        with connect(sock) as s:
            line = s.recv(512).decode(errors="replace")
            s.sendall(b"QUIT\r\n")
    except OSError as exc:
        return str(exc)
    return "" if line.startswith("220") else (line.strip() or "no greeting")


def accepts(sock: Socket) -> str:
    """Only that the server accepts a connection (the Exim query server's protocol asks
    for a whole query)."""
    try:
        with connect(sock):
            return ""
    except OSError as exc:
        return str(exc)
