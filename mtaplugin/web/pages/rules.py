"""List owners: bans and header matches of a list."""

from __future__ import annotations

import re
from typing import TypeVar

import falcon
from sqlalchemy import func, select

from mtaplugin.errors import InvalidInput
from mtaplugin.manage.members import parse_action
from mtaplugin.manage.patterns import check_regex
from mtaplugin.model import Ban, HeaderMatch, MailingList
from mtaplugin.model.enums import Action
from mtaplugin.posting.addresses import normalize_email
from mtaplugin.web.forms import form
from mtaplugin.web.pages.common import audit, find_list, gettext, redirect_after, session_of
from mtaplugin.web.render import render
from mtaplugin.web.setting_help import choice_label

_HEADER = re.compile(r"^[!-9;-~]+$")


_Row = TypeVar("_Row", Ban, HeaderMatch)


def _row_of(
    req: falcon.Request, mlist: MailingList, model: type[_Row], field: str, missing: str
) -> _Row:
    """The row of ``mlist`` the form's ``field`` names, or ``missing`` as the problem."""
    row = session_of(req).get(model, int(form(req).get(field) or 0))
    if row is None or row.mailing_list_id != mlist.id:
        raise InvalidInput(field, missing)
    return row


class _RulePage:
    """A page of one list's rule rows: shown on GET, added to or removed from on POST."""

    def _show(
        self, req: falcon.Request, resp: falcon.Response, mlist: MailingList, **extra: str
    ) -> None:
        raise NotImplementedError

    def _change(self, req: falcon.Request, mlist: MailingList) -> str:
        """Add or remove the row the form says; what was done, for the page."""
        raise NotImplementedError

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
        bans = session_of(req).scalars(
            select(Ban).where(Ban.mailing_list_id == mlist.id).order_by(Ban.email)
        )
        status = falcon.HTTP_400 if extra.get("error") else falcon.HTTP_200
        render(req, resp, "bans.html", status=status, mlist=mlist, bans=list(bans), **extra)

    def _change(self, req: falcon.Request, mlist: MailingList) -> str:
        f = form(req)
        session = session_of(req)
        if f.get("op") == "remove":
            ban = _row_of(req, mlist, Ban, "ban_id", gettext(req, "no such ban"))
            audit(req, mlist, "ban.remove", email=ban.email)
            session.delete(ban)
            return gettext(req, "Removed the ban of {email}.").format(email=ban.email)
        else:
            value = f.get("email").strip()
            is_regex = value.startswith("^")
            email = check_regex("email", value) if is_regex else normalize_email(value)
            exists = session.scalar(
                select(Ban.id).where(Ban.mailing_list_id == mlist.id, Ban.email == email)
            )
            if exists is not None:
                raise InvalidInput(
                    "email", gettext(req, "{email} is banned already").format(email=email)
                )
            session.add(Ban(email=email, is_regex=is_regex, mailing_list_id=mlist.id))
            audit(req, mlist, "ban.add", email=email)
            return gettext(req, "Banned {email}.").format(email=email)


class HeaderMatches(_RulePage):
    def _show(
        self, req: falcon.Request, resp: falcon.Response, mlist: MailingList, **extra: str
    ) -> None:
        rows = session_of(req).scalars(
            select(HeaderMatch)
            .where(HeaderMatch.mailing_list_id == mlist.id)
            .order_by(HeaderMatch.position)
        )
        status = falcon.HTTP_400 if extra.get("error") else falcon.HTTP_200
        render(
            req,
            resp,
            "header_matches.html",
            status=status,
            mlist=mlist,
            matches=list(rows),
            actions=[(a.value, choice_label("Action", a.value)) for a in Action],
            **extra,
        )

    def _change(self, req: falcon.Request, mlist: MailingList) -> str:
        f = form(req)
        session = session_of(req)
        if f.get("op") == "remove":
            missing = gettext(req, "no such header match")
            row = _row_of(req, mlist, HeaderMatch, "match_id", missing)
            audit(req, mlist, "header_match.remove", header=row.header, pattern=row.pattern)
            session.delete(row)
            return gettext(req, "Removed.")
        else:
            header = f.get("header").strip().rstrip(":").lower()
            if not header or not _HEADER.match(header):
                raise InvalidInput("header", gettext(req, "expected a header name"))
            pattern = check_regex("pattern", f.get("pattern").strip())
            if not pattern:
                raise InvalidInput("pattern", gettext(req, "may not be empty"))
            action_text = f.get("action")
            action = parse_action(action_text, "action") if action_text else None
            last = session.scalar(
                select(func.max(HeaderMatch.position)).where(
                    HeaderMatch.mailing_list_id == mlist.id
                )
            )
            session.add(
                HeaderMatch(
                    mailing_list_id=mlist.id,
                    position=(last if last is not None else -1) + 1,
                    header=header,
                    pattern=pattern,
                    action=action,
                )
            )
            audit(req, mlist, "header_match.add", header=header, pattern=pattern)
            return gettext(req, "Added.")
