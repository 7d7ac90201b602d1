"""Malformed input on raw sockets against the real processes of the Postfix lab: the
milter (its protocol spoken by hand: truncated packets, wrong and huge lengths, garbage,
a client that hangs up mid-body), Postfix's smtpd in front of it (huge lines, truncated
commands, a whole transaction pipelined at once, 10 000 RCPTs, a hang-up in DATA) and the
REST server (garbage HTTP).  After each: the process still runs, and a normal post still
reaches the members, once."""

from __future__ import annotations

import contextlib
import re
import socket
import struct
import time
from collections.abc import Callable, Iterator
from urllib.request import Request, urlopen

import pytest
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.db import make_engine, sessionmaker_for
from mtaplugin.model import MailingList
from mtaplugin.testing.lab import Lab
from tests.helpers import make_post, unique
from tests.integration.conftest import LabPool
from tests.integration.labs import copies, make_list, waits

MEMBERS = ("hana@example.org", "ivo@example.org")


@pytest.fixture(scope="module")
def lab(lab_pool: LabPool) -> Lab:
    """The Postfix lab on SQLite (the sockets do not depend on the database)."""
    return lab_pool.of("postfix-milter", "sqlite", Lab)


@pytest.fixture(scope="module")
def sessions(lab: Lab) -> Iterator[sessionmaker[Session]]:
    engine = make_engine(lab.database_url)
    yield sessionmaker_for(engine)
    engine.dispose()


@pytest.fixture(scope="module")
def mlist(sessions: sessionmaker[Session]) -> MailingList:
    with sessions() as db:
        return make_list(db, *MEMBERS)


def still_serves(lab: Lab, mlist: MailingList) -> None:
    """The mtaplugin process runs, and a member's post reaches every member once."""
    assert lab.process is not None and lab.process.poll() is None, lab.log()[-3000:]
    marker = unique("alive")
    post = make_post(MEMBERS[0], mlist.posting_address, body=f"still here {marker}\n")
    assert lab.send(MEMBERS[0], [mlist.posting_address], post) is None
    waits(lab, lambda: all(copies(lab, marker, m) >= 1 for m in MEMBERS), timeout=60)
    time.sleep(0.5)
    assert [copies(lab, marker, m) for m in MEMBERS] == [1, 1]


# --- the milter, spoken by hand -------------------------------------------------------------
def packet(command: bytes, data: bytes = b"") -> bytes:
    """One milter packet: a 4-byte length (command + data), the command, the data."""
    return struct.pack(">I", len(data) + 1) + command + data


#: option negotiation: protocol version 6, every action, every protocol step offered
OPTNEG = packet(b"O", struct.pack(">III", 6, 0x1FF, 0x1FFFFF))
CONNECT = packet(b"C", b"client.example\x004\x30\x39127.0.0.1\x00")
HELO = packet(b"H", b"client.example\x00")


def milter(lab: Lab) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(10)
    sock.connect(str(lab.socket))
    return sock


#: the milter's final answers: accept, continue, reject, tempfail, discard, reply code
FINAL = {b"a", b"c", b"r", b"t", b"d", b"y"}


def read_packets(sock: socket.socket, wanted: int = 1, final: bool = False) -> list[bytes]:
    """Up to ``wanted`` reply packets (command byte + data), or up to the first final
    answer (``final``); fewer if the milter hangs up."""
    out: list[bytes] = []
    buf = b""
    try:
        while len(out) < wanted and not (final and out and out[-1][:1] in FINAL):
            while len(buf) >= 4 and len(buf) >= 4 + struct.unpack(">I", buf[:4])[0]:
                size = struct.unpack(">I", buf[:4])[0]
                out.append(buf[4 : 4 + size])
                buf = buf[4 + size :]
            if len(out) >= wanted or (final and out and out[-1][:1] in FINAL):
                break
            chunk = sock.recv(65536)
            if not chunk:
                break
            buf += chunk
    except OSError:
        pass
    return out


