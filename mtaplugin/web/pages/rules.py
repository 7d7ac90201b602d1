"""List owners: bans and header matches of a list."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TypeVar

import falcon
from sqlalchemy import select

from mtaplugin.enums import Action
from mtaplugin.errors import InvalidInput
from mtaplugin.manage import bans, header_matches
from mtaplugin.manage.members import parse_action
from mtaplugin.model import Ban, HeaderMatch, MailingList
from mtaplugin.web.common import (
    audit,
    find_list,
    gettext,
    redirect_after,
    session_of,
    workflow_of,
)
from mtaplugin.web.forms import form
from mtaplugin.web.render import render_form
from mtaplugin.web.setting_help import choice_label

_Row = TypeVar("_Row", Ban, HeaderMatch)


def _row_of(
    req: falcon.Request, mlist: MailingList, model: type[_Row], field: str, missing: str
) -> _Row:
    """The row of ``mlist`` the form's ``field`` names, or ``missing`` as the problem."""
    row = session_of(req).get(model, int(form(req).get(field) or 0))
    if row is None or row.mailing_list_id != mlist.id:
        raise InvalidInput(field, missing)
    return row


class _RulePage(ABC):
    """A page of one list's rule rows: shown on GET, added to or removed from on POST
    (through :mod:`mtaplugin.manage.bans` and :mod:`~mtaplugin.manage.header_matches`, the
    functions REST calls, so both refuse the same input with the same words)."""

    @abstractmethod
    def _show(
        self, req: falcon.Request, resp: falcon.Response, mlist: MailingList, **extra: str
    ) -> None: ...

    @abstractmethod
    def _change(self, req: falcon.Request, mlist: MailingList) -> str:
        """Add or remove the row the form says; what was done, for the page."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, list_id: str) -> None:
        self._show(req, resp, find_list(req, list_id, "administer"))

    def on_post(self, req: falcon.Request, resp: falcon.Response, list_id: str) -> None:
        mlist = find_list(req, list_id, "administer")
        try:
            message = self._change(req, mlist)
            session_of(req).flush()
        except (InvalidInput, ValueError) as exc:
            problem = f"{exc.field}: {exc.problem}" if isinstance(exc, InvalidInput) else str(exc)
            self._show(req, resp, mlist, error=problem)
            return
        redirect_after(req, resp, req.path, message)


class Bans(_RulePage):
    def _show(
        self, req: falcon.Request, resp: falcon.Response, mlist: MailingList, **extra: str
    ) -> None:
        rows = session_of(req).scalars(
            select(Ban).where(Ban.mailing_list_id == mlist.id).order_by(Ban.email)
        )
        render_form(req, resp, "bans.html", mlist=mlist, bans=list(rows), **extra)

    def _change(self, req: falcon.Request, mlist: MailingList) -> str:
        f = form(req)
        session = session_of(req)
        if f.get("op") == "remove":
            ban = _row_of(req, mlist, Ban, "ban_id", gettext(req, "no such ban"))
            email = ban.email
            bans.remove(session, mlist, email)
            audit(req, mlist, "ban.remove", email=email)
            return gettext(req, "Removed the ban of {email}.").format(email=email)
        else:
            email = bans.add(session, mlist, f.get("email"), clock=workflow_of(req).clock).email
            audit(req, mlist, "ban.add", email=email)
            return gettext(req, "Banned {email}.").format(email=email)


class HeaderMatches(_RulePage):
    def _show(
        self, req: falcon.Request, resp: falcon.Response, mlist: MailingList, **extra: str
    ) -> None:
        rows = header_matches.all_matches(session_of(req), mlist)
        render_form(
            req,
            resp,
            "header_matches.html",
            mlist=mlist,
            matches=rows,
            actions=[(a.value, choice_label("Action", a.value)) for a in Action],
            **extra,
        )

    def _change(self, req: falcon.Request, mlist: MailingList) -> str:
        f = form(req)
        session = session_of(req)
        if f.get("op") == "remove":
            missing = gettext(req, "no such header match")
            row = _row_of(req, mlist, HeaderMatch, "match_id", missing)
            header, pattern = row.header, row.pattern
            header_matches.remove(session, mlist, row.position)
            audit(req, mlist, "header_match.remove", header=header, pattern=pattern)
            return gettext(req, "Removed.")
        else:
            action_text = f.get("action")
            match = header_matches.add(
                session,
                mlist,
                f.get("header").strip().rstrip(":"),  # "X-Spam:" as typed from a message
                f.get("pattern").strip(),
                parse_action(action_text, "action") if action_text else None,
            )
            audit(req, mlist, "header_match.add", header=match.header, pattern=match.pattern)
            return gettext(req, "Added.")
