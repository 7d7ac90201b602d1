"""List owners: bans and header matches of a list."""

from __future__ import annotations

import re

import falcon
from sqlalchemy import func, select

from mtaplugin.errors import InvalidInput
from mtaplugin.manage.members import parse_action
from mtaplugin.model import AuditEntry, Ban, HeaderMatch, MailingList
from mtaplugin.model.enums import Action
from mtaplugin.posting.addresses import normalize_email
from mtaplugin.web.forms import form
from mtaplugin.web.pages.common import find_list, gettext, session_of, viewer_of
from mtaplugin.web.render import render

_HEADER = re.compile(r"^[!-9;-~]+$")


def _audit(req: falcon.Request, mlist: MailingList, action: str, **detail: object) -> None:
    session_of(req).add(
        AuditEntry(
            actor=f"web:{viewer_of(req).name}",
            action=action,
            mailing_list_id=mlist.id,
            detail=dict(detail),
        )
    )


def _regex(field: str, value: str) -> str:
    try:
        re.compile(value)
    except re.error as exc:
        raise InvalidInput(field, f"{exc}") from None
    return value


class Bans:
    def _show(
        self, req: falcon.Request, resp: falcon.Response, mlist: MailingList, **extra: str
    ) -> None:
        bans = session_of(req).scalars(
            select(Ban).where(Ban.mailing_list_id == mlist.id).order_by(Ban.email)
        )
        status = falcon.HTTP_400 if extra.get("error") else falcon.HTTP_200
        render(req, resp, "bans.html", status=status, mlist=mlist, bans=list(bans), **extra)

    def on_get(self, req: falcon.Request, resp: falcon.Response, list_id: str) -> None:
        self._show(req, resp, find_list(req, list_id, "administer"))

    def on_post(self, req: falcon.Request, resp: falcon.Response, list_id: str) -> None:
        mlist = find_list(req, list_id, "administer")
        f = form(req)
        session = session_of(req)
        try:
            if f.get("op") == "remove":
                ban = session.get(Ban, int(f.get("ban_id") or 0))
                if ban is None or ban.mailing_list_id != mlist.id:
                    raise InvalidInput("ban_id", gettext(req, "no such ban"))
                _audit(req, mlist, "ban.remove", email=ban.email)
                session.delete(ban)
                message = gettext(req, "Removed the ban of {email}.").format(email=ban.email)
            else:
                value = f.get("email").strip()
                is_regex = value.startswith("^")
                email = _regex("email", value) if is_regex else normalize_email(value)
                exists = session.scalar(
                    select(Ban.id).where(Ban.mailing_list_id == mlist.id, Ban.email == email)
                )
                if exists is not None:
                    raise InvalidInput(
                        "email", gettext(req, "{email} is banned already").format(email=email)
                    )
                session.add(Ban(email=email, is_regex=is_regex, mailing_list_id=mlist.id))
                _audit(req, mlist, "ban.add", email=email)
                message = gettext(req, "Banned {email}.").format(email=email)
            session.flush()
        except (InvalidInput, ValueError) as exc:
            problem = f"{exc.field}: {exc.problem}" if isinstance(exc, InvalidInput) else str(exc)
            self._show(req, resp, mlist, error=problem)
            return
        self._show(req, resp, mlist, message=message)


class HeaderMatches:
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
            actions=[a.value for a in Action],
            **extra,
        )

    def on_get(self, req: falcon.Request, resp: falcon.Response, list_id: str) -> None:
        self._show(req, resp, find_list(req, list_id, "administer"))

    def on_post(self, req: falcon.Request, resp: falcon.Response, list_id: str) -> None:
        mlist = find_list(req, list_id, "administer")
        f = form(req)
        session = session_of(req)
        try:
            if f.get("op") == "remove":
                row = session.get(HeaderMatch, int(f.get("match_id") or 0))
                if row is None or row.mailing_list_id != mlist.id:
                    raise InvalidInput("match_id", gettext(req, "no such header match"))
                _audit(req, mlist, "header_match.remove", header=row.header, pattern=row.pattern)
                session.delete(row)
                message = gettext(req, "Removed.")
            else:
                header = f.get("header").strip().rstrip(":").lower()
                if not header or not _HEADER.match(header):
                    raise InvalidInput("header", gettext(req, "expected a header name"))
                pattern = _regex("pattern", f.get("pattern").strip())
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
                _audit(req, mlist, "header_match.add", header=header, pattern=pattern)
                message = gettext(req, "Added.")
            session.flush()
        except (InvalidInput, ValueError) as exc:
            problem = f"{exc.field}: {exc.problem}" if isinstance(exc, InvalidInput) else str(exc)
            self._show(req, resp, mlist, error=problem)
            return
        self._show(req, resp, mlist, message=message)
