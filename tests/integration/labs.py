"""Helpers over any lab (Postfix, Exim or Sendmail, see mtaplugin.testing.mta.MtaLab):
make a list, count the copies in the sink, wait with the logs at hand, read the holds,
and take the list database away for a while."""

from __future__ import annotations

import email
import os
import re
import sqlite3
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from email.message import Message
from email.policy import compat32
from types import TracebackType
from typing import Any

import psycopg
from psycopg import sql
from sqlalchemy import func, select
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.config import sqlite_path
from mtaplugin.db import make_engine, sessionmaker_for
from mtaplugin.manage import lists, members
from mtaplugin.model import HeldMessage, MailingList
from mtaplugin.testing import wait_for
from mtaplugin.testing.mta import MtaLab
from tests.helpers import make_post, run_mtaplugin, unique

#: the list domain every lab's database has
DOMAIN = "lists.test"
#: a domain the labs relay without asking mtaplugin (the sink takes it)
PASSTHROUGH = "passthrough.test"

#: log lines that say nothing about a failing test
_NOISE = ("lost privilege", "queue run", "mail.log")


@contextmanager
def as_installed(lab: MtaLab) -> Iterator[None]:
    """The lab's SQLite file is open to every user (Exim's pipe writes it as Debian-exim),
    which the check rightly calls an error; while it runs, the file is as installed."""
    path = sqlite_path(lab.database_url)
    if path is None:
        yield
        return
    mode = stat.S_IMODE(os.stat(path).st_mode)
    os.chmod(path, 0o640)
    try:
        yield
    finally:
        os.chmod(path, mode)


@contextmanager
def session_on(lab: MtaLab) -> Iterator[Session]:
    """A session on the lab's database (commit what mtaplugin must see)."""
    engine = make_engine(lab.database_url)
    try:
        with sessionmaker_for(engine)() as s:
            yield s
    finally:
        engine.dispose()


def make_list(db: Session, *regular: str, **settings: object) -> MailingList:
    """A new list in the lab's domain with these regular members and settings, committed."""
    mlist = lists.create(db, f"{unique('list')}@{DOMAIN}")
    for key, value in settings.items():
        setattr(mlist, key, value)
    for address in regular:
        members.add(db, mlist, address)
    db.commit()
    return mlist


def copies(lab: MtaLab, marker: str | bytes, address: str) -> int:
    """How many copies carrying ``marker`` the sink got for ``address``."""
    needle = marker.encode() if isinstance(marker, str) else marker
    return sum(1 for m in lab.sink.to(address) if needle in m.data)


def copy_data(lab: MtaLab, marker: str | bytes, address: str) -> bytes:
    """The (first) copy carrying ``marker`` that ``address`` got, as the sink got it."""
    needle = marker.encode() if isinstance(marker, str) else marker
    return next(m.data for m in lab.sink.to(address) if needle in m.data)


def copy_of(lab: MtaLab, marker: str | bytes, address: str) -> Message:
    """The (first) copy carrying ``marker`` that ``address`` got, parsed."""
    return email.message_from_bytes(copy_data(lab, marker, address), policy=compat32)


def copies_for(lab: MtaLab, marker: bytes, *addresses: str) -> dict[str, Message]:
    """Each address's copy of the post carrying ``marker``, once all arrived."""

    def got() -> dict[str, Message]:
        found: dict[str, Message] = {}
        for m in lab.sink.messages:
            if marker in m.data:
                for r in m.recipients:
                    found[r] = email.message_from_bytes(m.data, policy=compat32)
        return found

    waits(lab, lambda: set(addresses) <= set(got()), timeout=30)
    return got()


def posts(
    lab: MtaLab,
    mlist: MailingList,
    sender: str,
    author: str = "",
    also: tuple[str, ...] = (),
    **post: object,
) -> None:
    """``sender`` posts to ``mlist`` (and to the addresses ``also``, in the same
    transaction) through the MTA, From: ``author`` (by default the sender); ``post``:
    :func:`tests.helpers.make_post`'s words.  The MTA takes it."""
    raw = make_post(author or sender, mlist.posting_address, **post)  # type: ignore[arg-type]
    assert lab.send(sender, [mlist.posting_address, *also], raw) is None


