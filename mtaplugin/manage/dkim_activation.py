"""The ``dkim-check`` job: every hour, each DKIM key that does not sign yet is looked up in
DNS, and one that DNS publishes is activated (it signs from then on), as ``mtaplugin dkim
check DOMAIN`` does.  Each key in a transaction of its own; a key whose lookup DNS cannot
answer now is simply looked up again at the next run."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Protocol

from mtaplugin.db import session_scope
from mtaplugin.errors import TryLater
from mtaplugin.manage import dkim
from mtaplugin.model import DkimKey
from mtaplugin.vocabulary.job import JobContext, JobWorld

if TYPE_CHECKING:
    from mtaplugin.mailauth.resolver import Resolver

log = logging.getLogger(__name__)


class DkimWorld(JobWorld, Protocol):
    """What the job reads from the world: a job's, and the resolver that looks keys up."""

    @property
    def resolver(self) -> Resolver: ...


def check_waiting_keys(ctx: JobContext[DkimWorld]) -> int:
    """Activate every waiting key that DNS publishes; returns how many."""
    with session_scope(ctx.world.sessions) as session:
        ids = [key.id for key in dkim.waiting(session)]
    activated = 0
    for key_id in ids:
        with session_scope(ctx.world.sessions) as session:
            key = session.get(DkimKey, key_id)
            if key is None or key.active:
                continue  # removed or activated meanwhile
            host = key.domain.mail_host
            try:
                ok, found = dkim.check(ctx.world.resolver, key, ctx.now)
            except TryLater as exc:
                log.warning("dkim-check: %s: DNS cannot answer now (%s); next run", host, exc)
                continue
            if ok:
                activated += 1
                log.info("dkim-check: %s: %s; the key signs from now on", host, found)
            else:
                log.info("dkim-check: %s: %s; the key does not sign yet", host, found)
    return activated
