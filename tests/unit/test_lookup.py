"""mtaplugin.frontends.socketmap: Postfix's socketmap protocol, over a real unix socket."""

from __future__ import annotations

import grp
import os
import socket
import socketserver
import sqlite3
import stat
import threading
from pathlib import Path

import pytest
from sqlalchemy import event
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin import config, wiring
from mtaplugin.errors import ConfigError
from mtaplugin.frontends.socketmap import serve
from mtaplugin.frontends.sockets import open_to_mta
from mtaplugin.manage import domains
from mtaplugin.manage.alias_domains import AliasRules
from mtaplugin.testing import wait_for

#: the site admin, who may set an alias domain
ADMIN = AliasRules(site_admin=True)


def ask(path: Path, *requests: str) -> list[bytes]:
    """Send netstring requests on one connection, as Postfix does; return the replies."""
    replies = []
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(str(path))
        f = s.makefile("rwb")
        for req in requests:
            data = req.encode()
            f.write(str(len(data)).encode() + b":" + data + b",")
            f.flush()
            length = b""
            while (ch := f.read(1)) != b":":
                length += ch
            replies.append(f.read(int(length)))
            assert f.read(1) == b","
    return replies


def start(tmp_path: Path, db_url: str, **env: str) -> Path:
    path = tmp_path / "lookup.sock"
    settings = config.load(
        environ={
            "MTAPLUGIN_DATABASE_URL": db_url,
            "MTAPLUGIN_LOOKUP_SOCKET": f"unix:{path}",
            "MTAPLUGIN_DATABASE_TIMEOUT": "0.5",
            **env,
        }
    )
    threading.Thread(target=serve, args=(wiring.build(settings),), daemon=True).start()
    wait_for(lambda: listening(path))  # the file appears at bind(), before listen()
    return path


def listening(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(path))
        except OSError:
            return False
    return True


@pytest.fixture
def server(tmp_path: Path, db_url: str) -> Path:
    return start(tmp_path, db_url)


def test_an_alias_domain_is_a_list_domain(server: Path, sessions: sessionmaker[Session]):
    with sessions.begin() as s:
        domains.update(
            s, domains.create(s, "example.net"), alias_domain="lists.example.net", rules=ADMIN
        )
    assert ask(server, "domains lists.example.net", "domains example.net") == [
        b"OK lists.example.net",
        b"OK example.net",
    ]


def test_domains_map(server: Path, sessions: sessionmaker[Session]):
    with sessions.begin() as s:
        domains.create(s, "lists.example.org")
    assert ask(
        server, "domains lists.example.org", "domains LISTS.Example.org.", "domains x.test"
    ) == [
        b"OK lists.example.org",
        b"OK lists.example.org",
        b"NOTFOUND ",
    ]


def test_recipients_map_lets_list_mail_go_on_while_mtaplugin_answers(server: Path):
    # DUNNO: an access-table action (go on with the next restriction), whatever address
    assert ask(server, "recipients team@lists.example.org", "recipients x@y.test") == [
        b"OK DUNNO",
        b"OK DUNNO",
    ]


def test_unknown_map_is_a_permanent_error(server: Path):
    assert ask(server, "aliases postmaster")[0].startswith(b"PERM ")


@pytest.mark.parametrize(
    ("request_", "words"),
    [
        ("recipients team@lists.example.org", b"TEMP "),  # Postfix defers the recipient
        ("domains lists.example.org", b"locked"),
    ],
    ids=["recipients", "domains"],
)
def test_a_locked_database_gives_temp(
    tmp_path: Path, sqlite_url: str, request_: str, words: bytes
) -> None:
    """A database that cannot answer (SQLite locked by another writer) is TEMP, naming it."""
    server = start(tmp_path, sqlite_url)
    conn = sqlite3.connect(sqlite_url.split("///", 1)[1], isolation_level=None)
    conn.execute("BEGIN EXCLUSIVE")
    try:
        (reply,) = ask(server, request_)
    finally:
        conn.execute("ROLLBACK")
    assert reply.startswith(b"TEMP ") and words in reply


@pytest.mark.parametrize(
    ("env", "mode"),
    [
        ({}, 0o660),
        ({"MTAPLUGIN_MILTER_SOCKET_MODE": "0o640"}, 0o640),
        ({"MTAPLUGIN_MILTER_SOCKET_MODE": "0o640", "MTAPLUGIN_LOOKUP_SOCKET_MODE": "0o600"}, 0o600),
    ],
)
def test_the_socket_gets_its_own_mode_or_the_milters(
    tmp_path: Path, db_url: str, env: dict[str, str], mode: int
):
    (tmp_path / "lookup.sock").write_text("left by a process that died")
    server = start(tmp_path, db_url, **env)

    def answers() -> bool:
        try:  # the stale file is replaced by the socket, which answers once served
            return ask(server, "domains x.test") == [b"NOTFOUND "]
        except OSError:
            return False

    wait_for(answers)  # served only after the socket got its mode
    assert stat.S_IMODE(os.stat(server).st_mode) == mode


