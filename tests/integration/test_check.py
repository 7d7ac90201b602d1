"""``mtaplugin check`` on the real Postfix labs, as an admin runs it after installing: on a
good set-up every finding is fine; once the milter socket is 0600 and root's, so that
Postfix's user cannot connect, it says so: the socket, its mode and the fix."""

from __future__ import annotations

import json
import os
import shutil
import stat

from mtaplugin.config import sqlite_path
from mtaplugin.testing.lab import Lab
from tests.helpers import run_mtaplugin
from tests.integration.labs import as_installed

#: what the check finds on any Postfix lab (DKIM keys are other tests' business)
WIRING = {
    "settings",
    "database.file",
    "database.schema",
    "milter.socket",
    "lookup.socket",
    "postfix.smtpd_milters",
    "postfix.reinjection",
    "outbox.listener",
    "dns.resolver",
}


def _wiring(lab: Lab) -> set[str]:
    """What the check finds on this lab (PostgreSQL: no database file)."""
    return WIRING if sqlite_path(lab.database_url) else WIRING - {"database.file"}


def _check(lab: Lab) -> tuple[int, dict[str, dict[str, str]], str]:
    env = {k: v for k, v in lab.process_env().items() if k != "MTAPLUGIN_CONFIG"}
    with as_installed(lab):
        done = run_mtaplugin("check", "--json", "--postfix", str(lab.postfix.conf), env=env)
    findings = json.loads(done.stdout)
    return done.returncode, {f["check"]: f for f in findings}, done.stdout + done.stderr


def test_a_good_postfix_lab_is_all_ok(lab: Lab) -> None:
    _code, found, out = _check(lab)
    assert _wiring(lab) <= set(found), out
    assert all(found[name]["level"] == "ok" for name in _wiring(lab)), out
    assert "no milter decides there" in found["outbox.listener"]["found"]


def test_the_debian_lab_chrooted_with_lmtp_is_all_ok(debian_lab: Lab) -> None:
    _code, found, out = _check(debian_lab)
    wanted = _wiring(debian_lab) | {"lmtp.socket"}
    assert wanted <= set(found), out
    assert all(found[name]["level"] == "ok" for name in wanted), out


def test_a_milter_socket_postfix_cannot_open_is_named_with_its_mode_and_fix(lab: Lab) -> None:
    sock = lab.socket
    before = os.stat(sock)
    os.chmod(sock, 0o600)
    os.chown(sock, 0, 0)
    try:
        code, found, out = _check(lab)
    finally:
        os.chmod(sock, stat.S_IMODE(before.st_mode))
        os.chown(sock, before.st_uid, before.st_gid)
    assert code == 1, out
    milter = found["milter.socket"]
    assert milter["level"] == "error"
    assert f"postfix cannot connect to {sock}" in milter["found"]
    assert "mode 0600, owner root:root" in milter["found"]
    assert f"chgrp postfix {sock} && chmod 0660 {sock}" in milter["fix"]
    others = _wiring(lab) - {"milter.socket"}
    assert all(found[name]["level"] == "ok" for name in others), out
    # and the human form says the same
    env = {k: v for k, v in lab.process_env().items() if k != "MTAPLUGIN_CONFIG"}
    assert shutil.which("postconf")
    os.chmod(sock, 0o600)
    os.chown(sock, 0, 0)
    try:
        with as_installed(lab):
            text = run_mtaplugin("check", "--postfix", str(lab.postfix.conf), env=env)
    finally:
        os.chmod(sock, stat.S_IMODE(before.st_mode))
        os.chown(sock, before.st_uid, before.st_gid)
    assert text.returncode == 1
    assert "[error  ] milter.socket:" in text.stdout and "what to do:" in text.stdout
