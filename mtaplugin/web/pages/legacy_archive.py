"""The old archive's links, answered with permanent redirects to the same post, thread or
month of mtaplugin's archive, so that a link in an old mail, a web page or a bug tracker
keeps working after the move from Mailman:

- HyperKitty (Mailman 3), under ``/hyperkitty/`` (Debian's path) or ``/archives/``
  (mailman-web's): ``list/LIST@DOMAIN/`` (the archive), ``…/message/HASH/`` (a post, by
  its Message-ID hash, which mtaplugin's archive names posts by too), ``…/thread/HASH/``
  (the thread that post is in), ``…/YEAR/MONTH/`` and ``…/YEAR/MONTH/DAY/`` (the month);
- Pipermail (Mailman 2.1): ``/pipermail/LIST/`` (the archive), ``…/2019-March/`` and its
  ``thread.html``, ``date.html``, ``subject.html``, ``author.html`` (the month),
  ``…/2019-March/012345.html`` (the post Pipermail numbered so, kept at import:
  :mod:`mtaplugin.archive.pipermail`), ``…/2019-March.txt`` and ``.txt.gz`` (the month's
  mbox).

Who may follow a redirect is who may read the archive: a list whose archive the visitor
may not see answers 404 here too, exactly as its pages do.  A name Pipermail used on
several of the site's domains is told apart by the host the visitor asked."""

from __future__ import annotations

from urllib.parse import urlsplit

import falcon
from sqlalchemy import select

from mtaplugin.archive import pipermail
from mtaplugin.i18n import _
from mtaplugin.model import Domain, MailingList
from mtaplugin.web.common import session_of, viewer_of
from mtaplugin.web.pages.archive import may_read
from mtaplugin.web.pages.archive import message_of as _message

HYPERKITTY_PREFIXES = ("/hyperkitty", "/archives")


def _gone_nowhere() -> falcon.HTTPNotFound:
    return falcon.HTTPNotFound(
        title=_("No such archive"),
        description=_("There is no archive here, or you may not see it."),
    )


def _readable(req: falcon.Request, mlist: MailingList | None) -> MailingList:
    if mlist is None or not may_read(viewer_of(req), mlist):
        raise _gone_nowhere()
    return mlist


def _moved(mlist: MailingList, tail: str = "") -> falcon.HTTPMovedPermanently:
    return falcon.HTTPMovedPermanently(f"/archive/{mlist.list_id}/{tail}".rstrip("/"))


def _by_address(req: falcon.Request, fqdn: str) -> MailingList:
    name, _at, host = fqdn.strip().lower().partition("@")
    found = session_of(req).scalar(
        select(MailingList).where(MailingList.list_name == name, MailingList.mail_host == host)
    )
    return _readable(req, found)


def _by_name(req: falcon.Request, name: str) -> MailingList:
    """Pipermail names a list without its domain: the one list of that name, else the
    one on the host the visitor asked (its mail host, or its domain's base URL's)."""
    session = session_of(req)
    found = list(session.scalars(select(MailingList).where(MailingList.list_name == name.lower())))
    if len(found) > 1:
        host = req.host.lower()
        bases = {
            d.mail_host: (urlsplit(d.base_url).hostname or "").lower()
            for d in session.scalars(
                select(Domain).where(Domain.mail_host.in_([m.mail_host for m in found]))
            )
        }
        found = [m for m in found if host in (m.mail_host, bases.get(m.mail_host))]
    return _readable(req, found[0] if len(found) == 1 else None)


class HyperKittyList:
    def on_get(self, req: falcon.Request, resp: falcon.Response, fqdn: str) -> None:
        raise _moved(_by_address(req, fqdn))


class HyperKittyMessage:
    def on_get(self, req: falcon.Request, resp: falcon.Response, fqdn: str, digest: str) -> None:
        mlist = _by_address(req, fqdn)
        raise _moved(mlist, f"message/{_message(req, mlist, digest).message_id_hash}")


class HyperKittyThread:
    def on_get(self, req: falcon.Request, resp: falcon.Response, fqdn: str, digest: str) -> None:
        mlist = _by_address(req, fqdn)
        raise _moved(mlist, f"thread/{_message(req, mlist, digest).thread_id}")


class HyperKittyMonth:
    def on_get(
        self,
        req: falcon.Request,
        resp: falcon.Response,
        fqdn: str,
        year: int,
        month: int,
        day: int | None = None,
    ) -> None:
        mlist = _by_address(req, fqdn)
        if not 1 <= month <= 12:
            raise _moved(mlist)
        raise _moved(mlist, f"{year}/{month}")


class PipermailList:
    def on_get(self, req: falcon.Request, resp: falcon.Response, list_name: str) -> None:
        raise _moved(_by_name(req, list_name.removesuffix(".mbox")))


class PipermailPeriod:
    """``2019-March/`` (the month), ``2019-March.txt`` or ``.txt.gz`` (its mbox)."""

    def on_get(
        self, req: falcon.Request, resp: falcon.Response, list_name: str, period: str
    ) -> None:
        mlist = _by_name(req, list_name)
        bare = period.removesuffix(".gz").removesuffix(".txt")
        when = pipermail.month_of(bare)
        if when is None:
            raise _moved(mlist)
        year, month = when
        if bare != period:
            raise _moved(mlist, f"{year}-{month}.mbox")
        raise _moved(mlist, f"{year}/{month}")


class PipermailPage:
    """``2019-March/012345.html`` (a post), or one of the month's index pages."""

    def on_get(
        self, req: falcon.Request, resp: falcon.Response, list_name: str, period: str, page: str
    ) -> None:
        mlist = _by_name(req, list_name)
        number = pipermail.article_of(page)
        if number is not None:
            digest = pipermail.message_hash(session_of(req), mlist.id, number)
            if digest is None:
                raise falcon.HTTPNotFound(
                    title=_("No such message"),
                    description=_(
                        "This archive holds no message by that number: the list's old "
                        "archive was not imported with its numbers."
                    ),
                )
            raise _moved(mlist, f"message/{_message(req, mlist, digest).message_id_hash}")
        when = pipermail.month_of(period)
        if when is None:
            raise _moved(mlist)
        raise _moved(mlist, f"{when[0]}/{when[1]}")


def add_routes(app: falcon.App[falcon.Request, falcon.Response]) -> None:
    for prefix in HYPERKITTY_PREFIXES:
        base = prefix + "/list/{fqdn}"
        app.add_route(base, HyperKittyList())
        app.add_route(base + "/latest", HyperKittyList())
        app.add_route(base + "/message/{digest}", HyperKittyMessage())
        app.add_route(base + "/thread/{digest}", HyperKittyThread())
        month = HyperKittyMonth()
        app.add_route(base + "/{year:int}/{month:int}", month)
        app.add_route(base + "/{year:int}/{month:int}/{day:int}", month)
    app.add_route("/pipermail/{list_name}", PipermailList())
    app.add_route("/pipermail/{list_name}/{period}", PipermailPeriod())
    app.add_route("/pipermail/{list_name}/{period}/{page}", PipermailPage())
