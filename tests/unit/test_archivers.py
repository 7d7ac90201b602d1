"""External archivers: which ones a list hands its posts to (site and list), the queue
rows written with the decision (or the release), the ``archivers`` job with its retries,
mail-archive.com's copy through the outbox, a real command as the ``mhonarc`` archiver,
and the ``List-Archive``/``Archived-At`` fields; on a ManualClock, on SQLite and
PostgreSQL (the real HyperKitty is in tests/integration/test_hyperkitty_archiver.py)."""

from __future__ import annotations

import email
import stat
import sys
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin import archivers
from mtaplugin.archive.hashing import message_id_hash
from mtaplugin.archivers import queue
from mtaplugin.archivers.errors import HandOffError
from mtaplugin.archivers.hyperkitty import multipart
from mtaplugin.clock import ManualClock
from mtaplugin.config import ArchiversSettings, Settings
from mtaplugin.db import engine_of
from mtaplugin.engine import ListEngine
from mtaplugin.enums import ArchivePolicy
from mtaplugin.manage import lists
from mtaplugin.model import ArchivedMessage, ArchiverHandOff, MailingList, OutboxMessage
from mtaplugin.posting.verdict import Accept
from mtaplugin.vocabulary.job import JobContext
from mtaplugin.wiring import build as build_world
from mtaplugin.worker.registry import ARCHIVERS, JOBS
from tests.helpers import drain, envelope, make_post
from tests.unit.handoff_story import (
    START,
    backs_off_then_goes,
    given_up_after_five_days,
    held_then_released,
)
from tests.unit.sites import Site

ALL_ON = ArchiversSettings(
    mail_archive=True,
    mail_archive_recipient="archive@mail-archive.test",
    mail_archive_base_url="https://www.mail-archive.test/",
    mhonarc=True,
    mhonarc_command="/bin/true",
    hyperkitty=True,
    hyperkitty_base_url="http://127.0.0.1:9/hyperkitty",
    hyperkitty_api_key="k",
)


class FakeArchiver:
    """Takes posts, or fails as told: ``down`` (temporary), ``refuse`` (for good)."""

    def __init__(self, *, refuse: bool = False) -> None:
        self.got: list[tuple[str, bytes]] = []
        self.down = False
        self.refuse = refuse

    def __call__(self, site: ArchiversSettings, mlist: MailingList, raw: bytes) -> None:
        if self.down:
            raise HandOffError("cannot reach HyperKitty: refused", temporary=True)
        if self.refuse:
            raise HandOffError("HyperKitty answered 400 Bad Request", temporary=False)
        self.got.append((mlist.posting_address, raw))


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
def clean(site: Site) -> Iterator[Site]:
    yield site
    with site.sessions.begin() as s:
        mlist = lists.get(s, site.address)
        mlist.archivers = {"mtaplugin": True}
        mlist.archive_policy = ArchivePolicy.public
        mlist.emergency = False
        s.query(ArchiverHandOff).filter(ArchiverHandOff.mailing_list_id == mlist.id).delete()
        s.query(OutboxMessage).filter(OutboxMessage.kind == "archiver").delete()


def engine_for(site: Site, clock: ManualClock, on: ArchiversSettings = ALL_ON) -> ListEngine:
    return ListEngine(site.sessions, site_owner="postmaster@site.test", clock=clock, archivers=on)


def post(engine: ListEngine, site: Site, subject: str, **headers: str) -> str:
    raw = make_post("Anne <anne@example.com>", site.address, subject)
    if headers:
        extra = "".join(f"{k.replace('_', '-')}: {v}\r\n" for k, v in headers.items())
        raw = extra.encode() + raw
    env = envelope(site.address, mail_from="anne@example.com", queue_id="Q1")
    verdict = engine.decide(env, raw)
    assert isinstance(verdict, Accept), verdict
    drain(site.sessions, archivers=engine.archivers)  # the worker, on the same settings
    return str(email.message_from_bytes(raw)["Message-ID"])


def run(
    sessions: sessionmaker[Session],
    now: datetime,
    fake: FakeArchiver,
    site: ArchiversSettings = ALL_ON,
) -> int:
    return queue.hand_over_due(
        sessions,
        site,
        now,
        {archivers.HYPERKITTY: fake, archivers.MHONARC: fake},
    )


# --- which archivers -------------------------------------------------------------------


