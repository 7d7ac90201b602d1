"""``mtaplugin check``, one check at a time, against real pieces: unix socket files with
their modes, SQLite files at an older migration, a loopback DNS server with and without
the DKIM record, Postfix's own ``postconf`` on written configuration files, and an SMTP
listener that does or does not refuse an unknown list address at RCPT."""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, Envelope
from aiosmtpd.smtp import Session as SmtpSession
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin import config, wiring
from mtaplugin.check import Level, Options, access, database, names, postfix, reinjection
from mtaplugin.check.probes import milter, socketmap
from mtaplugin.check.sockets import check_socket
from mtaplugin.cli import main
from mtaplugin.config import UnixSocket, postconf
from mtaplugin.config.postconf import Postfix
from mtaplugin.db import make_engine, upgrade
from mtaplugin.mailauth import signing
from mtaplugin.manage import dkim, domains
from mtaplugin.testing import free_port
from mtaplugin.testing.dns import DnsServer
from tests.helpers import unique

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="chown to root and postfix")


@pytest.fixture
def pf() -> access.User:
    """The MTA's user (Postfix's ``postfix``): skipped on a machine without one."""
    found = access.user("postfix")
    if found is None:
        pytest.skip("no user postfix on this machine")
    return found


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A directory with a short path (a unix socket's path is at most 107 bytes)."""
    import tempfile

    d = Path(tempfile.mkdtemp(prefix="ck", dir="/tmp"))
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _bound(path: Path, mode: int, group: str | None = None) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(path))
    os.chmod(path, mode)
    if group:
        shutil.chown(path, group=group)
    return s


# --- sockets ---------------------------------------------------------------------------


@needs_root
def test_a_socket_the_mtas_user_cannot_open_is_named_with_its_mode_and_the_fix(
    short_dir: Path, pf: access.User
) -> None:
    path = short_dir / "milter.sock"
    with _bound(path, 0o600):
        os.chown(path, 0, 0)
        [found] = check_socket("milter", UnixSocket(str(path)), milter, pf)
    assert found.level == Level.error
    assert found.check == "milter.socket"
    assert str(path) in found.found and "0600" in found.found and "root:root" in found.found
    assert "postfix" in found.found
    assert f"chmod 0660 {path}" in found.fix and f"chgrp postfix {path}" in found.fix


@needs_root
def test_a_socket_open_to_the_mtas_group_passes_the_permission_check(
    short_dir: Path, pf: access.User
) -> None:
    path = short_dir / "milter.sock"
    with _bound(path, 0o660, "postfix"):
        assert access.blocker(pf, path, access.WRITE) is None
        # bound but nobody listening: the permissions pass, the probe finds no milter
        [found] = check_socket("milter", UnixSocket(str(path)), milter, pf)
    assert found.level == Level.error and "no answer" in found.found


@needs_root
def test_a_directory_above_the_socket_that_the_mta_cannot_search_is_named(
    short_dir: Path, pf: access.User
) -> None:
    closed = short_dir / "closed"
    closed.mkdir(mode=0o700)
    path = closed / "m.sock"
    with _bound(path, 0o660, "postfix"):
        [found] = check_socket("milter", UnixSocket(str(path)), milter, pf)
    assert found.level == Level.error
    assert f"{closed} (mode 0700" in found.found


def test_a_socket_every_user_may_write_is_an_error(short_dir: Path) -> None:
    path = short_dir / "l.sock"
    with _bound(path, 0o666):
        [found] = check_socket("lookup", UnixSocket(str(path)), socketmap, None)
    assert found.level == Level.error and "every local user" in found.found


def test_no_socket_means_mtaplugin_is_not_running(short_dir: Path) -> None:
    [found] = check_socket("milter", UnixSocket(str(short_dir / "gone.sock")), milter, None)
    assert found.level == Level.error and "does not exist" in found.found
    assert "mtaplugin serve" in found.fix


def test_a_socketmap_server_that_answers_is_ok(short_dir: Path) -> None:
    import threading

    path = short_dir / "l.sock"
    server = _bound(path, 0o660)
    server.listen()

    def answer() -> None:
        conn, _addr = server.accept()
        with conn:
            conn.recv(1000)
            conn.sendall(b"8:OK DUNNO,")

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    [found] = check_socket("lookup", UnixSocket(str(path)), socketmap, None)
    thread.join(5)
    server.close()
    assert found.level == Level.ok, found


# --- the database ----------------------------------------------------------------------


