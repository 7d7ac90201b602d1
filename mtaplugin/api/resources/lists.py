"""``/lists``, ``/lists/find``, ``/lists/styles``, ``/lists/{list}``, its archivers and
its digest."""

from __future__ import annotations

import json
import threading
from typing import Any

import falcon
from sqlalchemy import ColumnElement, Select, func, select

from mtaplugin import archivers
from mtaplugin.api import collections
from mtaplugin.api.counts import member_counts
from mtaplugin.api.dialect import (
    Params,
    as_bool,
    bad_request,
    created,
    missing,
    no_content,
    not_found,
    resource,
)
from mtaplugin.api.resources.base import (
    WholeOrPart,
    mailing_list,
    principal,
    session,
    url,
    workflow,
)
from mtaplugin.digests import send as send_digests
from mtaplugin.enums import MemberRole
from mtaplugin.errors import AlreadyExists, NotFound
from mtaplugin.i18n import _
from mtaplugin.manage import domains
from mtaplugin.manage import lists as manage_lists
from mtaplugin.model import Address, MailingList, Member, User


def list_query(*where: ColumnElement[bool]) -> Select[*tuple[Any, ...]]:
    """The columns a list entry shows (not the ~100 settings), with its member count."""
    return (
        select(
            MailingList.advertised,
            MailingList.description,
            MailingList.display_name,
            MailingList.list_id,
            MailingList.list_name,
            MailingList.mail_host,
            MailingList.volume,
            MailingList.id,
            MailingList.generation,
        )
        .where(*where)
        .order_by(MailingList.mail_host, MailingList.list_name)
    )


def list_entries(req: falcon.Request, rows: list[Any]) -> list[dict[str, Any]]:
    counts = member_counts(session(req), [(r.id, r.generation) for r in rows])
    lists_url = url(req, "lists")
    entries = []
    for advertised, description, display, list_id, name, host, volume, pk, _gen in rows:
        # list_id is letters, digits, '.', '-' and '_': no quoting needed in the URL
        entries.append(
            resource(
                {
                    "advertised": advertised,
                    "description": description,
                    "display_name": display,
                    "fqdn_listname": f"{name}@{host}",
                    "list_id": list_id,
                    "list_name": name,
                    "mail_host": host,
                    "member_count": counts[pk],
                    "volume": volume,
                    "self_link": f"{lists_url}/{list_id}",
                }
            )
        )
    return entries


def _visible(req: falcon.Request, *where: ColumnElement[bool]) -> list[ColumnElement[bool]]:
    conditions = list(where)
    if (visible := principal(req).lists_filter()) is not None:
        conditions.append(visible)
    p = Params.of(req)
    if p.raw("advertised") is not None and as_bool("advertised", p.raw("advertised")):
        conditions.append(MailingList.advertised.is_(True))
    return conditions


#: the JSON of recent pages of lists, by (what the request asks, who asks), each with the
#: fingerprint of the lists it showed; per process, cleared when full
_pages: dict[tuple[Any, ...], tuple[tuple[int, ...], bytes]] = {}
_pages_lock = threading.Lock()
_PAGES_MAX = 512
_FINGERPRINT = select(
    func.count(MailingList.id),
    func.coalesce(func.sum(MailingList.id), 0),
    func.coalesce(func.max(MailingList.id), 0),
    func.coalesce(func.sum(MailingList.generation), 0),
)


def lists_collection(
    req: falcon.Request, resp: falcon.Response, scope: str = "", *where: ColumnElement[bool]
) -> None:
    """Answer a collection of lists (``scope`` names ``where`` in the page cache).

    One query gives the total and a fingerprint of the visible lists: their count, the
    sums and the maximum of their primary keys and the sum of their generations.  A
    list's generation moves on every change to its row and to its members (the triggers
    of migration 0002), and a list created or deleted changes the key sums, so a page
    built under the same fingerprint is still right: its JSON is answered again without
    reading the rows, counting members or encoding (Postorius asks for the same pages
    over and over)."""
    p = Params.of(req)
    p.only({"advertised", *collections.PAGING})
    conditions = _visible(req, *where)
    who = principal(req)
    key = (
        req.context.base,
        scope,
        who.is_admin,
        who.domains,
        who.administers | who.moderates,
        p.raw("advertised"),
        collections.paging(req),
    )
    query = _FINGERPRINT.where(*conditions) if conditions else _FINGERPRINT
    total, id_sum, id_max, generations = session(req).execute(query).one()
    fingerprint = (int(total), int(id_sum), int(id_max), int(generations))
    with _pages_lock:
        hit = _pages.get(key)
    if hit is not None and hit[0] == fingerprint:
        data = hit[1]
    else:
        rows, total, start = collections.page_rows(
            req, session(req), list_query(*conditions), total=int(total)
        )
        body = collections.body(list_entries(req, rows), total, start)
        data = json.dumps(body, ensure_ascii=False).encode()
        with _pages_lock:
            if len(_pages) >= _PAGES_MAX:
                _pages.clear()
            _pages[key] = (fingerprint, data)
    resp.data = data
    resp.content_type = falcon.MEDIA_JSON


class Lists:
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        lists_collection(req, resp)

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        p = Params.of(req)
        p.only({"fqdn_listname", "style_name", "display_name", "description"})
        name = p.str("fqdn_listname", required=True)
        host = name.rpartition("@")[2].strip().lower()
        principal(req).check_domain(host)
        try:
            mlist = manage_lists.create(
                session(req),
                name,
                style_name=p.text("style_name") or manage_lists.DEFAULT_STYLE,
                display_name=p.text("display_name") or "",
                description=p.text("description") or "",
                clock=workflow(req).clock,
            )
        except AlreadyExists:
            raise bad_request(_("Mailing list exists")) from None
        except NotFound:
            raise bad_request(_("Domain does not exist: {host}").format(host=host)) from None
        created(resp, url(req, "lists", mlist.list_id))


