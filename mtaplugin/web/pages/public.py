"""Pages for everyone: the list index, a list's page, subscribe and unsubscribe by mail."""

from __future__ import annotations

import falcon
from sqlalchemy import func, or_, select

from mtaplugin.errors import InvalidInput
from mtaplugin.model import Domain, MailingList, Member, PendingRequest
from mtaplugin.model.enums import MemberRole, RequestType
from mtaplugin.web import confirm
from mtaplugin.web.forms import form
from mtaplugin.web.pages.common import find_list, gettext, session_of, viewer_of
from mtaplugin.web.render import render


def _base_url(req: falcon.Request, mlist: MailingList) -> str:
    domain = session_of(req).scalar(select(Domain).where(Domain.mail_host == mlist.mail_host))
    return (domain.base_url if domain is not None and domain.base_url else req.prefix).rstrip("/")


class Index:
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        viewer = viewer_of(req)
        session = session_of(req)
        shown = or_(MailingList.advertised.is_(True), MailingList.id.in_(sorted(viewer.member_of)))
        if viewer.logged_in:
            shown = or_(shown, viewer.managed_filter())
        count = (
            select(func.count(Member.id))
            .where(Member.mailing_list_id == MailingList.id, Member.role == MemberRole.member)
            .scalar_subquery()
        )
        rows = session.execute(
            select(MailingList, count)
            .where(shown)
            .order_by(MailingList.mail_host, MailingList.list_name)
        ).all()
        render(req, resp, "index.html", lists=[(m, n) for m, n in rows])


class ListInfo:
    def on_get(self, req: falcon.Request, resp: falcon.Response, list_id: str) -> None:
        mlist = find_list(req, list_id)
        render(req, resp, "listinfo.html", mlist=mlist, message="", error="")


class Subscribe:
    """Subscribe (``/subscribe``) or unsubscribe (``/unsubscribe``): a confirmation by mail."""

    def __init__(self, kind: RequestType) -> None:
        self.kind = kind

    def on_get(self, req: falcon.Request, resp: falcon.Response, list_id: str) -> None:
        mlist = find_list(req, list_id)
        render(
            req,
            resp,
            "subscribe.html",
            mlist=mlist,
            kind=self.kind.value,
            email=viewer_of(req).name,
            error="",
            message="",
        )

    def on_post(self, req: falcon.Request, resp: falcon.Response, list_id: str) -> None:
        mlist = find_list(req, list_id)
        f = form(req)
        email = f.get("email").strip()
        try:
            confirm.request_change(
                session_of(req),
                mlist,
                email,
                self.kind,
                _base_url(req, mlist),
                f.get("display_name").strip(),
            )
        except InvalidInput as exc:
            render(
                req,
                resp,
                "subscribe.html",
                status=falcon.HTTP_400,
                mlist=mlist,
                kind=self.kind.value,
                email=email,
                error=exc.problem,
                message="",
            )
            return
        render(
            req,
            resp,
            "subscribe.html",
            mlist=mlist,
            kind=self.kind.value,
            email=email,
            error="",
            message=gettext(
                req, "We sent a message to {email}; open the link in it to confirm."
            ).format(email=email),
        )


class Confirm:
    def _pending(self, req: falcon.Request, token: str) -> PendingRequest:
        pending = confirm.find(session_of(req), token)
        if pending is None:
            raise falcon.HTTPNotFound(
                title=gettext(req, "Unknown or expired link"),
                description=gettext(
                    req, "This confirmation link is not valid any more; ask again on the list page."
                ),
            )
        return pending

    def on_get(self, req: falcon.Request, resp: falcon.Response, token: str) -> None:
        pending = self._pending(req, token)
        mlist = session_of(req).get(MailingList, pending.mailing_list_id)
        render(req, resp, "confirm.html", pending=pending, mlist=mlist, message="")

    def on_post(self, req: falcon.Request, resp: falcon.Response, token: str) -> None:
        pending = self._pending(req, token)
        mlist = session_of(req).get(MailingList, pending.mailing_list_id)
        message = confirm.confirm(session_of(req), pending)
        render(
            req, resp, "message.html", title=gettext(req, "Confirmed"), message=message, mlist=mlist
        )