def test_an_archiver_is_on_when_the_site_enables_it_and_the_list_does_not_turn_it_off() -> None:
    mlist = MailingList(archivers={"mtaplugin": True}, archive_policy=ArchivePolicy.public)
    assert archivers.flags(mlist, ArchiversSettings()) == {"mtaplugin": True}
    assert archivers.flags(mlist, ALL_ON) == dict.fromkeys(archivers.NAMES, True)
    mlist.archivers = {"mtaplugin": True, "mhonarc": False}
    assert archivers.handed_to(mlist, ALL_ON) == ["hyperkitty", "mail-archive"]
    # enabled without what it needs: off
    assert not archivers.site_enabled(replace(ALL_ON, hyperkitty_base_url=" "))["hyperkitty"]
    assert not archivers.site_enabled(replace(ALL_ON, mhonarc_command=""))["mhonarc"]


def test_mail_archive_takes_only_public_lists() -> None:
    mlist = MailingList(archivers={}, archive_policy=ArchivePolicy.private)
    assert archivers.handed_to(mlist, ALL_ON) == ["hyperkitty", "mhonarc"]


# --- queued with the decision ----------------------------------------------------------


def test_an_accepted_post_is_queued_once_per_archiver_with_the_archive_copy(
    clean: Site, clock: ManualClock
) -> None:
    message_id = post(engine_for(clean, clock), clean, "to the archivers")
    queued = clean.rows(ArchiverHandOff)
    assert sorted(r.archiver for r in queued) == ["hyperkitty", "mail-archive", "mhonarc"]
    for row in queued:
        msg = email.message_from_bytes(row.message)
        assert msg["Message-ID"] == message_id
        assert "to the archivers" in str(msg["Subject"])
        assert row.attempts == 0 and row.next_attempt_at == START and not row.failed
    with clean.sessions() as s:
        assert queue.waiting(s) >= 3
        archived = s.scalars(
            select(ArchivedMessage).where(
                ArchivedMessage.message_id_hash == message_id_hash(message_id)
            )
        ).all()
        assert len(archived) == 1  # the built-in archive keeps it too


def test_nothing_is_queued_when_the_site_or_the_list_says_no(
    clean: Site, clock: ManualClock
) -> None:
    post(engine_for(clean, clock, ArchiversSettings()), clean, "site off")
    assert clean.rows(ArchiverHandOff) == []
    clean.update(archivers={"hyperkitty": False, "mail-archive": False, "mhonarc": False})
    post(engine_for(clean, clock), clean, "list off")
    assert clean.rows(ArchiverHandOff) == []
    clean.update(archivers={"mtaplugin": True})
    post(engine_for(clean, clock), clean, "no thanks", X_No_Archive="yes")
    assert clean.rows(ArchiverHandOff) == []
    clean.update(archive_policy=ArchivePolicy.never)
    post(engine_for(clean, clock), clean, "never")
    assert clean.rows(ArchiverHandOff) == []


def test_the_built_in_archive_can_be_turned_off_and_the_others_still_get_it(
    clean: Site, clock: ManualClock
) -> None:
    clean.update(archivers={"mtaplugin": False})
    message_id = post(engine_for(clean, clock), clean, "external only")
    assert len(clean.rows(ArchiverHandOff)) == 3
    with clean.sessions() as s:
        found = s.scalars(
            select(ArchivedMessage).where(
                ArchivedMessage.message_id_hash == message_id_hash(message_id)
            )
        ).all()
    assert found == []


def test_a_released_post_is_queued_too(clean: Site, clock: ManualClock) -> None:
    held_then_released(clean, engine_for(clean, clock), ArchiverHandOff, archivers=ALL_ON)
    assert sorted(r.archiver for r in clean.rows(ArchiverHandOff)) == [
        "hyperkitty",
        "mail-archive",
        "mhonarc",
    ]


# --- the job ---------------------------------------------------------------------------


def test_the_job_hands_over_and_removes_and_retries_with_back_off(
    clean: Site, clock: ManualClock
) -> None:
    clean.update(archivers={"mail-archive": False, "mhonarc": False})
    engine = engine_for(clean, clock)
    for subject in ("first", "second"):
        post(engine, clean, subject)
    fake = FakeArchiver()
    backs_off_then_goes(
        clean, ArchiverHandOff, partial(run, clean.sessions, fake=fake), fake, error="cannot reach"
    )
    subjects = [str(email.message_from_bytes(raw)["Subject"]) for _, raw in fake.got]
    assert [s.split()[-1] for s in subjects] == ["first", "second"]
    assert {address for address, _ in fake.got} == {clean.address}