class DomainLists:
    def on_get(self, req: falcon.Request, resp: falcon.Response, domain: str) -> None:
        try:
            d = domains.get(session(req), domain)
        except NotFound:
            raise not_found(_("No such domain: {d}").format(d=domain)) from None
        lists_collection(req, resp, d.mail_host, MailingList.mail_host == d.mail_host)


class FindLists:
    def _find(self, req: falcon.Request, resp: falcon.Response) -> None:
        p = Params.of(req)
        p.only({"subscriber", "role", *collections.PAGING})
        subscriber = p.str("subscriber", required=True).strip().lower()
        role = p.enum("role", MemberRole)
        matches = (
            select(Member.mailing_list_id)
            .join(Address, Address.id == Member.address_id)
            .outerjoin(User, User.id == Address.user_id)
        )
        if "@" in subscriber:
            matches = matches.where(Address.email == subscriber)
        else:
            matches = matches.where(User.user_id == subscriber)
        if role is not None:
            matches = matches.where(Member.role == role)
        else:
            matches = matches.where(Member.role != MemberRole.nonmember)
        conditions: list[ColumnElement[bool]] = [MailingList.id.in_(matches)]
        if (visible := principal(req).lists_filter()) is not None:
            conditions.append(visible)
        count = select(func.count(MailingList.id)).where(*conditions)
        rows, total, start = collections.page_rows(
            req, session(req), list_query(*conditions), count_query=count
        )
        body = collections.body(list_entries(req, rows), total, start)
        if not body["total_size"]:
            raise not_found(_("No matching mailing lists found"))
        resp.media = body

    on_get = _find
    on_post = _find


class Styles:
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        styles = [
            {"name": name, "description": description}
            for name, (description, _apply) in manage_lists.STYLES.items()
        ]
        resp.media = resource(
            {
                "style_names": list(manage_lists.STYLES),
                "styles": styles,
                "default": manage_lists.DEFAULT_STYLE,
            }
        )


class OneList:
    def on_get(self, req: falcon.Request, resp: falcon.Response, list: str) -> None:
        mlist = mailing_list(req, list)
        row = session(req).execute(list_query(MailingList.id == mlist.id)).one()
        resp.media = list_entries(req, [row])[0]

    def on_delete(self, req: falcon.Request, resp: falcon.Response, list: str) -> None:
        mlist = mailing_list(req, list, administer=True)
        session(req).delete(mlist)
        no_content(resp)


class Archivers(WholeOrPart):
    """Mailman's ``{archiver: enabled}``: the archivers the site enables (``[archivers]``;
    the built-in archive always), each on unless the list turned it off.  PATCH/PUT set
    the list's own choice (PUT: every one shown); another name is unexpected, as in
    Mailman 3.3.10 for an archiver its site does not enable."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, list: str) -> None:
        mlist = mailing_list(req, list)
        resp.media = resource(archivers.flags(mlist, workflow(req).archivers))

    def _write(self, req: falcon.Request, resp: falcon.Response, list: str, complete: bool) -> None:
        mlist = mailing_list(req, list, administer=True)
        p = Params.of(req)
        shown = [*archivers.flags(mlist, workflow(req).archivers)]
        p.only(shown)
        if complete:
            absent = [name for name in shown if name not in p]
            if absent:
                raise missing(", ".join(absent))
        chosen = {key: bool(p.bool(key)) for key in [*p.values]}
        mlist.archivers = {**(mlist.archivers or {}), **chosen}
        no_content(resp)


class Digest:
    def on_get(self, req: falcon.Request, resp: falcon.Response, list: str) -> None:
        mlist = mailing_list(req, list)
        resp.media = resource(
            {
                "next_digest_number": mlist.next_digest_number,
                "volume": mlist.volume,
                "self_link": url(req, "lists", mlist.list_id, "digest"),
            }
        )

    def on_post(self, req: falcon.Request, resp: falcon.Response, list: str) -> None:
        """Mailman's: ``bump`` advances the issue (a new volume when the period of
        ``digest_volume_frequency`` changed), ``send`` sends the digest of what waits now,
        ``periodic`` does the same when the list has ``digest_send_periodic``; 202.  No
        flag: 200, nothing to do; ``send`` with ``periodic``: 400."""
        mlist = mailing_list(req, list, administer=True)
        p = Params.of(req)
        p.only({"send", "bump", "periodic"})
        given = {k: bool(p.bool(k, False)) for k in ("send", "bump", "periodic") if k in p}
        if given.get("send") and given.get("periodic"):
            raise bad_request(_("send and periodic options are mutually exclusive"))
        if not given:
            resp.status = falcon.HTTP_200
            resp.text = ""
            return
        db = session(req)
        now = workflow(req).clock()
        if given.get("bump"):
            send_digests.bump(mlist, now)
        if given.get("send") or (given.get("periodic") and mlist.digest_send_periodic):
            try:
                send_digests.send(db, mlist, now, secret_key=getattr(req.context, "secret_key", ""))
            except send_digests.DigestRace as exc:
                raise falcon.HTTPConflict(title="409 Conflict", description=str(exc)) from exc
        resp.status = falcon.HTTP_202
        resp.text = ""