def copies_of_a_post(
    lab: MtaLab, mlist: MailingList, sender: str, *people: str, author: str = ""
) -> dict[str, Message]:
    """``sender`` posts to ``mlist`` a post whose body is a new marker: each of
    ``people``'s copy of it, once all arrived."""
    marker = unique("marker")
    posts(lab, mlist, sender, author, body=marker + "\n")
    return copies_for(lab, marker.encode(), *people)


def waiting(db: Session, queue: type, list_id: int) -> int:
    """How many rows of the hand-off ``queue`` (the news or the archivers' table) of the
    list wait: not gone yet, not given up."""
    db.expire_all()
    table: Any = queue
    query = select(func.count(table.id)).where(
        table.mailing_list_id == list_id, table.failed.is_(False)
    )
    return int(db.scalar(query) or 0)


def run_job(lab: MtaLab, name: str) -> None:
    """``mtaplugin jobs run NAME`` in the lab's environment; it succeeds."""
    done = run_mtaplugin("jobs", "run", name, env=lab.process_env())
    assert done.returncode == 0, done.stdout + done.stderr


def waits(lab: MtaLab, condition: Callable[[], object], timeout: float = 60) -> None:
    """Wait for ``condition``; on a timeout, fail with the MTA's and mtaplugin's logs."""
    try:
        wait_for(condition, timeout=timeout)
    except TimeoutError:
        logs = "\n".join(
            line
            for line in f"{lab.mta_log()}\n---\n{lab.log()}".splitlines()
            if not any(n in line for n in _NOISE)
        )
        raise AssertionError(logs[-6000:]) from None


def queue_id(data: bytes) -> str:
    """The MTA's queue id of a delivered copy, from its topmost Received: field (``with
    ESMTP id 4ABCDEF``: Postfix and Sendmail both write it)."""
    found = re.search(rb"^Received:.*?\bid ([A-Za-z0-9]+)", data, re.MULTILINE | re.DOTALL)
    assert found is not None, data[:2000]
    return found.group(1).decode()


def milter_connection(lab: MtaLab, queue: str) -> str:
    """The milter's line for the connection that carried the transaction with queue id
    ``queue`` (``milter.log_connections``, on in every milter lab), logged when the MTA
    closes the connection: what the MTA sent the milter."""
    needle = f"queue_ids={queue}"

    def line() -> str:
        logged = (ln for ln in lab.log().splitlines() if "milter connection:" in ln)
        return next((ln for ln in logged if needle in ln), "")

    waits(lab, line, timeout=60)
    return line()


def held_posts(sessions: sessionmaker[Session], mlist: MailingList) -> list[HeldMessage]:
    with sessions() as s:
        query = select(HeldMessage).where(HeldMessage.mailing_list_id == mlist.id)
        return list(s.scalars(query.order_by(HeldMessage.id)))


class DatabaseOutage:
    """The list database cannot answer mtaplugin while inside: SQLite locked by another
    writer for longer than database.timeout (in write-ahead-log mode reads still go on:
    only writes wait, then fail), or PostgreSQL refusing every connection to
    the list database (and mtaplugin's open ones ended).  The server keeps running for the
    other tests; the retry afterwards finds the database as it was."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.lock: sqlite3.Connection | None = None

    def _admin(self, *statements: sql.Composed) -> None:
        u = make_url(self.url)
        admin = f"host={u.host} port={u.port} user={u.username} dbname=postgres"
        with psycopg.connect(admin, autocommit=True) as conn:
            for statement in statements:
                conn.execute(statement)

    def __enter__(self) -> DatabaseOutage:
        if self.url.startswith("sqlite"):
            self.lock = sqlite3.connect(self.url.split("///", 1)[1], isolation_level=None)
            self.lock.execute("BEGIN EXCLUSIVE")
            return self
        name = str(make_url(self.url).database)
        self._admin(
            sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS false").format(sql.Identifier(name)),
            sql.SQL(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = {} AND application_name = 'mtaplugin'"
            ).format(sql.Literal(name)),
        )
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.lock is not None:
            self.lock.execute("ROLLBACK")
            self.lock.close()
            self.lock = None
            return
        name = str(make_url(self.url).database)
        self._admin(
            sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS true").format(sql.Identifier(name))
        )