def transaction_head(mlist: MailingList) -> bytes:
    return b"".join(
        [
            CONNECT,
            HELO,
            packet(b"M", b"<hana@example.org>\x00"),
            packet(b"R", f"<{mlist.posting_address}>\x00".encode()),
            packet(b"L", b"From\x00hana@example.org\x00"),
            packet(b"L", f"To\x00{mlist.posting_address}\x00".encode()),
            packet(b"L", b"Subject\x00half a post\x00"),
            packet(b"N"),
        ]
    )


def send_and_close(lab: Lab, *chunks: bytes, negotiate: bool = True) -> list[bytes]:
    with milter(lab) as sock:
        replies: list[bytes] = []
        if negotiate:
            sock.sendall(OPTNEG)
            replies += read_packets(sock)
        for chunk in chunks:
            try:
                sock.sendall(chunk)
            except OSError:
                break  # the milter hung up on us: that is an answer too
        sock.settimeout(2)
        replies += read_packets(sock, 2)
    return replies


MILTER_ABUSE: dict[str, Callable[[MailingList], list[bytes]]] = {
    "garbage": lambda m: [b"\x00\xff" * 5000],
    "zero-length packet": lambda m: [b"\x00\x00\x00\x00"],
    "huge length, then nothing": lambda m: [b"\x7f\xff\xff\xffB"],
    "huge length, some body": lambda m: [transaction_head(m), b"\x40\x00\x00\x00B" + b"x" * 4096],
    "truncated packet": lambda m: [struct.pack(">I", 100) + b"C" + b"short"],
    "unknown command": lambda m: [packet(b"Z", b"what"), packet(b"\x00")],
    "connect without NULs": lambda m: [packet(b"C", b"x" * 300)],
    "mail without a transaction": lambda m: [packet(b"M", b"<a@b>\x00"), packet(b"E")],
    "rcpt without mail": lambda m: [packet(b"R", f"<{m.posting_address}>\x00".encode())],
    "header without value": lambda m: [transaction_head(m)[:-5], packet(b"L", b"X-No-Value")],
    "disconnect mid-body": lambda m: [transaction_head(m), packet(b"B", b"half a bo")],
    "end of body, no reply read": lambda m: [
        transaction_head(m),
        packet(b"B", b"a whole body\r\n"),
        packet(b"E"),
    ],
    "macros in a flood": lambda m: [packet(b"D", b"C" + b"{x}\x00y\x00" * 5000)],
}


@pytest.mark.parametrize("abuse", sorted(MILTER_ABUSE))
def test_the_milter_survives_malformed_protocol(lab: Lab, mlist: MailingList, abuse: str):
    send_and_close(lab, *MILTER_ABUSE[abuse](mlist), negotiate=abuse != "garbage")
    still_serves(lab, mlist)


def test_the_milter_survives_many_connections_dropped_at_once(lab: Lab, mlist: MailingList):
    socks = []
    for _ in range(50):
        sock = milter(lab)
        sock.sendall(OPTNEG + transaction_head(mlist))
        socks.append(sock)
    for sock in socks:
        sock.close()
    still_serves(lab, mlist)


def test_a_hand_made_transaction_gets_an_answer(lab: Lab, mlist: MailingList) -> None:
    """The hand-spoken protocol is right: a whole transaction gets the milter's edits and
    an accept (so the abuse above was refused by the milter, not by our own mistakes)."""
    with milter(lab) as sock:
        sock.sendall(OPTNEG)
        assert read_packets(sock)[0][:1] == b"O"
        sock.sendall(transaction_head(mlist) + packet(b"B", b"hello\r\n") + packet(b"E"))
        replies = read_packets(sock, 1000, final=True)
    assert replies, "no reply to end of body"
    # modifications (h/m/+/-/...) then the final answer: accept or continue
    assert replies[-1][:1] in (b"a", b"c"), replies


