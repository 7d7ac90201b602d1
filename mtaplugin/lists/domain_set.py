"""The list domains a front end keeps in memory: Postfix's ``relay_domains`` lookup and
Exim's router ask about every recipient they route, so for every member's copy of a post
(a member's domain: no list domain).  Rather than a query per copy, the set of list
domains is read again at most every :data:`DOMAINS_FRESH` seconds (one query a second on
a busy host, none on an idle one): a domain created is known within that time."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from sqlalchemy import Engine

from mtaplugin.db import connection_scope
from mtaplugin.lists import roster

#: the set of list domains is read again when older than this (seconds)
DOMAINS_FRESH = 1.0


class ListDomains:
    """The list domains (and alias domains) of the database, read again when older than
    ``fresh`` seconds; :class:`~mtaplugin.errors.TryLater` when they must be read and
    the database cannot answer."""

    def __init__(
        self,
        engine: Engine,
        fresh: float = DOMAINS_FRESH,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.engine = engine
        self.fresh = fresh
        self.monotonic = monotonic
        self._domains: frozenset[str] = frozenset()
        self._read_at: float | None = None
        self._lock = threading.Lock()

    def __contains__(self, key: str) -> bool:
        with self._lock:
            now = self.monotonic()
            if self._read_at is None or now - self._read_at >= self.fresh:
                with connection_scope(self.engine) as conn:
                    self._domains = roster.list_domains(conn)
                self._read_at = now
            return key in self._domains
