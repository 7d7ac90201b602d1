"""HyperKitty's archive read straight from its database (``mtaplugin archive import LIST
--hyperkitty-db URL``), for a Mailman 3 suite moving in with its archive.

HyperKitty does not keep the messages as they came: it keeps each post's fields
(``hyperkitty_email``: Message-ID, sender, subject, text, date and the sender's UTC offset,
In-Reply-To, its parent in the thread) and its attachments (``hyperkitty_attachment``).
Each post is made into a message again from them, as HyperKitty's own mbox export does,
with a ``References:`` field from its chain of parents, so that the archive threads it as
HyperKitty did (a reply whose In-Reply-To was lost keeps its place).  Message-IDs and dates
are kept, so HyperKitty's links (``…/message/HASH/``, ``…/thread/HASH/``) redirect to the
same posts (:mod:`mtaplugin.web.pages.legacy_archive`)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from email.message import EmailMessage
from email.policy import SMTP
from email.utils import format_datetime, formataddr
from typing import Any

from sqlalchemy import create_engine, text
from sqlalchemy.exc import SQLAlchemyError

from mtaplugin.errors import InvalidInput
from mtaplugin.i18n import _

#: posts read per query (their attachments in one more)
BATCH = 500

_EMAILS = text(
    "SELECT e.id, e.message_id, e.sender_id, e.sender_name, e.subject, e.content, e.date,"
    " e.timezone, e.in_reply_to, e.parent_id"
    " FROM hyperkitty_email e JOIN hyperkitty_mailinglist m ON m.id = e.mailinglist_id"
    " WHERE m.name = :name AND e.id > :after ORDER BY e.id LIMIT :limit"
)
_PARENTS = text(
    "SELECT e.id, e.message_id, e.parent_id FROM hyperkitty_email e"
    " JOIN hyperkitty_mailinglist m ON m.id = e.mailinglist_id WHERE m.name = :name"
)


@dataclass(frozen=True)
class Chain:
    """Each post's Message-ID and parent, to write its References."""

    message_id: dict[int, str]
    parent: dict[int, int | None]

    def references(self, pk: int) -> list[str]:
        """The Message-IDs of the post's ancestors, the thread's first post first."""
        found: list[str] = []
        seen = {pk}
        at = self.parent.get(pk)
        while at is not None and at not in seen and at in self.message_id:
            seen.add(at)
            found.append(self.message_id[at])
            at = self.parent.get(at)
        return found[::-1]


def _when(value: Any) -> datetime:
    """A stored date (a datetime, or SQLite's text) as an aware UTC datetime."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value.replace(" ", "T"))
    if not isinstance(value, datetime):
        raise ValueError(f"not a date: {value!r}")
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def message(row: Any, references: list[str], attachments: list[Any]) -> bytes:
    """One HyperKitty post as a message again."""
    msg = EmailMessage(policy=SMTP)
    address = str(row.sender_id or "")
    msg["From"] = formataddr((str(row.sender_name or ""), address)) if address else ""
    msg["Subject"] = " ".join(str(row.subject or "").split())
    offset = timezone(timedelta(minutes=int(row.timezone or 0)))
    msg["Date"] = format_datetime(_when(row.date).astimezone(offset))
    msg["Message-ID"] = f"<{str(row.message_id).strip('<> ')}>"
    if row.in_reply_to:
        msg["In-Reply-To"] = f"<{str(row.in_reply_to).strip('<> ')}>"
    if references:
        msg["References"] = " ".join(f"<{mid.strip('<> ')}>" for mid in references)
    msg.set_content(str(row.content or ""))
    for part in attachments:
        maintype, _sep, subtype = str(part.content_type or "application/octet-stream").partition(
            "/"
        )
        msg.add_attachment(
            bytes(part.content or b""),
            maintype=maintype or "application",
            subtype=subtype or "octet-stream",
            filename=str(part.name or f"attachment-{part.counter}"),
        )
    return msg.as_bytes()


def posts(url: str, list_address: str) -> Iterator[tuple[bytes, datetime]]:
    """The posts HyperKitty keeps for ``list_address``, in the order it archived them (the
    archive threads them in any order), each as a message and its date.  Raises
    :class:`InvalidInput` naming ``hyperkitty-db``."""
    try:
        engine = create_engine(url)
    except (SQLAlchemyError, ValueError) as e:
        raise InvalidInput("hyperkitty-db", _bad(url, e)) from None
    name = list_address.lower()
    try:
        with engine.connect() as conn:
            rows = conn.execute(_PARENTS, {"name": name}).all()
            if not rows:
                raise InvalidInput(
                    "hyperkitty-db",
                    _("HyperKitty keeps no post of {list} in {url}").format(
                        list=list_address, url=url
                    ),
                )
            chain = Chain(
                {r.id: str(r.message_id) for r in rows}, {r.id: r.parent_id for r in rows}
            )
            after = 0
            while True:
                batch = conn.execute(_EMAILS, {"name": name, "after": after, "limit": BATCH}).all()
                if not batch:
                    return
                ids = tuple(r.id for r in batch)
                parts: dict[int, list[Any]] = {}
                for part in conn.execute(
                    text(
                        "SELECT email_id, counter, name, content_type, content"
                        " FROM hyperkitty_attachment WHERE email_id IN ("
                        + ", ".join(str(int(i)) for i in ids)
                        + ") ORDER BY email_id, counter"
                    )
                ):
                    parts.setdefault(part.email_id, []).append(part)
                for row in batch:
                    yield (
                        message(row, chain.references(row.id), parts.get(row.id, [])),
                        _when(row.date),
                    )
                after = batch[-1].id
    except SQLAlchemyError as e:
        raise InvalidInput("hyperkitty-db", _bad(url, e)) from None
    finally:
        engine.dispose()


def _bad(url: str, error: Exception) -> str:
    return _("cannot read HyperKitty's archive from {url}: {error}").format(
        url=url, error=str(error).splitlines()[0] if str(error) else type(error).__name__
    )
