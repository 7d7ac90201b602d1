"""``/bans`` and ``/lists/{list}/bans`` (exact addresses or ``^regex``), and
``/lists/{list}/header-matches``."""

from __future__ import annotations

from typing import Any

import falcon

from mtaplugin.api import collections
from mtaplugin.api.dialect import (
    Params,
    as_enum,
    as_int,
    created,
    no_content,
    not_found,
    resource,
)
from mtaplugin.api.resources.base import mailing_list, principal, session, url, workflow
from mtaplugin.enums import Action
from mtaplugin.errors import NotFound
from mtaplugin.i18n import _
from mtaplugin.manage import bans, header_matches
from mtaplugin.model import Ban, HeaderMatch, MailingList


def _scope(req: falcon.Request, list: str | None, write: bool) -> MailingList | None:
    if list is None:
        # the site-wide bans are the site's business
        principal(req).require_admin()
        return None
    return mailing_list(req, list, administer=write)


def ban_entry(req: falcon.Request, mlist: MailingList | None, ban: Ban) -> dict[str, Any]:
    parts: tuple[str, ...] = ("lists", mlist.list_id, "bans") if mlist else ("bans",)
    body: dict[str, Any] = {"email": ban.email, "self_link": url(req, *parts, ban.email)}
    if mlist is not None:
        body["list_id"] = mlist.list_id
    return resource(body)


class Bans:
    def on_get(self, req: falcon.Request, resp: falcon.Response, list: str | None = None) -> None:
        mlist = _scope(req, list, write=False)
        Params.of(req).only(collections.PAGING)
        query = bans.query(mlist)
        resp.media = collections.from_query(
            req, session(req), query, lambda b: ban_entry(req, mlist, b), scalars=True
        )

    def on_post(self, req: falcon.Request, resp: falcon.Response, list: str | None = None) -> None:
        mlist = _scope(req, list, write=True)
        p = Params.of(req)
        p.only({"email"})
        email = p.str("email", required=True)
        ban = bans.add(session(req), mlist, email, clock=workflow(req).clock)
        parts: tuple[str, ...] = ("lists", mlist.list_id, "bans") if mlist else ("bans",)
        created(resp, url(req, *parts, ban.email))


class OneBan:
    def on_get(
        self, req: falcon.Request, resp: falcon.Response, email: str, list: str | None = None
    ) -> None:
        mlist = _scope(req, list, write=False)
        resp.media = ban_entry(req, mlist, bans.get(session(req), mlist, email))

    def on_delete(
        self, req: falcon.Request, resp: falcon.Response, email: str, list: str | None = None
    ) -> None:
        mlist = _scope(req, list, write=True)
        bans.remove(session(req), mlist, email)
        no_content(resp)


# --- header matches -------------------------------------------------------------------------
def match_entry(req: falcon.Request, mlist: MailingList, hm: HeaderMatch) -> dict[str, Any]:
    body: dict[str, Any] = {
        "header": hm.header,
        "pattern": hm.pattern,
        "position": hm.position,
        "self_link": url(req, "lists", mlist.list_id, "header-matches", hm.position),
    }
    if hm.action is not None:
        body["action"] = hm.action.value
    if hm.tag:
        body["tag"] = hm.tag
    return resource(body)


def _action(p: Params) -> Action | None:
    value = p.str("action")
    if value in (None, "", "None"):
        return None
    return as_enum("action", value, Action)


class HeaderMatches:
    def on_get(self, req: falcon.Request, resp: falcon.Response, list: str) -> None:
        mlist = mailing_list(req, list)
        Params.of(req).only(collections.PAGING)
        items = [
            match_entry(req, mlist, hm) for hm in header_matches.all_matches(session(req), mlist)
        ]
        resp.media = collections.from_list(req, items)

    def on_post(self, req: falcon.Request, resp: falcon.Response, list: str) -> None:
        mlist = mailing_list(req, list, administer=True)
        p = Params.of(req)
        p.only({"header", "pattern", "action", "tag"})
        hm = header_matches.add(
            session(req),
            mlist,
            p.str("header", required=True),
            p.str("pattern", required=True),
            _action(p),
            p.text("tag"),
        )
        created(resp, url(req, "lists", mlist.list_id, "header-matches", hm.position))

    def on_delete(self, req: falcon.Request, resp: falcon.Response, list: str) -> None:
        mlist = mailing_list(req, list, administer=True)
        header_matches.clear(session(req), mlist)
        no_content(resp)


class FindHeaderMatches:
    def _find(self, req: falcon.Request, resp: falcon.Response, list: str) -> None:
        mlist = mailing_list(req, list)
        p = Params.of(req)
        p.only({"header", "action", "tag", *collections.PAGING})
        header = (p.text("header") or "").strip().lower() or None
        action = _action(p)
        tag = p.text("tag")
        found = [
            match_entry(req, mlist, hm)
            for hm in header_matches.all_matches(session(req), mlist)
            if (header is None or hm.header == header)
            and (action is None or hm.action == action)
            and (tag is None or hm.tag == tag)
        ]
        if not found:
            raise not_found(_("No matching header matches found"))
        resp.media = collections.from_list(req, found)

    on_get = _find
    on_post = _find


class OneHeaderMatch:
    def _get(self, req: falcon.Request, mlist: MailingList, position: str) -> HeaderMatch:
        try:
            return header_matches.get(session(req), mlist, as_int("position", position))
        except (NotFound, falcon.HTTPBadRequest):
            raise not_found(_("No header match at position {p}").format(p=position)) from None

    def on_get(self, req: falcon.Request, resp: falcon.Response, list: str, position: str) -> None:
        mlist = mailing_list(req, list)
        resp.media = match_entry(req, mlist, self._get(req, mlist, position))

    def _update(
        self, req: falcon.Request, resp: falcon.Response, list: str, position: str, full: bool
    ) -> None:
        mlist = mailing_list(req, list, administer=True)
        hm = self._get(req, mlist, position)
        p = Params.of(req)
        p.only({"header", "pattern", "action", "tag", "position"})
        header_matches.change(
            session(req),
            mlist,
            hm,
            p.str("header", required=full) or hm.header,
            p.str("pattern", required=full) or hm.pattern,
            _action(p) if full or "action" in p else hm.action,
            p.text("tag") if full or "tag" in p else hm.tag,
            p.int("position"),
        )
        no_content(resp)

    def on_patch(
        self, req: falcon.Request, resp: falcon.Response, list: str, position: str
    ) -> None:
        self._update(req, resp, list, position, full=False)

    def on_put(self, req: falcon.Request, resp: falcon.Response, list: str, position: str) -> None:
        self._update(req, resp, list, position, full=True)

    def on_delete(
        self, req: falcon.Request, resp: falcon.Response, list: str, position: str
    ) -> None:
        mlist = mailing_list(req, list, administer=True)
        hm = self._get(req, mlist, position)
        header_matches.remove(session(req), mlist, hm.position)
        no_content(resp)
