"""Which of the lists named by ``@list`` entries (:mod:`mtaplugin.posting.atlists`) the
sender of a post is a member of, looked up when the post is decided.

The named lists are found by name with their ``generation`` in one query, and each one's
roster is read from its snapshot in the engine's :class:`~mtaplugin.lists.cache.SnapshotCache`
(the same snapshot a post to that list uses): a change to that list's roster moves its
generation and so reloads it, and a post to a list that names no other list costs nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from sqlalchemy import Connection, and_, or_, select
from sqlalchemy.orm import Session

from mtaplugin.enums import MemberRole
from mtaplugin.lists.cache import SnapshotCache
from mtaplugin.model import Domain, MailingList
from mtaplugin.posting.atlists import referenced
from mtaplugin.posting.snapshot import ListSnapshot


def memberships(
    db: Callable[[], Connection],
    cache: SnapshotCache,
    sender: str,
    snapshots: Iterable[ListSnapshot],
) -> frozenset[str]:
    """The lists (``list@domain``) named in the nonmember settings of the lists of
    ``snapshots`` that ``sender`` is a member of (``db()``, the decision's transaction, is
    asked for only when they name some)."""
    if not sender:
        return frozenset()
    names: set[str] = set()
    for snap in snapshots:
        names |= referenced(snap.mlist) if snap.at_lists is None else snap.at_lists
    if not names:
        return frozenset()
    conn = db()
    hosts = {name.split("@", 1)[1] for name in names}
    # ``@list@ALIAS``: the list of the domain that has ALIAS as its alias domain
    real: dict[str, str] = {
        str(alias): str(host)
        for alias, host in conn.execute(
            select(Domain.alias_domain, Domain.mail_host).where(Domain.alias_domain.in_(hosts))
        )
    }
    written: dict[str, set[str]] = {}  # list@domain -> the names the entries gave it
    for name in names:
        local, host = name.split("@", 1)
        written.setdefault(f"{local}@{real.get(host, host)}", set()).add(name)
    wanted = [name.split("@", 1) for name in sorted(written)]
    rows = conn.execute(
        select(
            MailingList.id, MailingList.generation, MailingList.list_name, MailingList.mail_host
        ).where(
            or_(
                *(
                    and_(MailingList.list_name == local, MailingList.mail_host == host)
                    for local, host in wanted
                )
            )
        )
    ).all()
    found = set()
    for pk, generation, list_name, mail_host in rows:
        other = cache.cached(pk, generation)
        if other is None:
            with Session(bind=conn) as session:
                other = cache.get(session, pk, generation)
        if MemberRole.member in other.roles_of(sender):
            found |= written.get(f"{list_name}@{mail_host}".lower(), set())
    return frozenset(found)
