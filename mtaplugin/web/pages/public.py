"""Pages for everyone: the list index, a list's page, subscribe and unsubscribe by mail.

Subscribing and unsubscribing go through the subscription workflow
(:mod:`mtaplugin.manage.subscriptions`), always with a confirmation by mail (whoever types
an address here has not shown it is theirs; a logged-in person's own verified address
needs none): a banned address is refused at once, and
the list's policy, notices and moderators apply.  The answer is the same whether the
address is a member or not, so that the page does not tell who is subscribed; the
confirmation link shows a button, and its POST does the change (a GET alone changes
nothing: mail scanners follow links).
"""

from __future__ import annotations

import falcon
from sqlalchemy import func, or_, select

from mtaplugin.enums import MemberRole, RequestType
from mtaplugin.errors import AlreadyExists, InvalidInput, NotFound
from mtaplugin.manage import pending, subscriptions
from mtaplugin.manage.subscriptions import Status
from mtaplugin.model import MailingList, Member, PendingRequest
from mtaplugin.vocabulary.addresses import normalize_email
from mtaplugin.web import links
from mtaplugin.web.common import (
    find_list,
    gettext,
    held_counts,
    redirect_after,
    session_of,
    settings_of,
    viewer_of,
    workflow_of,
)
from mtaplugin.web.forms import form
from mtaplugin.web.render import render, render_form


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
        moderated = [m.id for m, _n in rows if viewer.logged_in and viewer.can_moderate(m)]
        render(
            req,
            resp,
            "index.html",
            lists=[(m, n) for m, n in rows],
            held=held_counts(req, moderated),
        )


class ListInfo:
    def on_get(self, req: falcon.Request, resp: falcon.Response, list_id: str) -> None:
        mlist = find_list(req, list_id)
        render(req, resp, "listinfo.html", mlist=mlist, message="", error="")


class Subscribe:
    """Subscribe (``/subscribe``) or unsubscribe (``/unsubscribe``): a confirmation by mail."""

    def __init__(self, kind: RequestType) -> None:
        self.kind = kind

    def _show(
        self,
        req: falcon.Request,
        resp: falcon.Response,
        mlist: MailingList,
        email: str,
        error: str = "",
        message: str = "",
    ) -> None:
        render_form(
            req,
            resp,
            "subscribe.html",
            mlist=mlist,
            kind=self.kind.value,
            email=email,
            error=error,
            message=message,
        )

    def on_get(self, req: falcon.Request, resp: falcon.Response, list_id: str) -> None:
        viewer = viewer_of(req)
        asked = _normal(req.get_param("email") or "")
        # "My lists" names the membership's own address (one of the viewer's)
        email = asked if asked and asked in viewer.emails else viewer.name
        self._show(req, resp, find_list(req, list_id), email)

    def on_post(self, req: falcon.Request, resp: falcon.Response, list_id: str) -> None:
        mlist = find_list(req, list_id)
        f = form(req)
        email = f.get("email").strip()
        try:
            self._request(req, mlist, email, f.get("display_name").strip())
        except InvalidInput as exc:
            self._show(req, resp, mlist, email, error=exc.problem)
            return
        if viewer_of(req).logged_in and _normal(email) in viewer_of(req).emails:
            sent = gettext(req, "Done for {email}, unless the list's moderators must approve.")
        elif links.list_base(session_of(req), settings_of(req), mlist):
            sent = gettext(req, "We sent a message to {email}; open the link in it to confirm.")
        else:
            sent = gettext(req, "We sent a message to {email}; reply to it to confirm.")
        redirect_after(req, resp, req.path, sent.format(email=email))

    def _request(self, req: falcon.Request, mlist: MailingList, email: str, name: str) -> None:
        """Ask the workflow; a member (or an address whose request waits) gets the same
        answer as anyone; a banned address is refused (:class:`Banned`, a 400 naming it)."""
        base = links.list_base(session_of(req), settings_of(req), mlist)
        confirm_url = f"{base}/confirm/" if base else ""  # without: confirmed by a reply
        viewer = viewer_of(req)
        actor = f"web:{viewer.name}" if viewer.logged_in else ""
        # A logged-in person asking for one of the account's verified addresses has shown
        # it is theirs: no confirmation by mail (the list's moderation still applies).
        own = viewer.logged_in and _normal(email) in viewer.emails
        try:
            if self.kind is RequestType.subscription:
                subscriptions.request_subscription(
                    session_of(req),
                    mlist,
                    email,
                    pre_verified=own,
                    pre_confirmed=own,
                    must_confirm=not own,
                    display_name=name[:255],
                    confirm_url=confirm_url,
                    actor=actor,
                    settings=workflow_of(req),
                )
            else:
                subscriptions.request_unsubscription(
                    session_of(req),
                    mlist,
                    email,
                    pre_confirmed=own,
                    must_confirm=not own,
                    confirm_url=confirm_url,
                    actor=actor,
                    settings=workflow_of(req),
                )
        except (AlreadyExists, NotFound):
            return  # a member already, or not one: the same answer as for anyone


def _normal(email: str) -> str:
    try:
        return normalize_email(email)
    except InvalidInput:
        return ""


class Confirm:
    def _pending(self, req: falcon.Request, token: str) -> PendingRequest:
        found = pending.find(
            session_of(req), token, workflow_of(req).now(), kinds=pending.MEMBERSHIP
        )
        if found is None or found.step != subscriptions.Step.confirm:
            raise falcon.HTTPNotFound(
                title=gettext(req, "Unknown or expired link"),
                description=gettext(
                    req, "This confirmation link is not valid any more; ask again on the list page."
                ),
            )
        return found

    def on_get(self, req: falcon.Request, resp: falcon.Response, token: str) -> None:
        pending = self._pending(req, token)
        mlist = session_of(req).get(MailingList, pending.mailing_list_id)
        render(req, resp, "confirm.html", pending=pending, mlist=mlist, message="")

    def on_post(self, req: falcon.Request, resp: falcon.Response, token: str) -> None:
        pending = self._pending(req, token)
        mlist = session_of(req).get(MailingList, pending.mailing_list_id)
        message = _confirmed(req, pending, mlist)
        redirect_after(req, resp, f"/lists/{mlist.list_id}" if mlist is not None else "/", message)


def _confirmed(req: falcon.Request, request: PendingRequest, mlist: MailingList | None) -> str:
    """Carry out a confirmed request; what happened, for the page."""
    if mlist is None:
        return gettext(req, "The list does not exist any more.")
    email = request.email
    try:
        status, _token = subscriptions.confirm(
            session_of(req), mlist, request.token, settings=workflow_of(req)
        )
    except InvalidInput as exc:
        return exc.problem
    if status is Status.pending_approval:
        text = gettext(req, "Thank you; a moderator of {list} will look at your request.")
    elif status is Status.subscribed:
        text = gettext(req, "{email} is now a member of {list}.")
    else:
        text = gettext(req, "{email} is not a member of {list} any more.")
    return text.format(email=email, list=mlist.fqdn_listname)
