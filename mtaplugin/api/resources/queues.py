"""``/queues``: Mailman's queues, mapped onto mtaplugin's outbox.

* ``out``: messages waiting for their first delivery attempt;
* ``retry``: messages the MTA deferred (4xx), waiting for their next attempt;
* ``bad``: messages given up on (failed).

* ``archive``: archived posts waiting for an external archiver (``archiver_queue``; not
  the failed ones);
* ``nntp``: articles waiting for the news server;
* ``pipeline``: accepted posts waiting for the worker's fan-out to the archive, the
  digest, the archivers and the news gateway (``accepted_posts``, :mod:`mtaplugin.accepted`);
* ``shunt``: accepted posts whose fan-out failed (kept, marked failed).

Mailman's other queues (in, ...) do not exist here: a post is decided inside the MTA's
SMTP transaction, never queued; they are shown empty.  Injecting (``POST
/queues/out``, ``virgin``) puts the text in the outbox for the list's regular members.
"""

from __future__ import annotations

from typing import Any

import falcon
from sqlalchemy import ColumnElement, and_, func, select

from mtaplugin import outbox
from mtaplugin.api.dialect import Params, bad_request, created, no_content, not_found, resource
from mtaplugin.api.resources.base import principal, session, url, workflow
from mtaplugin.enums import OutboxStatus
from mtaplugin.errors import NotFound
from mtaplugin.i18n import _
from mtaplugin.lists import roster
from mtaplugin.mailauth.service import SealInfo
from mtaplugin.manage import lists
from mtaplugin.model import AcceptedPost, ArchiverHandOff, NewsArticle, OutboxMessage

#: files shown per queue (the count is always exact)
MAX_FILES = 1000

_OUTBOX: dict[str, ColumnElement[bool]] = {
    "out": and_(OutboxMessage.status == OutboxStatus.queued, OutboxMessage.attempts == 0),
    "retry": and_(OutboxMessage.status == OutboxStatus.queued, OutboxMessage.attempts > 0),
    "bad": OutboxMessage.status == OutboxStatus.failed,
}
_EMPTY = ("bounces", "command", "digest", "in", "virgin")
#: the queues of the other tables: (the table's id column, which rows, the table)
_TABLES: dict[str, tuple[Any, ColumnElement[bool], str]] = {
    # the Usenet gateway's: articles waiting for the news server (not the failed ones)
    "nntp": (NewsArticle.id, NewsArticle.failed.is_(False), "news_queue"),
    # the external archivers': hand-offs waiting (not the failed ones)
    "archive": (ArchiverHandOff.id, ArchiverHandOff.failed.is_(False), "archiver_queue"),
    # the accepted posts waiting for the fan-out, and those whose fan-out failed
    "pipeline": (AcceptedPost.id, AcceptedPost.failed.is_(False), "accepted_posts"),
    "shunt": (AcceptedPost.id, AcceptedPost.failed.is_(True), "accepted_posts"),
}
NAMES = sorted((*_OUTBOX, *_EMPTY, *_TABLES))
_DIRECTORIES = {name: table for name, (_id, _which, table) in _TABLES.items()}


def queue_entry(req: falcon.Request, name: str) -> dict[str, Any]:
    files: list[str] = []
    count = 0
    if name in _OUTBOX:
        s = session(req)
        count = int(s.scalar(select(func.count(OutboxMessage.id)).where(_OUTBOX[name])) or 0)
        ids = s.scalars(
            select(OutboxMessage.id)
            .where(_OUTBOX[name])
            .order_by(OutboxMessage.id)
            .limit(MAX_FILES)
        )
        files = [str(i) for i in ids]
    elif name in _TABLES:
        s = session(req)
        column, which, _table = _TABLES[name]
        count = int(s.scalar(select(func.count(column)).where(which)) or 0)
        files = [
            str(i) for i in s.scalars(select(column).where(which).order_by(column).limit(MAX_FILES))
        ]
    return resource(
        {
            "name": name,
            "directory": _DIRECTORIES.get(name, "outbox" if name in _OUTBOX else ""),
            "count": count,
            "files": files,
            "self_link": url(req, "queues", name),
        }
    )


def _name(name: str) -> str:
    if name not in NAMES:
        raise not_found(_("No such queue: {n}").format(n=name))
    return name


class Queues:
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        principal(req).require_admin()
        entries = [queue_entry(req, name) for name in NAMES]
        body: dict[str, Any] = {"start": 0, "total_size": len(entries), "entries": entries}
        resp.media = resource(body)


class OneQueue:
    def on_get(self, req: falcon.Request, resp: falcon.Response, name: str) -> None:
        principal(req).require_admin()
        resp.media = queue_entry(req, _name(name))

    def on_post(self, req: falcon.Request, resp: falcon.Response, name: str) -> None:
        principal(req).require_admin()
        queue = _name(name)
        if queue not in ("out", "virgin"):
            raise bad_request(
                _("messages cannot be injected into {q}: posts come in through the MTA").format(
                    q=queue
                )
            )
        p = Params.of(req)
        p.only({"list_id", "text"})
        try:
            mlist = lists.get(session(req), p.str("list_id", required=True))
        except NotFound:
            raise bad_request(_("No such list: {l}").format(l=p.str("list_id"))) from None
        text = p.str("text", required=True)
        s = session(req)
        recipients = list(roster.delivery_emails(roster.regular_recipients(s, mlist.id), sender=""))
        if not recipients:
            raise bad_request(_("the list has no members to deliver to"))
        queued = outbox.enqueue(
            s,
            mlist.bounces_address,
            recipients,
            # Mailman's out queue holds messages ready to go: no pipeline, only the seal
            text.encode("utf-8"),
            kind="inject",
            mailing_list_id=mlist.id,
            seal=SealInfo(mlist.mail_host),
            now=workflow(req).now(),
        )
        created(resp, url(req, "queues", "out", queued))


class QueueFile:
    def on_delete(self, req: falcon.Request, resp: falcon.Response, name: str, file: str) -> None:
        principal(req).require_admin()
        queue = _name(name)
        row = None
        if queue in _OUTBOX and file.isdigit():
            row = session(req).scalar(
                select(OutboxMessage).where(OutboxMessage.id == int(file), _OUTBOX[queue])
            )
        if row is None:
            raise not_found(_("No such queue file: {f}").format(f=file))
        session(req).delete(row)
        no_content(resp)
