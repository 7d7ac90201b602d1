"""Whether a domain holds lists, remembered for a few seconds: Postfix's
``relay_domains`` lookup and Exim's router ask about every recipient they route, so for
every member's copy of a post (a member's domain: no list domain).  Rather than a query
per copy, each answer is kept :data:`DOMAINS_FRESH` seconds: one query per distinct
domain in that time.  A domain never asked before is looked up at once (a new list domain
relays at once); one asked just before it became a list domain, or that stopped being
one, within :data:`DOMAINS_FRESH` seconds."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from sqlalchemy import Engine

from mtaplugin.db import connection_scope
from mtaplugin.lists import roster

#: an answer is asked again when older than this (seconds)
DOMAINS_FRESH = 5.0
#: at most this many answers are kept (all are dropped when it is reached)
DOMAINS_KEPT = 100_000


class ListDomains:
    """Is a domain a list domain (or an alias domain of one)?  The database's answer,
    kept ``fresh`` seconds; :class:`~mtaplugin.errors.TryLater` when it must be asked and
    cannot answer."""

    def __init__(
        self,
        engine: Engine,
        fresh: float = DOMAINS_FRESH,
        monotonic: Callable[[], float] = time.monotonic,
        kept: int = DOMAINS_KEPT,
    ) -> None:
        self.engine = engine
        self.fresh = fresh
        self.monotonic = monotonic
        self.kept = kept
        self._answers: dict[str, tuple[bool, float]] = {}
        self._lock = threading.Lock()

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        with self._lock:
            known = self._answers.get(key)
        if known is not None and self.monotonic() - known[1] < self.fresh:
            return known[0]
        with connection_scope(self.engine) as conn:
            found = roster.domain_exists(conn, key)
        with self._lock:
            if len(self._answers) >= self.kept:
                self._answers.clear()
            self._answers[key] = (found, self.monotonic())
        return found