def test_the_schema_at_head_is_ok_and_an_older_one_says_upgrade(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    upgrade(url, "0031")
    engine = make_engine(url)
    try:
        found = database.check_schema(engine, url)
        assert found.level == Level.error
        assert "0031" in found.found and database.head_revision() in found.found
        assert "mtaplugin db upgrade" in found.fix
        upgrade(url)
        assert database.check_schema(engine, url).level == Level.ok
        with sqlite3.connect(tmp_path / "old.db") as conn:
            conn.execute("UPDATE alembic_version SET version_num = '9999'")
        found = database.check_schema(engine, url)
        assert found.level == Level.error and "9999" in found.found
        assert "newer mtaplugin" in found.fix
    finally:
        engine.dispose()


def test_an_empty_database_has_no_schema(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    engine = make_engine(url)
    try:
        found = database.check_schema(engine, url)
    finally:
        engine.dispose()
    assert found.level == Level.error and "no schema" in found.found


def test_a_database_file_every_user_may_write_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "lists.db"
    upgrade(f"sqlite:///{path}")
    settings = config.load(None, environ={"MTAPLUGIN_DATABASE_URL": f"sqlite:///{path}"})
    [found] = database.check_file(settings, None)
    assert found.level == Level.ok
    os.chmod(path, 0o666)
    [found] = database.check_file(settings, None)
    assert found.level == Level.error and "0666" in found.found
    assert found.fix == f"chmod o-w {path}"


def test_a_database_every_user_may_read_is_named_with_the_fix(tmp_path: Path) -> None:
    # a database an earlier release made 0644 (security review M8): DKIM keys, password
    # hashes and reset tokens for every local user
    path = tmp_path / "lists.db"
    upgrade(f"sqlite:///{path}")
    settings = config.load(None, environ={"MTAPLUGIN_DATABASE_URL": f"sqlite:///{path}"})
    os.chmod(path, 0o644)
    [found] = database.check_file(settings, None)
    assert found.level == Level.warning and "0644" in found.found
    assert found.fix == f"chmod o-rwx {path}*"


@needs_root
def test_a_database_mtaplugins_user_cannot_write_is_an_error(
    short_dir: Path,
    pf: access.User,  # (any user that is not the file's owner)
) -> None:
    path = short_dir / "lists.db"
    upgrade(f"sqlite:///{path}")
    os.chmod(path, 0o644)
    settings = config.load(None, environ={"MTAPLUGIN_DATABASE_URL": f"sqlite:///{path}"})
    [found] = database.check_file(settings, pf)
    assert found.level == Level.error and "postfix" in found.found and "0644" in found.found


# --- DNS and DKIM ------------------------------------------------------------------------


@pytest.fixture
def world(dns_server: DnsServer, module_sessions: sessionmaker[Session]) -> wiring.World:
    from mtaplugin.db import engine_of

    env = {**dns_server.environ(), "MTAPLUGIN_DNS_TIMEOUT": "0.5", "MTAPLUGIN_DNS_CACHE_SIZE": "0"}
    return wiring.build(config.load(None, environ=env), db=engine_of(module_sessions))


def _key(sessions: sessionmaker[Session], activate: bool) -> tuple[str, str, str]:
    host = f"{unique('ck')}.test"
    with sessions.begin() as s:
        domains.create(s, host)
        key = dkim.create(s, host, "sel", bits=1024, activate=activate)
        return host, key.selector, signing.txt_value(key.private_key)


def _dkim_of(world: wiring.World, host: str) -> names.Finding:
    with world.sessions() as s:
        return next(f for f in names.check_dkim(s, world.resolver) if host in f.found)


def test_a_signing_key_is_ok_once_published_and_an_error_before(
    world: wiring.World, dns_server: DnsServer
) -> None:
    host, selector, value = _key(world.sessions, activate=True)
    found = _dkim_of(world, host)
    assert found.level == Level.error
    assert f"no TXT record at {selector}._domainkey.{host}" in found.found
    assert f"mtaplugin dkim show {host}" in found.fix
    dns_server.zone.dkim(host, selector, value)
    assert _dkim_of(world, host).level == Level.ok
    dns_server.zone.dkim(host, selector, "v=DKIM1; k=rsa; p=AAAA")
    found = _dkim_of(world, host)
    assert found.level == Level.error and "another key" in found.found


def test_a_waiting_key_that_dns_publishes_is_not_activated_by_the_check(
    world: wiring.World, dns_server: DnsServer
) -> None:
    host, selector, value = _key(world.sessions, activate=False)
    assert _dkim_of(world, host).level == Level.warning
    dns_server.zone.dkim(host, selector, value)
    found = _dkim_of(world, host)
    assert found.level == Level.warning and f"mtaplugin dkim check {host}" in found.fix
    with world.sessions() as s:
        assert dkim.signing_key(s, host) is None  # nothing changed


def test_a_resolver_that_does_not_answer_is_an_error(
    world: wiring.World, dns_server: DnsServer
) -> None:
    assert names.check_resolver(world.settings, world.resolver, "x.test").level == Level.ok
    dns_server.zone.drop()
    found = names.check_resolver(world.settings, world.resolver, "x.test")
    assert found.level == Level.error
    assert f"127.0.0.1:{dns_server.port}" in found.found and "dns.nameservers" in found.fix


# --- Postfix's configuration, read by postconf ------------------------------------------


needs_postconf = pytest.mark.skipif(shutil.which("postconf") is None, reason="no postconf")

MASTER = """\
smtp      inet  n       -       n       -       -       smtpd
127.0.0.1:10026 inet n    -       n       -       -       smtpd
{override}
pickup    unix  n       -       n       60      1       pickup
"""


def _postfix_conf(tmp_path: Path, milters: str, override: str) -> Postfix:
    conf = tmp_path / "pf"
    conf.mkdir()
    (conf / "main.cf").write_text(
        f"queue_directory = {tmp_path}/queue\nsmtpd_milters = {milters}\n"
    )
    (conf / "master.cf").write_text(MASTER.format(override=override))
    return Postfix(conf)


@needs_postconf
def test_postconf_finds_the_milter_under_the_queue_directory(tmp_path: Path) -> None:
    pf = _postfix_conf(tmp_path, "unix:mtaplugin/milter.sock", "  -o smtpd_milters=")
    sock = f"unix:{tmp_path}/queue/mtaplugin/milter.sock"
    settings = config.load(None, environ={"MTAPLUGIN_MILTER_SOCKET": sock})
    assert postfix.check_milter(settings, pf).level == Level.ok
    other = config.load(None, environ={"MTAPLUGIN_MILTER_SOCKET": "unix:/elsewhere/m.sock"})
    found = postfix.check_milter(other, pf)
    assert found.level == Level.error and "unix:/elsewhere/m.sock" in found.found


@needs_postconf
def test_a_reinjection_listener_without_the_override_runs_the_milter(tmp_path: Path) -> None:
    settings = config.load(None, environ={})
    good = _postfix_conf(tmp_path, "unix:/m.sock", "  -o smtpd_milters=")
    assert postfix.check_reinjection(settings, good).level == Level.ok
    shutil.rmtree(good.conf)
    bad = _postfix_conf(tmp_path, "unix:/m.sock", "  -o syslog_name=postfix/reinject")
    found = postfix.check_reinjection(settings, bad)
    assert found.level == Level.error and "unix:/m.sock" in found.found
    assert "-o smtpd_milters=" in found.fix and "127.0.0.1:10026" in found.found
    moved = config.load(None, environ={"MTAPLUGIN_OUTBOX_PORT": "10099"})
    found = postfix.check_reinjection(moved, bad)
    assert found.level == Level.error and "no listener at 127.0.0.1:10099" in found.found


# --- the re-injection listener, over SMTP ----------------------------------------------


class _Listener:
    """An SMTP server standing in for the re-injection listener; ``milter``: it refuses an
    unknown list address at RCPT, as the milter does."""

    def __init__(self, milter: bool) -> None:
        self.milter = milter

    async def handle_RCPT(
        self,
        server: SMTP,
        session: SmtpSession,
        envelope: Envelope,
        address: str,
        options: list[str],
    ) -> str:
        if self.milter:
            return f"550 5.1.1 <{address}>: no such list at lists.test"
        envelope.rcpt_tos.append(address)
        return "250 2.1.5 OK"


@pytest.mark.parametrize("milter_there", [False, True])
def test_the_listener_over_smtp_shows_whether_a_milter_decides_there(milter_there: bool) -> None:
    port = free_port()
    controller = Controller(_Listener(milter_there), hostname="127.0.0.1", port=port)
    controller.start()
    try:
        settings = config.load(None, environ={"MTAPLUGIN_OUTBOX_PORT": str(port)})
        [found] = reinjection.check(settings, "lists.test")
    finally:
        controller.stop()
    if milter_there:
        assert found.level == Level.error and "5.1.1" in found.found
        assert "-o smtpd_milters=" in found.fix
    else:
        assert found.level == Level.ok, found


def test_no_listener_is_an_error() -> None:
    settings = config.load(None, environ={"MTAPLUGIN_OUTBOX_PORT": str(free_port())})
    [found] = reinjection.check(settings, None)
    assert found.level == Level.error and "does not answer" in found.found


# --- the command -------------------------------------------------------------------------


def test_the_command_prints_json_and_exits_1_on_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    upgrade(url, "0031")
    monkeypatch.delenv("MTAPLUGIN_CONFIG", raising=False)
    monkeypatch.setenv("MTAPLUGIN_DATABASE_URL", url)
    monkeypatch.setenv("MTAPLUGIN_MILTER_SOCKET", f"unix:{tmp_path}/m.sock")
    monkeypatch.setenv("MTAPLUGIN_OUTBOX_PORT", str(free_port()))
    capsys.readouterr()
    code = main(["check", "--json", "--postfix", str(tmp_path / "nopostfix"), "--mta-user", "root"])
    found = json.loads(capsys.readouterr().out)
    assert code == 1
    by_check = {f["check"]: f for f in found}
    assert by_check["database.schema"]["level"] == "error"
    assert "0031" in by_check["database.schema"]["found"]
    assert by_check["milter.socket"]["level"] == "error"
    assert by_check["postfix"]["level"] == "warning"
    assert set(by_check["settings"]) == {"level", "check", "found", "fix"}


def test_options_default_to_no_postfix_when_there_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(postconf, "DEFAULT_DIR", "/nonexistent")
    monkeypatch.delenv("MAIL_CONFIG", raising=False)
    assert postconf.config_dir(None) is None
    assert Options().postfix_dir is None
