"""External archivers through a real private Postfix: a post to a list reaches its member
at once and, through the ``archivers`` job,

- a real HyperKitty (installed from PyPI in a throw-away virtualenv, Django's development
  server on loopback, SQLite), whose API then shows the post, at the address the post's
  ``Archived-At`` names (as HyperKitty's ``/api/mailman/urls`` answers it);
- a real command (a small script storing each post it is fed), as the ``mhonarc``
  archiver;
- mail-archive.com's address, through the outbox and Postfix to the sink.

With HyperKitty stopped the post waits and is handed over once it is back.  On the CI
machine (``CI=true``) a HyperKitty that cannot be installed fails the test."""

from __future__ import annotations

import email
import json
import os
import stat
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from mtaplugin.archive.hashing import message_id_hash
from mtaplugin.db import make_engine, sessionmaker_for
from mtaplugin.model import ArchiverHandOff, MailingList
from mtaplugin.testing import free_port, wait_for, wait_for_port
from mtaplugin.testing.dns import DnsServer
from mtaplugin.testing.hyperkitty_venv import configure, hyperkitty_venv
from mtaplugin.testing.lab import Lab
from tests.helpers import make_post, unique
from tests.integration.conftest import lab_database, postfix_lab
from tests.integration.labs import PASSTHROUGH, copies, make_list, run_job, waiting

KEY = "archiver-key-" + "0123456789abcdef"
ARCHIVE_ADDRESS = f"archive@{PASSTHROUGH}"

_NO_PYTHONPATH = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


class HyperKitty:
    def __init__(self, venv: Path, project: Path, port: int) -> None:
        self.venv, self.project, self.port = venv, project, port
        self.base_url = f"http://127.0.0.1:{port}/hyperkitty/"
        self.proc: subprocess.Popen[bytes] | None = None

    def env(self) -> dict[str, str]:
        return {
            **_NO_PYTHONPATH,
            "PYTHONPATH": str(self.project),
            "DJANGO_SETTINGS_MODULE": "hksettings",
        }

    def manage(self, *args: str) -> None:
        subprocess.run(
            [str(self.venv / "bin/django-admin"), *args],
            check=True,
            env=self.env(),
            timeout=600,
            cwd=self.project,
        )

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                str(self.venv / "bin/django-admin"),
                "runserver",
                "--noreload",
                f"127.0.0.1:{self.port}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=open(self.project / "server.log", "ab"),  # noqa: SIM115 - kept for the run
            env=self.env(),
            cwd=self.project,
            start_new_session=True,
        )
        wait_for_port(self.port, timeout=120)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=30)
            self.proc = None

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=30) as r:
            return json.loads(r.read())

    def urls(self, mlist: str, msgid: str) -> str:
        req = urllib.request.Request(
            f"{self.base_url}api/mailman/urls?mlist={mlist}&msgid={msgid.strip('<>')}",
            headers={"Authorization": f"Token {KEY}"},
        )
        with urllib.request.urlopen(req, timeout=30) as r:
            return str(json.loads(r.read())["url"])


@pytest.fixture(scope="module")
def hyperkitty(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HyperKitty]:
    try:
        venv = hyperkitty_venv()
    except (subprocess.CalledProcessError, OSError) as e:
        if os.environ.get("CI") == "true":
            pytest.fail(f"HyperKitty could not be installed: {e}")
        pytest.skip(f"HyperKitty could not be installed: {e}")
    project = configure(tmp_path_factory.mktemp("hyperkitty"), KEY)
    hk = HyperKitty(venv, project, free_port())
    hk.manage("migrate", "-v0")
    hk.start()
    yield hk
    hk.stop()