def test_a_refused_post_is_kept_failed_and_one_too_old_is_given_up(
    clean: Site, clock: ManualClock
) -> None:
    clean.update(archivers={"mail-archive": False, "hyperkitty": False})
    post(engine_for(clean, clock), clean, "refused")
    assert run(clean.sessions, START, FakeArchiver(refuse=True)) == 0
    (row,) = clean.rows(ArchiverHandOff)
    assert row.failed and "400" in row.last_error and row.attempts == 1
    with clean.sessions() as s:
        assert queue.waiting(s, row.mailing_list_id) == 0
    post(engine_for(clean, clock), clean, "patient")
    fake = FakeArchiver()
    given_up_after_five_days(clean, ArchiverHandOff, partial(run, clean.sessions, fake=fake), fake)


class Killed(BaseException):
    """Stands for a kill -9: nothing after it runs."""


def test_a_run_killed_after_the_hand_off_hands_it_over_again_and_only_then_removes_it(
    clean: Site, clock: ManualClock
) -> None:
    clean.update(archivers={"mail-archive": False, "mhonarc": False})
    post(engine_for(clean, clock), clean, "killed")
    fake = FakeArchiver()

    def killed_after_taking(site: ArchiversSettings, mlist: MailingList, raw: bytes) -> None:
        fake(site, mlist, raw)
        raise Killed

    with pytest.raises(Killed):
        queue.hand_over_due(
            clean.sessions, ALL_ON, START, {archivers.HYPERKITTY: killed_after_taking}
        )
    (row,) = clean.rows(ArchiverHandOff)  # HyperKitty has it, the row is still there
    assert row.attempts == 0 and not row.failed
    assert run(clean.sessions, START, fake) == 1
    assert clean.rows(ArchiverHandOff) == []
    assert len(fake.got) == 2  # given twice; HyperKitty keeps one per Message-ID


