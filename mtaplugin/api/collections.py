"""Collections: ``{"start", "total_size", "entries", "http_etag"}``, paged in SQL.

``?count=N&page=P`` (1-based) becomes ``LIMIT N OFFSET (P-1)*N``, and ``total_size`` one
``COUNT``; without them the whole collection is returned, as Mailman does.  ``entries`` is
left out when empty (Mailman's shape).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any

import falcon
from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

from mtaplugin.api.dialect import INT64_MAX, Params, invalid
from mtaplugin.i18n import _

PAGING = ("count", "page")


def paging(req: falcon.Request) -> tuple[int | None, int]:
    params = Params.of(req)
    # Mailman takes any page size: Postorius asks for every list with count=sys.maxsize
    count = params.int("count", maximum=INT64_MAX)
    page = params.int("page", maximum=INT64_MAX)
    if count is not None and count < 0:
        raise invalid("count", _("must not be negative"))
    if page is not None and page < 1:
        raise invalid("page", _("must be 1 or more"))
    if page is not None and count is None:
        raise invalid("page", _("give count with page"))
    return count, page or 1


def body(entries: Sequence[dict[str, Any]], total: int, start: int) -> dict[str, Any]:
    out: dict[str, Any] = {"start": start, "total_size": total}
    if entries:
        out["entries"] = list(entries)
    # the entries carry their own etags: the collection's is a digest of those
    digest = hashlib.sha1(f"{start} {total}".encode(), usedforsecurity=False)
    for entry in entries:
        digest.update(str(entry.get("http_etag", "")).encode())
    out["http_etag"] = f'"{digest.hexdigest()}"'
    return out


def page_rows(
    req: falcon.Request,
    session: Session,
    query: Select[*tuple[Any, ...]],
    *,
    count_query: Select[*tuple[Any, ...]] | None = None,
    total: int | None = None,
    scalars: bool = False,
    keys: tuple[Select[*tuple[Any, ...]], Any] | None = None,
) -> tuple[list[Any], int, int]:
    """The rows of one page (or all), the total and the start.

    ``count_query`` is a cheaper ``SELECT count(*)`` for the total when the page query
    joins more tables than counting needs; ``total``, a total already known.  ``keys`` =
    (a query of the primary keys in the page order, that key column): the OFFSET is then
    walked on that query alone (an index scan), and the joined query reads only the
    page's rows.
    """
    count, page = paging(req)
    if count is None:
        rows = list(session.scalars(query) if scalars else session.execute(query))
        return rows, len(rows), 0
    if total is None:
        if count_query is None:
            count_query = select(func.count()).select_from(query.order_by(None).subquery())
        total = int(session.scalar(count_query) or 0)
    start = (page - 1) * count
    rows = []
    if count and start < total:
        if keys is not None:
            ids = page_keys(session, keys, start, count, total)
            paged = query.where(keys[1].in_(ids))
        else:
            paged = query.limit(count).offset(start)
        rows = list(session.scalars(paged) if scalars else session.execute(paged))
    return rows, total, start


def page_keys(
    session: Session,
    keys: tuple[Select[*tuple[Any, ...]], Any],
    start: int,
    count: int,
    total: int,
) -> list[Any]:
    """The keys of rows ``start`` to ``start + count`` of ``keys`` = (a query of the keys,
    ordered by that key column alone; the column).  A page in the second half is walked
    from the other end (the same index, backwards), so that the last page of a
    100 000-member roster costs what the first does, not an OFFSET over every row before
    it; ``total`` (the rows the query gives) says where the other end is."""
    key_query, key_column = keys
    if start <= total // 2:
        return list(session.scalars(key_query.limit(count).offset(start)))
    n = max(0, min(count, total - start))
    backwards = key_query.order_by(None).order_by(key_column.desc())
    found = list(session.scalars(backwards.limit(n).offset(total - start - n)))
    found.reverse()
    return found


def from_query(
    req: falcon.Request,
    session: Session,
    query: Select[*tuple[Any, ...]],
    entry: Callable[[Any], dict[str, Any]],
    **options: Any,
) -> dict[str, Any]:
    """Run ``query`` for one page (or all) and make each row an entry with ``entry``
    (options: see :func:`page_rows`)."""
    rows, total, start = page_rows(req, session, query, **options)
    return body([entry(r) for r in rows], total, start)


def from_list(req: falcon.Request, items: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """A small collection built in Python (a few entries: styles, archivers, queues)."""
    count, page = paging(req)
    if count is None:
        return body(items, len(items), 0)
    start = (page - 1) * count
    return body(items[start : start + count], len(items), start)
