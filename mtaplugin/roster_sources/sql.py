"""Reading a roster from an SQL query on another database, with SQLAlchemy.

The query's first column is the address, an optional second one the display name.  It
runs in a transaction that is always rolled back, read-only where the database can say so
(PostgreSQL: ``default_transaction_read_only``), with ``timeout`` as the connection and
statement timeout on PostgreSQL.  Give the source a database user that may only SELECT.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import create_engine, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError
from sqlalchemy.pool import NullPool

from mtaplugin.errors import InvalidInput
from mtaplugin.i18n import _
from mtaplugin.model import RosterSource
from mtaplugin.roster_sources.directory import DirectoryAnswer, DirectoryEntry, DirectoryError
from mtaplugin.vocabulary.addresses import normalize_email


def url_of(source: RosterSource) -> URL:
    url = make_url(source.url)
    if source.bind_password:
        url = url.set(password=source.bind_password)
    return url


def _connect_args(url: URL, timeout: int) -> dict[str, Any]:
    if url.get_backend_name() == "postgresql":
        options = f"-c statement_timeout={timeout * 1000} -c default_transaction_read_only=on"
        return {"connect_timeout": timeout, "options": options}
    if url.get_backend_name() == "sqlite":
        return {"timeout": timeout}
    return {}


def _reason(exc: SQLAlchemyError) -> str:
    orig = getattr(exc, "orig", None)
    return str(orig if orig is not None else exc).strip().splitlines()[0] if str(exc) else ""


def read(source: RosterSource) -> DirectoryAnswer:
    try:
        url = url_of(source)
        engine = create_engine(
            url, poolclass=NullPool, connect_args=_connect_args(url, source.timeout)
        )
    except (ArgumentError, SQLAlchemyError, ImportError, ValueError) as exc:
        raise DirectoryError(
            _("SQL source URL cannot be used: {error}").format(error=exc)
        ) from None
    try:
        with engine.connect() as conn:
            try:
                rows = conn.execute(text(source.query)).all()
            finally:
                conn.rollback()
    except SQLAlchemyError as exc:
        raise DirectoryError(
            _("SQL query on {url} failed: {error}").format(
                url=url.render_as_string(hide_password=True), error=_reason(exc)
            )
        ) from None
    finally:
        engine.dispose()
    entries: list[DirectoryEntry] = []
    skipped = 0
    for row in rows:
        if not row or row[0] is None:
            skipped += 1
            continue
        name = str(row[1]) if len(row) > 1 and row[1] is not None else ""
        try:
            entries.append(DirectoryEntry(normalize_email(str(row[0])), name))
        except InvalidInput:
            skipped += 1
    return DirectoryAnswer(tuple(entries), skipped)