# --- Postfix's smtpd, with the milter behind it ----------------------------------------------
def smtp(lab: Lab) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", lab.smtp_port), timeout=30)
    sock.recv(4096)  # the greeting
    return sock


def read_replies(sock: socket.socket, timeout: float = 10) -> bytes:
    sock.settimeout(timeout)
    out = b""
    try:
        while chunk := sock.recv(65536):
            out += chunk
            if out.endswith(b"\r\n") and b"221 " in out:
                break
    except OSError:
        pass
    return out


SMTP_ABUSE: dict[str, Callable[[MailingList], bytes]] = {
    "a 100 KiB line": lambda m: b"EHLO " + b"x" * 100_000 + b"\r\n",
    "truncated command": lambda m: b"EHLO client.example\r\nMAIL FROM:<hana@exa",
    "garbage": lambda m: bytes(range(256)) * 20,
    "a 1 MiB header line in DATA": lambda m: (
        b"EHLO client.example\r\nMAIL FROM:<hana@example.org>\r\n"
        + f"RCPT TO:<{m.posting_address}>\r\nDATA\r\n".encode()
        + b"Subject: "
        + b"y" * 1_048_576
        + b"\r\n\r\nbody\r\n.\r\nQUIT\r\n"
    ),
    "disconnect in DATA": lambda m: (
        b"EHLO client.example\r\nMAIL FROM:<hana@example.org>\r\n"
        + f"RCPT TO:<{m.posting_address}>\r\nDATA\r\n".encode()
        + b"From: hana@example.org\r\nSubject: cut\r\n\r\nhalf a bo"
    ),
    "NUL bytes and bare LF in DATA": lambda m: (
        b"EHLO client.example\r\nMAIL FROM:<hana@example.org>\r\n"
        + f"RCPT TO:<{m.posting_address}>\r\nDATA\r\n".encode()
        + b"From: hana@example.org\nSubject: \x00nul\r\n\r\nbody\x00\n.\nmore\r\n.\r\nQUIT\r\n"
    ),
}


@pytest.mark.parametrize("abuse", sorted(SMTP_ABUSE))
def test_smtpd_and_the_milter_survive_malformed_smtp(lab: Lab, mlist: MailingList, abuse: str):
    with smtp(lab) as sock:
        with contextlib.suppress(OSError):
            sock.sendall(SMTP_ABUSE[abuse](mlist))
        read_replies(sock, 3)
    still_serves(lab, mlist)


def test_a_whole_transaction_pipelined_at_once(lab: Lab, mlist: MailingList) -> None:
    """Everything in one write, the message before the 354: Postfix either takes it
    (PIPELINING) or refuses the improper pipelining; the members never get it twice."""
    marker = unique("pipelined")
    post = make_post(MEMBERS[0], mlist.posting_address, body=f"{marker}\n")
    burst = (
        b"EHLO client.example\r\nMAIL FROM:<hana@example.org>\r\n"
        + f"RCPT TO:<{mlist.posting_address}>\r\n".encode()
        + b"DATA\r\n"
        + post.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
        + b"\r\n.\r\nQUIT\r\n"
    )
    with smtp(lab) as sock:
        sock.sendall(burst)
        replies = read_replies(sock)
    if b"\r\n250 2.0.0 Ok: queued" in replies or b"250 2.0.0" in replies.split(b"354")[-1]:
        waits(lab, lambda: all(copies(lab, marker, m) for m in MEMBERS), timeout=180)
    time.sleep(1)
    assert all(copies(lab, marker, m) <= 1 for m in MEMBERS)
    still_serves(lab, mlist)


