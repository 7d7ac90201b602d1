"""``mtaplugin archive import``: an mbox file (or HyperKitty's database,
:mod:`mtaplugin.importers.hyperkitty_db`) into a list's archive, idempotent by
Message-ID (a post the archive holds is skipped, so an import can be run again after an
interruption), threaded as it goes (replies read before their parent are re-parented when
it comes).  Posts are committed in batches, each with its threads."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import BinaryIO

from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.archive import mbox, store
from mtaplugin.model import MailingList

BATCH = 200


@dataclass
class Imported:
    read: int = 0
    archived: int = 0
    skipped: int = 0


def import_mbox(
    sessions: sessionmaker[Session],
    list_id: int,
    stream: BinaryIO,
    now: datetime,
    progress: Callable[[Imported], None] | None = None,
) -> Imported:
    """Import ``stream`` (an mbox file) into the archive of the list ``list_id``."""
    return import_posts(sessions, list_id, mbox.split(stream), now, progress)


def import_posts(
    sessions: sessionmaker[Session],
    list_id: int,
    source: Iterable[tuple[bytes, datetime | None]],
    now: datetime,
    progress: Callable[[Imported], None] | None = None,
) -> Imported:
    """Import ``source`` (each post's bytes, and the date to use when its own is missing
    or absurd) into the archive of the list ``list_id``."""
    done = Imported()
    posts = iter(source)
    while True:
        with sessions.begin() as s:
            mlist = s.get(MailingList, list_id)
            assert mlist is not None
            n = 0
            for raw, when in posts:
                done.read += 1
                # no (sensible) Date: the From_ line's date, else now
                if store.archive(s, mlist, raw, now, check=False, date_fallback=when) is None:
                    done.skipped += 1
                else:
                    done.archived += 1
                n += 1
                if n >= BATCH:
                    break
        if progress is not None:
            progress(done)
        if n < BATCH:
            return done