def test_a_run_killed_in_the_mail_archive_transaction_leaves_the_row_and_no_copy(
    clean: Site, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    clean.update(archivers={"hyperkitty": False, "mhonarc": False})
    post(engine_for(clean, clock), clean, "killed by mail")
    real = queue.mail_archive_send

    def killed_after_queueing(*args: object) -> None:
        real(*args)  # type: ignore[arg-type]
        raise Killed

    monkeypatch.setattr(queue, "mail_archive_send", killed_after_queueing)
    with pytest.raises(Killed):
        run(clean.sessions, START, FakeArchiver())
    assert len(clean.rows(ArchiverHandOff)) == 1
    with clean.sessions() as s:
        assert s.scalars(select(OutboxMessage).where(OutboxMessage.kind == "archiver")).all() == []
    monkeypatch.setattr(queue, "mail_archive_send", real)
    assert run(clean.sessions, START, FakeArchiver()) == 1
    assert clean.rows(ArchiverHandOff) == []
    with clean.sessions() as s:
        assert (
            len(s.scalars(select(OutboxMessage).where(OutboxMessage.kind == "archiver")).all()) == 1
        )


def test_mail_archive_copies_go_through_the_outbox_in_the_same_transaction(
    clean: Site, clock: ManualClock
) -> None:
    clean.update(archivers={"hyperkitty": False, "mhonarc": False})
    message_id = post(engine_for(clean, clock), clean, "for mail-archive")
    assert run(clean.sessions, START, FakeArchiver()) == 1
    assert clean.rows(ArchiverHandOff) == []
    with clean.sessions() as s:
        (copy,) = s.scalars(select(OutboxMessage).where(OutboxMessage.kind == "archiver")).all()
        assert copy.recipients == ["archive@mail-archive.test"]
        assert copy.mail_from == lists.get(s, clean.address).bounces_address
        assert email.message_from_bytes(copy.raw)["Message-ID"] == message_id


def test_rows_of_an_archiver_the_site_stops_enabling_wait(clean: Site, clock: ManualClock) -> None:
    clean.update(archivers={"mail-archive": False, "hyperkitty": False})
    post(engine_for(clean, clock), clean, "waits")
    fake = FakeArchiver()
    assert run(clean.sessions, START, fake, site=ArchiversSettings()) == 0
    (row,) = clean.rows(ArchiverHandOff)
    assert row.attempts == 0 and not row.failed
    assert run(clean.sessions, START + timedelta(minutes=1), fake) == 1


def test_a_real_command_gets_the_post_and_a_failing_one_is_tried_again(
    clean: Site, clock: ManualClock, tmp_path: Path
) -> None:
    out = tmp_path / "archive"
    out.mkdir()
    script = tmp_path / "archive-it"
    script.write_text(
        f"#!{sys.executable}\n"
        "import sys, pathlib\n"
        "out = pathlib.Path(sys.argv[1]) / sys.argv[2]\n"
        "if (pathlib.Path(sys.argv[1]) / 'fail').exists():\n"
        "    sys.stderr.write('disk full\\n'); sys.exit(3)\n"
        "out.mkdir(exist_ok=True)\n"
        "n = len(list(out.iterdir()))\n"
        "(out / f'{n}.eml').write_bytes(sys.stdin.buffer.read())\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    site = replace(
        ArchiversSettings(),
        mhonarc=True,
        mhonarc_command=f"'{script}' '{out}' '$listname'",
    )
    engine = engine_for(clean, clock, site)
    (out / "fail").touch()
    message_id = post(engine, clean, "through a command")
    assert queue.hand_over_due(clean.sessions, site, START) == 0
    (row,) = clean.rows(ArchiverHandOff)
    assert row.attempts == 1 and not row.failed
    assert "exited with 3: disk full" in row.last_error
    (out / "fail").unlink()
    assert queue.hand_over_due(clean.sessions, site, START + timedelta(minutes=1)) == 1
    assert clean.rows(ArchiverHandOff) == []
    (stored,) = (out / clean.address).iterdir()
    assert email.message_from_bytes(stored.read_bytes())["Message-ID"] == message_id


def test_a_command_that_cannot_start_is_tried_again(clean: Site, clock: ManualClock) -> None:
    site = replace(ArchiversSettings(), mhonarc=True, mhonarc_command="/nonexistent/mhonarc")
    post(engine_for(clean, clock, site), clean, "no command")
    assert queue.hand_over_due(clean.sessions, site, START) == 0
    (row,) = clean.rows(ArchiverHandOff)
    assert not row.failed and "cannot run" in row.last_error


def test_the_job_is_registered_and_runs_from_the_world(clean: Site, clock: ManualClock) -> None:
    assert ARCHIVERS in JOBS
    world = build_world(Settings(), db=engine_of(clean.sessions), clock=clock)
    assert ARCHIVERS.run(JobContext(world, START)) == 0


def test_back_off_doubles_up_to_an_hour() -> None:
    assert [queue.backoff(n).total_seconds() for n in (1, 2, 3, 7, 8, 50)] == [
        60, 120, 240, 3600, 3600, 3600,
    ]  # fmt: skip


# --- the addresses in the post ---------------------------------------------------------


def test_archived_at_and_list_archive_name_each_archiver(clean: Site, clock: ManualClock) -> None:
    clean.update(archivers={"mhonarc": False})
    post(engine_for(clean, clock), clean, "linked")
    row = clean.rows(ArchiverHandOff)[0]
    msg = email.message_from_bytes(row.message)
    hashed = message_id_hash(str(msg["Message-ID"]))
    archived_at = msg.get_all("Archived-At") or []
    list_archive = msg.get_all("List-Archive") or []
    address = clean.address
    assert f"<https://www.mail-archive.test/{hashed}>" in archived_at
    assert f"<http://127.0.0.1:9/hyperkitty/list/{address}/message/{hashed}/>" in archived_at
    assert f"<https://www.mail-archive.test/{address.replace('@', '%40')}>" in list_archive
    assert f"<http://127.0.0.1:9/hyperkitty/list/{address}/>" in list_archive


def test_multipart_body_carries_the_list_and_the_message() -> None:
    body, content_type = multipart({"mlist": "a@b.test"}, {"message": ("message.txt", b"X: 1\r\n")})
    boundary = content_type.split("boundary=")[1]
    assert content_type.startswith("multipart/form-data; ")
    assert body.startswith(f"--{boundary}\r\n".encode())
    assert b'name="mlist"\r\n\r\na@b.test\r\n' in body
    assert b'name="message"; filename="message.txt"' in body
    assert body.endswith(f"--{boundary}--\r\n".encode())
