"""Full-text search of the archive, in the list database itself (no index server).

The index is the table ``archive_fts`` (migration 0022), outside the SQLAlchemy model and
written only by database triggers on ``archived_messages``: a post is indexed in the very
transaction that archives it, re-indexed when its subject, text, attachments or author
change, and leaves the index when it is removed.  The code that archives posts knows
nothing of search.

- SQLite: a contentless FTS5 table (the text is kept once, in ``archived_messages``),
  Unicode words without accents, no stemming; ranked by BM25 (subject first, then author,
  address and attachment names, then the text).
- PostgreSQL: a ``tsvector`` per post with a GIN index, in the text search configuration
  of the list's preferred language (``german`` for ``de``, ``simple`` for a language
  PostgreSQL does not know); ranked by ``ts_rank``.

The sender's address is indexed apart from the rest (migration 0046: the FTS5 column
``address``, the weight C of the ``tsvector``): a visitor who sees addresses obscured
searches without it (:attr:`Query.addresses_hidden`), so that ``anne example com`` does
not confirm who ``anne@…`` is.

What a visitor types: words (all must occur), ``"a phrase"``, ``-word`` (must not occur);
on SQLite ``word*`` also matches words that begin so.  Removed posts are never found.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from functools import reduce
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Float,
    Integer,
    Select,
    case,
    column,
    func,
    literal,
    or_,
    select,
    table,
    text,
)
from sqlalchemy.orm import Session

from mtaplugin.model import ArchivedMessage, MailingList

#: tables of the search index that are not in the SQLAlchemy model (FTS5 adds its shadow
#: tables ``archive_fts_data``, ``_idx``, ``_docsize``, ``_config``)
INDEX_TABLE = "archive_fts"
MAX_PER_PAGE = 100
#: the SQLite index's columns but ``address`` (what anonymous visitors' words search)
PUBLIC_COLUMNS = "subject body files author"
_WORD = re.compile(r"\w+")
_TERM = re.compile(r'(-?)"([^"]*)"?|(-?)(\S+)')


def outside_model(name: str | None) -> bool:
    """Whether a database object belongs to the search index (kept by migration 0022,
    not by the model): Alembic's comparisons leave these alone."""
    return bool(name) and (name == INDEX_TABLE or str(name).startswith(INDEX_TABLE + "_"))


class Order(StrEnum):
    relevance = "relevance"
    date = "date"


@dataclass(frozen=True)
class Term:
    words: tuple[str, ...]
    negated: bool = False
    prefix: bool = False


def parse(query: str) -> list[Term]:
    """What the visitor typed, as terms: words, phrases, ``-excluded``; punctuation goes."""
    terms: list[Term] = []
    for m in _TERM.finditer(query):
        if m.group(2) is not None:
            negated, raw = m.group(1) == "-", m.group(2)
        else:
            negated, raw = m.group(3) == "-", m.group(4)
        words = tuple(w.lower() for w in _WORD.findall(raw))
        if words:
            prefix = m.group(4) is not None and raw.endswith("*") and len(words) == 1
            terms.append(Term(words, negated, prefix))
    return terms


def fts5_match(terms: Sequence[Term]) -> str:
    """An FTS5 MATCH expression of ``terms`` (every word quoted: no syntax from input)."""

    def quoted(term: Term) -> str:
        phrase = '"' + " ".join(term.words) + '"'
        return phrase + "*" if term.prefix else phrase

    wanted = [quoted(t) for t in terms if not t.negated]
    if not wanted:
        return ""
    expr = " AND ".join(wanted)
    for t in terms:
        if t.negated:
            expr = f"({expr}) NOT {quoted(t)}"
    return expr


def websearch_text(terms: Sequence[Term]) -> str:
    """``terms`` again as PostgreSQL's ``websearch_to_tsquery`` reads them."""
    parts = []
    for t in terms:
        phrase = " ".join(t.words)
        if len(t.words) > 1:
            phrase = f'"{phrase}"'
        parts.append(("-" if t.negated else "") + phrase)
    return " ".join(parts) if any(not t.negated for t in terms) else ""


@dataclass(frozen=True)
class Query:
    """A search: the words typed, and filters (lists by primary key, author, dates)."""

    words: str = ""
    list_ids: Sequence[int] = ()
    #: an address (exact), or part of a name or address
    author: str = ""
    #: match ``author`` against display names only (for visitors who may not see addresses)
    author_by_name_only: bool = False
    #: match ``words`` everywhere but in the senders' addresses (for the same visitors)
    addresses_hidden: bool = False
    since: datetime | None = None
    until: datetime | None = None
    order: Order = Order.relevance
    page: int = 1
    per_page: int = 20


@dataclass(frozen=True)
class Hit:
    message: ArchivedMessage
    score: float


@dataclass(frozen=True)
class Results:
    hits: list[Hit]
    total: int
    page: int
    per_page: int
    terms: list[Term] = field(default_factory=list)

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.per_page))