@pytest.mark.parametrize("count", [900, 10_000])
def test_a_flood_of_rcpts_to_the_list_gives_one_copy_each(
    lab: Lab, mlist: MailingList, count: int
) -> None:
    """The list's address ``count`` times, pipelined.  Under Postfix's recipient limit
    (1000) every RCPT is taken and each member still gets the post once; over it Postfix
    answers 452 and, at its error limit, hangs up: the milter lives on."""
    marker = unique("rcpts")
    post = make_post(MEMBERS[0], mlist.posting_address, body=f"{marker}\n")
    rcpts = f"RCPT TO:<{mlist.posting_address}>\r\n".encode() * count
    answer = b""
    with smtp(lab) as sock:
        sock.sendall(b"EHLO client.example\r\nMAIL FROM:<hana@example.org>\r\n")
        got = b""
        sock.settimeout(120)
        with contextlib.suppress(OSError):
            sock.sendall(rcpts)
            while got.count(b"\r\n") < count + 2 and (chunk := sock.recv(65536)):
                got += chunk
        if count < 1000:
            assert got.count(b"250 2.1.5") == count, got[-2000:]
            sock.sendall(b"DATA\r\n")
            assert sock.recv(4096).startswith(b"354")
            sock.sendall(post.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n") + b"\r\n.\r\n")
            answer = sock.recv(4096)
            sock.sendall(b"QUIT\r\n")
    if count < 1000:
        assert answer.startswith(b"250"), answer
        waits(lab, lambda: all(copies(lab, marker, m) for m in MEMBERS), timeout=180)
        time.sleep(1)
        assert [copies(lab, marker, m) for m in MEMBERS] == [1, 1]
    still_serves(lab, mlist)


# --- the REST server --------------------------------------------------------------------------
HTTP_ABUSE = {
    "garbage": bytes(range(256)) * 40,
    "a 64 KiB request line": b"GET /3.1/" + b"a" * 65536 + b" HTTP/1.1\r\n\r\n",
    "headers never end": b"GET /3.1/system HTTP/1.1\r\nHost: x\r\nX-A: " + b"b" * 10000,
    "a body shorter than its length": (
        b"POST /3.1/lists HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b'Content-Length: 100000\r\n\r\n{"fqdn_listname": '
    ),
    "broken chunked body": (
        b"POST /3.1/lists HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nab\r\n"
    ),
    "a query string of NULs": (
        b"GET /3.1/lists?count=%00%ff&page=\xff\xfe HTTP/1.1\r\nHost: x\r\n\r\n"
    ),
    "HTTP/0.9": b"GET /\r\n",
    "ten thousand headers": b"GET /3.1/system HTTP/1.1\r\n" + b"X-H: v\r\n" * 10000 + b"\r\n",
}


def api_answers(lab: Lab) -> int:
    with urlopen(Request(f"http://127.0.0.1:{lab.api_port}/3.1/system/versions"), timeout=20) as r:
        return int(r.status)


@pytest.mark.parametrize("abuse", sorted(HTTP_ABUSE))
def test_the_rest_server_survives_garbage_http(lab: Lab, mlist: MailingList, abuse: str):
    with socket.create_connection(("127.0.0.1", lab.api_port), timeout=10) as sock:
        try:
            sock.sendall(HTTP_ABUSE[abuse])
            sock.settimeout(3)
            answer = sock.recv(4096)
        except OSError:
            answer = b""
    assert not answer.startswith(b"HTTP/1.1 5") or answer.startswith(
        (b"HTTP/1.1 501", b"HTTP/1.1 505")
    ), answer[:300]
    try:
        status = api_answers(lab)
    except OSError as exc:  # 401 without a credential is an answer
        status = getattr(exc, "code", 0)
    assert status in (200, 401)
    still_serves(lab, mlist)


# --- the LMTP listener (Exim's path; the Debian Postfix lab runs it) -----------------------
@pytest.fixture(scope="module")
def lmtp_lab(lab_pool: LabPool) -> Lab:
    return lab_pool.of("postfix-debian", "sqlite", Lab)


@pytest.fixture(scope="module")
def lmtp_list(lmtp_lab: Lab) -> MailingList:
    engine = make_engine(lmtp_lab.database_url)
    with sessionmaker_for(engine)() as db:
        mlist = make_list(db, *MEMBERS)
    engine.dispose()
    return mlist


_FINAL_LINE = re.compile(rb"(?:^|\r\n)\d{3} [^\r\n]*\r\n$")


def reply(sock: socket.socket) -> bytes:
    """One whole (SMTP/LMTP) reply, however the server's writes were split: up to its
    final line (``250 ...``, after any ``250-...`` lines)."""
    out = b""
    while not _FINAL_LINE.search(out):
        chunk = sock.recv(4096)
        if not chunk:
            break
        out += chunk
    return out


def lmtp(lab: Lab) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(60)
    sock.connect(str(lab.lmtp_socket))
    reply(sock)  # the greeting
    return sock


def lmtp_post_is_taken(lab: Lab, mlist: MailingList) -> None:
    """A whole LMTP transaction for the list: its recipient gets its own 250, and every
    member a copy."""
    assert lab.process is not None and lab.process.poll() is None, lab.log()[-3000:]
    marker = unique("lmtp")
    post = make_post(MEMBERS[0], mlist.posting_address, body=f"{marker}\n")
    post = post.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    with lmtp(lab) as sock:
        for line in (
            b"LHLO client.example\r\n",
            f"MAIL FROM:<{MEMBERS[0]}>\r\n".encode(),
            f"RCPT TO:<{mlist.posting_address}>\r\n".encode(),
            b"DATA\r\n",
        ):
            sock.sendall(line)
            answer = reply(sock)
            assert answer[:1] in (b"2", b"3"), (line, answer)
        sock.sendall(post + b"\r\n.\r\n")
        answer = reply(sock)
        assert answer.startswith(b"250"), answer
        sock.sendall(b"QUIT\r\n")
    waits(lab, lambda: all(copies(lab, marker, m) for m in MEMBERS), timeout=180)


LMTP_ABUSE: dict[str, Callable[[MailingList], bytes]] = {
    "a 100 KiB line": lambda m: b"LHLO " + b"x" * 100_000 + b"\r\n",
    "garbage": lambda m: bytes(range(256)) * 20,
    "truncated command": lambda m: b"LHLO client.example\r\nMAIL FROM:<hana@exa",
    "EHLO instead of LHLO, then DATA": lambda m: b"EHLO x\r\nDATA\r\n.\r\n",
    "disconnect in DATA": lambda m: (
        b"LHLO client.example\r\nMAIL FROM:<hana@example.org>\r\n"
        + f"RCPT TO:<{m.posting_address}>\r\nDATA\r\n".encode()
        + b"From: hana@example.org\r\nSubject: cut\r\n\r\nhalf a bo"
    ),
    "a whole transaction in one write": lambda m: (
        b"LHLO client.example\r\nMAIL FROM:<hana@example.org>\r\n"
        # 50, not more: each recipient is a held post and a notice to the moderators,
        # and the normal post after it waits in Postfix's queue behind those notices
        + f"RCPT TO:<{m.posting_address}>\r\n".encode() * 50
        + b"DATA\r\nFrom: hana@example.org\r\nSubject: \x00\r\n\r\nbody\r\n.\r\nQUIT\r\n"
    ),
}


@pytest.mark.parametrize("abuse", sorted(LMTP_ABUSE))
def test_the_lmtp_listener_survives_malformed_lmtp(
    lmtp_lab: Lab, lmtp_list: MailingList, abuse: str
) -> None:
    with lmtp(lmtp_lab) as sock:
        with contextlib.suppress(OSError):
            sock.sendall(LMTP_ABUSE[abuse](lmtp_list))
        read_replies(sock, 3)
    lmtp_post_is_taken(lmtp_lab, lmtp_list)