@pytest.fixture(scope="module")
def command_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the archiving script stores the posts it is fed (one directory per list)."""
    root = tmp_path_factory.mktemp("mhonarc")
    os.chmod(root, 0o777)
    return root


@pytest.fixture(scope="module")
def archiving_lab(
    request: pytest.FixtureRequest,
    lab_root: Path,
    lab_dns: DnsServer,
    hyperkitty: HyperKitty,
    command_dir: Path,
) -> Iterator[Lab]:
    script = command_dir / "store-post"
    script.write_text(
        f"#!{sys.executable}\n"
        "import pathlib, sys\n"
        "out = pathlib.Path(sys.argv[1]) / sys.argv[2]\n"
        "out.mkdir(exist_ok=True)\n"
        "n = len(list(out.iterdir()))\n"
        "(out / f'{n}.eml').write_bytes(sys.stdin.buffer.read())\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    url = lab_database(request, lab_root, "sqlite")
    lab = postfix_lab(lab_root / "lab-archivers", url, lab_dns, extra_relay_domains=(PASSTHROUGH,))
    lab.env.update(
        {
            "MTAPLUGIN_ARCHIVERS_HYPERKITTY": "true",
            "MTAPLUGIN_ARCHIVERS_HYPERKITTY_BASE_URL": hyperkitty.base_url,
            "MTAPLUGIN_ARCHIVERS_HYPERKITTY_API_KEY": KEY,
            "MTAPLUGIN_ARCHIVERS_MHONARC": "true",
            "MTAPLUGIN_ARCHIVERS_MHONARC_COMMAND": f"{script} {command_dir} $listname",
            "MTAPLUGIN_ARCHIVERS_MAIL_ARCHIVE": "true",
            "MTAPLUGIN_ARCHIVERS_MAIL_ARCHIVE_RECIPIENT": ARCHIVE_ADDRESS,
        }
    )
    try:
        try:
            lab.start()
        except TimeoutError as e:
            raise AssertionError(f"the lab did not start: {lab.runner.log()[-3000:]}") from e
        yield lab
    finally:
        lab.stop()


@pytest.fixture
def db(archiving_lab: Lab) -> Iterator[Session]:
    engine = make_engine(archiving_lab.database_url)
    with sessionmaker_for(engine)() as s:
        yield s
    engine.dispose()


def a_list_and_a_post(db: Session, who: str, tag: str) -> tuple[str, MailingList, str, bytes]:
    """A new list with one member (``who``...), and a post of the member's to it whose
    subject is a new marker (``tag``...): the member, the list, the marker, the post."""
    member = f"{unique(who)}@example.org"
    mlist = make_list(db, member)
    marker = unique(tag)
    return member, mlist, marker, make_post(member, mlist.posting_address, subject=marker)


def in_hyperkitty(hk: HyperKitty, list_address: str, hashed: str) -> dict[str, Any] | None:
    try:
        found: dict[str, Any] = hk.get(f"/hyperkitty/api/list/{list_address}/email/{hashed}/")
    except OSError:  # 404 until it is there
        return None
    return found


def test_a_post_reaches_hyperkitty_a_command_and_mail_archive(
    archiving_lab: Lab, db: Session, hyperkitty: HyperKitty, command_dir: Path
) -> None:
    lab = archiving_lab
    member, mlist, marker, raw = a_list_and_a_post(db, "ann", "archived-")
    message_id = str(email.message_from_bytes(raw)["Message-ID"])
    hashed = message_id_hash(message_id)
    assert lab.send(member, [mlist.posting_address], raw) is None
    wait_for(lambda: copies(lab, marker, member) == 1, timeout=30)
    # the member's copy names HyperKitty's page of the post, as HyperKitty does
    got = next(m for m in lab.sink.to(member) if marker.encode() in m.data)
    archived_at = email.message_from_bytes(got.data).get_all("Archived-At") or []
    expected = hyperkitty.urls(mlist.posting_address, message_id)
    path = expected.split("/", 3)[3]  # HyperKitty answers its public host; the path counts
    assert any(link.strip("<>").endswith(path) for link in archived_at), archived_at

    run_job(lab, "archivers")
    wait_for(lambda: waiting(db, ArchiverHandOff, mlist.id) == 0, timeout=90)
    post = wait_for(lambda: in_hyperkitty(hyperkitty, mlist.posting_address, hashed), timeout=30)
    assert isinstance(post, dict)
    assert post["message_id_hash"] == hashed
    assert marker in post["subject"]
    stored = list((command_dir / mlist.posting_address).iterdir())
    assert stored
    assert email.message_from_bytes(stored[0].read_bytes())["Message-ID"] == message_id
    wait_for(lambda: copies(lab, marker, ARCHIVE_ADDRESS) >= 1, timeout=60)


def test_with_hyperkitty_down_the_post_waits_and_goes_after_the_restart(
    archiving_lab: Lab, db: Session, hyperkitty: HyperKitty
) -> None:
    lab = archiving_lab
    member, mlist, marker, raw = a_list_and_a_post(db, "bo", "while-down-")
    hashed = message_id_hash(str(email.message_from_bytes(raw)["Message-ID"]))
    hyperkitty.stop()
    try:
        assert lab.send(member, [mlist.posting_address], raw) is None
        wait_for(lambda: copies(lab, marker, member) == 1, timeout=30)  # members at once
        wait_for(lambda: waiting(db, ArchiverHandOff, mlist.id) >= 1, timeout=30)
        run_job(lab, "archivers")
        db.expire_all()
        row = db.scalars(
            select(ArchiverHandOff).where(
                ArchiverHandOff.mailing_list_id == mlist.id,
                ArchiverHandOff.archiver == "hyperkitty",
            )
        ).one()
        assert row.attempts >= 1 and not row.failed
        assert "cannot reach HyperKitty" in row.last_error
    finally:
        hyperkitty.start()
    # due again after the back-off: made due now, as the next run after it would find it
    db.execute(
        update(ArchiverHandOff)
        .where(ArchiverHandOff.mailing_list_id == mlist.id)
        .values(next_attempt_at=row.queued_at)
    )
    db.commit()
    run_job(lab, "archivers")
    wait_for(lambda: waiting(db, ArchiverHandOff, mlist.id) == 0, timeout=90)
    post = wait_for(lambda: in_hyperkitty(hyperkitty, mlist.posting_address, hashed), timeout=30)
    assert isinstance(post, dict) and marker in post["subject"]