def _when() -> ColumnElement[Any]:
    return func.coalesce(ArchivedMessage.date, ArchivedMessage.archived_at)


def _filters(q: Query, indexed: bool) -> list[ColumnElement[bool]]:
    """The WHERE clauses of ``q``'s filters.  Posts found through the index are not
    removed ones (the triggers take a removed post out of it): ``indexed`` leaves that
    test out, which SQLite would pay with a read of every matching post's whole row
    (``removed`` is stored after the message's bytes)."""
    where: list[ColumnElement[bool]] = [] if indexed else [ArchivedMessage.removed.is_(False)]
    if q.list_ids:
        where.append(ArchivedMessage.mailing_list_id.in_(sorted(set(q.list_ids))))
    author = q.author.strip().lower()
    if author:
        like = "%" + author.replace("\\", "\\\\").replace("%", r"\%").replace("_", r"\_") + "%"
        if q.author_by_name_only:
            where.append(func.lower(ArchivedMessage.sender_name).like(like, escape="\\"))
        elif "@" in author and " " not in author:
            where.append(func.lower(ArchivedMessage.sender) == author)
        else:
            where.append(
                or_(
                    func.lower(ArchivedMessage.sender_name).like(like, escape="\\"),
                    func.lower(ArchivedMessage.sender).like(like, escape="\\"),
                )
            )
    if q.since is not None:
        where.append(_when() >= q.since)
    if q.until is not None:
        where.append(_when() < q.until)
    return where


def _languages(session: Session, list_ids: Sequence[int]) -> list[str]:
    query = select(MailingList.preferred_language).distinct()
    if list_ids:
        query = query.where(MailingList.id.in_(sorted(set(list_ids))))
    return sorted(set(session.scalars(query))) or ["en"]


#: PostgreSQL ranks by relevance the newest this many matching posts of the lists
#: searched, the older matches follow newest first (ts_rank reads each post's whole
#: tsvector: a word in most posts of a big archive would cost seconds)
RANK_WINDOW = 1000


def _tsquery(session: Session, q: Query, words: str) -> ColumnElement[Any]:
    """``words`` as a tsquery in the language of each list searched (any may match)."""
    tsqueries: list[ColumnElement[Any]] = [
        func.websearch_to_tsquery(func.mtaplugin_ts_config(lang), words)
        for lang in _languages(session, q.list_ids)
    ]
    return reduce(lambda a, b: a.op("||")(b), tsqueries)


def _matches(session: Session, terms: Sequence[Term], q: Query, ranked: bool) -> Any | None:
    """(the ids of every post matching ``terms``, a subquery (message_id, score) of the
    posts to order, scored when ``ranked``); None: nothing can match."""
    if session.get_bind().dialect.name == "postgresql":
        words = websearch_text(terms)
        if not words:
            return None
        tsq = _tsquery(session, q, words)
        fts = table(INDEX_TABLE, column("message_id", Integer), column("doc"))
        found: ColumnElement[Any] = fts.c.doc.op("@@")(tsq)
        if q.addresses_hidden:
            # the GIN index finds the posts with the wanted words anywhere; the words
            # then must be (and the excluded ones not be) outside the address (weight C)
            anywhere = _tsquery(session, q, websearch_text([t for t in terms if not t.negated]))
            public = func.ts_filter(fts.c.doc, text("'{a,b,d}'::\"char\"[]"))
            found = fts.c.doc.op("@@")(anywhere) & public.op("@@")(tsq)
        every = select(fts.c.message_id).where(found)
        if not ranked:
            return every, select(
                fts.c.message_id.label("message_id"), literal(0.0, Float).label("score")
            ).where(found).subquery("fts")
        newest = (
            select(ArchivedMessage.id)
            .where(ArchivedMessage.id.in_(every), *_filters(q, indexed=True))
            .order_by(ArchivedMessage.id.desc())
            .limit(RANK_WINDOW)
        )
        rank = case(
            (fts.c.message_id.in_(newest), func.ts_rank(fts.c.doc, tsq)), else_=literal(-1.0)
        )
        return every, (
            select(fts.c.message_id.label("message_id"), rank.label("score"))
            .where(found)
            .subquery("fts")
        )
    match = fts5_match(terms)
    if not match:
        return None
    if q.addresses_hidden:
        match = f"{{{PUBLIC_COLUMNS}}} : ({match})"
    score = f"-bm25({INDEX_TABLE}, 8.0, 1.0, 3.0, 3.0, 3.0)" if ranked else "0.0"
    scored = (
        text(
            f"SELECT rowid AS message_id, {score} AS score "
            f"FROM {INDEX_TABLE} WHERE {INDEX_TABLE} MATCH :match"
        )
        .bindparams(match=match)
        .columns(message_id=Integer, score=Float)
        .subquery("fts")
    )
    return select(scored.c.message_id), scored


