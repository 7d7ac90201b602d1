"""The post counter (``post_id``, ``last_post_at``), written in batches.

Counting every accepted post with its own committed UPDATE would put a disk flush on the
SMTP path of every post.  Lists whose members see the number (``%d`` in the subject
prefix) are counted at once, in the post's own transaction.  For the others the front end
adds up its accepted posts and writes ``post_id = post_id + n`` about once a second.  The
update is additive, so several processes and mail hosts sharing one database count
correctly.  A process that dies loses at most the last second's counts -- a number, never
a post.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime

from sqlalchemy import Connection, func, update
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.clock import Clock, system_clock
from mtaplugin.db import session_scope
from mtaplugin.errors import TryLater
from mtaplugin.model import MailingList

log = logging.getLogger(__name__)


def count_now(db: Connection | Session, pk: int, clock: Clock = system_clock) -> int:
    """Count one post in ``db``'s transaction; return the post's number."""
    number = db.scalar(
        update(MailingList)
        .where(MailingList.id == pk)
        .values(post_id=MailingList.post_id + 1, last_post_at=clock())
        .returning(MailingList.post_id)
    )
    return int(number or 1) - 1


class PostCounter:
    def __init__(
        self, sessions: sessionmaker[Session], interval: float = 1.0, clock: Clock = system_clock
    ) -> None:
        self.sessions = sessions
        self.clock = clock
        self.interval = interval
        self._pending: dict[int, tuple[int, datetime]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def add(self, pk: int) -> None:
        with self._lock:
            now = self.clock()
            n, _last = self._pending.get(pk, (0, now))
            self._pending[pk] = (n + 1, now)

    def pending(self) -> int:
        with self._lock:
            return sum(n for n, _t in self._pending.values())

    def flush(self) -> bool:
        """Write the pending counts; keep them for the next try if the database is down."""
        with self._lock:
            batch, self._pending = self._pending, {}
        if not batch:
            return True
        try:
            with session_scope(self.sessions) as session:
                for pk, (n, last) in sorted(batch.items()):
                    session.execute(
                        update(MailingList)
                        .where(MailingList.id == pk)
                        .values(
                            post_id=MailingList.post_id + n,
                            last_post_at=func.coalesce(last, MailingList.last_post_at),
                        )
                    )
            return True
        except TryLater as exc:
            log.warning("post counts kept for the next try: %s", exc)
            with self._lock:
                for pk, (n, last) in batch.items():
                    m, later = self._pending.get(pk, (0, last))
                    self._pending[pk] = (n + m, max(last, later))
            return False

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="post-counter", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.flush()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        self.flush()