@pytest.mark.parametrize(
    ("group", "expected"),
    [("postfix", "postfix"), ("no-such-group-here", None)],
    ids=["the-mtas-group", "missing-group-keeps-the-processes"],
)
def test_the_socket_gets_the_mtas_group_or_keeps_the_processes(
    tmp_path: Path, db_url: str, group: str, expected: str | None
):
    if expected is not None:
        try:
            want = grp.getgrnam(expected).gr_gid
        except KeyError:
            pytest.skip(f"no group {expected} on this machine")
    else:
        want = os.getegid()
    server = start(tmp_path, db_url, MTAPLUGIN_LOOKUP_SOCKET_GROUP=group)

    def answers() -> bool:
        try:
            return ask(server, "domains x.test") == [b"NOTFOUND "]
        except OSError:
            return False

    wait_for(answers)
    st = os.stat(server)
    assert (st.st_gid, stat.S_IMODE(st.st_mode)) == (want, 0o660)
    assert not st.st_mode & stat.S_IWOTH


def test_a_group_the_process_may_not_use_is_refused_naming_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Only root or a member may give a file a group: the kernel's EPERM (simulated here:
    the tests run as root) becomes a ConfigError naming the setting."""
    try:
        grp.getgrnam("postfix")
    except KeyError:
        pytest.skip("no group postfix on this machine")
    settings = config.load(
        environ={
            "MTAPLUGIN_LOOKUP_SOCKET": f"unix:{tmp_path / 'l.sock'}",
            "MTAPLUGIN_LOOKUP_SOCKET_GROUP": "postfix",
        }
    )
    (tmp_path / "l.sock").write_text("")

    def refused(path: str, uid: int, gid: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "chown", refused)
    with pytest.raises(ConfigError) as bad:
        open_to_mta(settings.lookup.socket)
    assert bad.value.key == "lookup.socket_group"
    assert config.load(environ={}).lookup.socket.group_key == "milter.socket_group"


def test_each_domain_is_asked_once_in_a_while_not_once_a_copy(
    sessions: sessionmaker[Session], db_url: str
):
    """A post's copies make Postfix ask for every member's domain: each distinct domain
    costs one query until its answer is DOMAINS_FRESH old.  A domain never asked before
    is looked up at once: a new list domain relays at once."""
    from mtaplugin.db import make_engine
    from mtaplugin.frontends.socketmap import answer
    from mtaplugin.lists.domain_set import ListDomains

    engine = make_engine(db_url)
    reads: list[int] = []
    event.listen(engine, "before_cursor_execute", lambda *a: reads.append(1))
    now = [100.0]
    known = ListDomains(engine, fresh=5.0, monotonic=lambda: now[0])
    with sessions.begin() as s:
        domains.create(s, "lists.example.org")
    asked = [f"domains example{i % 3}.net" for i in range(60)] + ["domains LISTS.example.org"]
    assert {answer(engine, r, known) for r in asked} == {"NOTFOUND ", "OK lists.example.org"}
    assert len(reads) == 4  # three member domains, one list domain
    with sessions.begin() as s:
        domains.create(s, "new.example.org")
        domains.create(s, "example0.net")
    reads.clear()
    # never asked before: at once
    assert answer(engine, "domains new.example.org", known) == "OK new.example.org"
    # asked a moment ago: the kept answer, until it is DOMAINS_FRESH old
    now[0] += 4.9
    assert answer(engine, "domains example0.net", known) == "NOTFOUND "
    now[0] += 0.1
    assert answer(engine, "domains example0.net", known) == "OK example0.net"
    assert len(reads) == 2
    engine.dispose()


def test_the_domains_map_is_temp_when_a_domain_must_be_asked_and_cannot(sqlite_url: str):
    from mtaplugin.db import make_engine
    from mtaplugin.frontends.socketmap import answer
    from mtaplugin.lists.domain_set import ListDomains

    engine = make_engine(sqlite_url, timeout=0.2)
    known = ListDomains(engine)
    conn = sqlite3.connect(sqlite_url.split("///", 1)[1], isolation_level=None)
    conn.execute("BEGIN EXCLUSIVE")
    try:
        assert answer(engine, "domains lists.example.org", known).startswith("TEMP ")
    finally:
        conn.execute("ROLLBACK")
    assert answer(engine, "domains lists.example.org", known) == "NOTFOUND "
    engine.dispose()


@pytest.mark.parametrize("front_end", ["socketmap", "exim"])
def test_a_burst_of_connections_waits_in_the_listen_queue(tmp_path: Path, front_end: str):
    """Postfix's processes open their socketmap connections in bursts under load: the
    lookup server's listen queue holds them until its thread accepts each (socketserver's
    default of 5 refused the sixth with EAGAIN, which Postfix answers "451 Temporary lookup
    failure").  The server here accepts nothing; 64 connections still get in."""
    from types import SimpleNamespace

    from mtaplugin.db import make_engine
    from mtaplugin.frontends import exim, socketmap

    db = make_engine(f"sqlite:///{tmp_path}/unused.db")
    path = str(tmp_path / "lookup.sock")
    server: socketserver.UnixStreamServer
    if front_end == "socketmap":
        server = socketmap._Server(path, db)
    else:
        server = exim._Server(path, SimpleNamespace(db=db), 1000)  # type: ignore[arg-type]
    clients = []
    try:
        for _ in range(64):
            client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            client.setblocking(False)
            clients.append(client)
            client.connect(path)  # BlockingIOError (EAGAIN) when the queue is full
    finally:
        for client in clients:
            client.close()
        server.server_close()
        db.dispose()