def search(session: Session, q: Query) -> Results:
    """One page of the posts matching ``q``, best first (or newest first), and how many.

    With no words, the filters alone choose (newest first): a list's posts by one author."""
    per_page = min(max(1, q.per_page), MAX_PER_PAGE)
    page = max(1, q.page)
    terms = parse(q.words)
    where = _filters(q, indexed=bool(terms))
    count = select(func.count(ArchivedMessage.id))
    ids: Select[Any]
    if terms:
        found = _matches(session, terms, q, ranked=q.order is Order.relevance)
        if found is None:
            return Results([], 0, page, per_page, terms)
        every, fts = found
        # The index first: counted through IN, so that SQLite does not run the MATCH once
        # per post of the list (it would, joined the other way round).
        count = count.where(ArchivedMessage.id.in_(every))
        ids = select(ArchivedMessage.id, fts.c.score).join(
            fts, fts.c.message_id == ArchivedMessage.id
        )
        score = fts.c.score
    else:
        ids = select(ArchivedMessage.id, literal(0.0, Float).label("score"))
        score = None
    total = int(session.scalar(count.where(*where)) or 0)
    if q.order is Order.relevance and score is not None:
        order = [score.desc(), _when().desc(), ArchivedMessage.id.desc()]
    else:
        order = [_when().desc(), ArchivedMessage.id.desc()]
    # the page's ids first (a sort of small rows), then the posts themselves
    page_rows = session.execute(
        ids.where(*where).order_by(*order).limit(per_page).offset((page - 1) * per_page)
    ).all()
    posts = {
        m.id: m
        for m in session.scalars(
            select(ArchivedMessage).where(
                ArchivedMessage.id.in_([i for i, _s in page_rows]),
                ArchivedMessage.removed.is_(False),
            )
        )
    }
    hits = [Hit(posts[i], float(sc or 0.0)) for i, sc in page_rows if i in posts]
    return Results(hits, total, page, per_page, terms)


def excerpt(body: str, terms: Sequence[Term], width: int = 240) -> str:
    """About ``width`` characters of ``body`` around the first word of ``terms`` found
    (its beginning when none is), on one line."""
    flat = " ".join(body.split())
    lower = flat.lower()
    at = -1
    for t in terms:
        if not t.negated:
            found = lower.find(t.words[0])
            if found >= 0 and (at < 0 or found < at):
                at = found
    start = max(0, at - width // 3) if at >= 0 else 0
    piece = flat[start : start + width]
    return ("…" if start else "") + piece + ("…" if start + width < len(flat) else "")


def reindex(session: Session, mailing_list_id: int | None = None) -> int:
    """Index again the posts of one list (or of all): after a change of the list's language
    (PostgreSQL) or to repair the index.  SQLite's index knows no languages and is rebuilt
    whole.  Returns how many posts the index holds for the list (or in all) afterwards."""
    params: dict[str, Any] = {"pk": mailing_list_id}
    which = "" if mailing_list_id is None else " AND m.mailing_list_id = :pk"
    if session.get_bind().dialect.name == "postgresql":
        session.execute(
            text(
                f"DELETE FROM {INDEX_TABLE} WHERE message_id IN "
                f"(SELECT m.id FROM archived_messages m WHERE true{which})"
            ),
            params,
        )
        session.execute(
            text(
                f"INSERT INTO {INDEX_TABLE}(message_id, doc) SELECT m.id, mtaplugin_archive_doc("
                "mtaplugin_ts_config(l.preferred_language), m.subject, m.text, m.attachments, "
                "m.sender, m.sender_name) FROM archived_messages m "
                f"JOIN mailing_lists l ON l.id = m.mailing_list_id WHERE NOT m.removed{which}"
            ),
            params,
        )
    else:
        session.execute(text(f"INSERT INTO {INDEX_TABLE}({INDEX_TABLE}) VALUES ('delete-all')"))
        session.execute(
            text(
                f"INSERT INTO {INDEX_TABLE}(rowid, subject, body, files, author, address) "
                f"SELECT m.id, m.subject, m.text, {_SQLITE_FILES}, m.sender_name, m.sender "
                "FROM archived_messages m WHERE NOT m.removed"
            )
        )
    query = (
        select(func.count()).select_from(ArchivedMessage).where(ArchivedMessage.removed.is_(False))
    )
    if mailing_list_id is not None:
        query = query.where(ArchivedMessage.mailing_list_id == mailing_list_id)
    return int(session.scalar(query) or 0)


#: the attachment names of post ``m`` as one string (as the triggers index them: 0022, 0046)
_SQLITE_FILES = (
    "CASE WHEN json_valid(m.attachments) THEN coalesce((SELECT group_concat("
    "json_extract(j.value, '$.name'), ' ') FROM json_each(m.attachments) AS j "
    "WHERE j.type = 'object'), '') ELSE '' END"
)
