"""RFC 8058 one-click unsubscribe at ``/lists/<list_id>/unsubscribe/<token>``.

POST with ``List-Unsubscribe=One-Click`` (as a mail provider sends it, urlencoded or
multipart): the member named by the token is unsubscribed at once through the workflow
(the goodbye and the owners' notice as the list says; a list whose unsubscription_policy
asks for moderation keeps the request for its moderators); no login, no cookie, no
CSRF token (the signed token is the credential), no confirmation page: 200 and one line of
text.  GET (a person who clicked the link) shows a page with one button that makes the same
POST.  A token that is not genuine, or names another list, is 404 and changes nothing.
"""

from __future__ import annotations

import re

import falcon
from sqlalchemy import select

from mtaplugin.config import Settings
from mtaplugin.copies import unsubscribe
from mtaplugin.enums import MemberRole
from mtaplugin.errors import AlreadyExists, NotFound
from mtaplugin.manage import members, subscriptions
from mtaplugin.manage.subscriptions import Status
from mtaplugin.model import MailingList
from mtaplugin.web.common import gettext, session_of, workflow_of
from mtaplugin.web.forms import raw_body
from mtaplugin.web.render import render

_URLENCODED = re.compile(rb"(?:^|&)List-Unsubscribe=One-Click(?:&|$)")
_MULTIPART = re.compile(rb'name="?List-Unsubscribe"?\s*\r?\n\r?\n\s*One-Click\s*\r?\n')


def is_one_click_body(body: bytes) -> bool:
    body = body.strip()
    return bool(_URLENCODED.search(body) or _MULTIPART.search(body))


class OneClick:
    csrf_exempt = True
    #: no session cookie is set on these answers
    stateless = True

    def __init__(self, settings: Settings) -> None:
        self.secret = settings.site.secret_key

    def _member(self, req: falcon.Request, list_id: str, token: str) -> tuple[MailingList, str]:
        found = unsubscribe.verify(self.secret, token)
        if found is None or found[0] != list_id.lower():
            raise falcon.HTTPNotFound(
                title=gettext(req, "Invalid unsubscribe link"),
                description=gettext(
                    req,
                    "This unsubscribe link is not valid.  Copy the whole link from the "
                    "message, or unsubscribe on the list's page.",
                ),
            )
        mlist = session_of(req).scalar(select(MailingList).where(MailingList.list_id == found[0]))
        if mlist is None:
            raise falcon.HTTPNotFound(
                title=gettext(req, "No such list"),
                description=gettext(req, "This list does not exist any more."),
            )
        return mlist, found[1]

    def on_get(self, req: falcon.Request, resp: falcon.Response, list_id: str, token: str) -> None:
        mlist, email = self._member(req, list_id, token)
        subscribed = _is_member(req, mlist, email)
        render(
            req,
            resp,
            "oneclick.html",
            mlist=mlist,
            email=email,
            subscribed=subscribed,
            action=req.path,
        )

    def on_post(self, req: falcon.Request, resp: falcon.Response, list_id: str, token: str) -> None:
        mlist, email = self._member(req, list_id, token)
        if not is_one_click_body(raw_body(req)):
            raise falcon.HTTPBadRequest(
                title=gettext(req, "Not a one-click request"),
                description=gettext(
                    req, "The request body must be List-Unsubscribe=One-Click (RFC 8058)."
                ),
            )
        try:
            status, _token = subscriptions.request_unsubscription(
                session_of(req),
                mlist,
                email,
                pre_confirmed=True,  # the signed token is the member's confirmation
                actor=email,
                settings=workflow_of(req),
            )
        except NotFound:
            _answer(req, resp, mlist, gettext(req, "{email} is not a member of {list}."), email)
            return
        except AlreadyExists:
            status = Status.pending_approval
        if status is Status.pending_approval:
            text = gettext(req, "{email}: a moderator of {list} will look at your request.")
        else:
            text = gettext(req, "{email} is unsubscribed from {list}.")
        _answer(req, resp, mlist, text, email)


def _answer(
    req: falcon.Request, resp: falcon.Response, mlist: MailingList, text: str, email: str
) -> None:
    """A short text for a mail provider; a page for a person's browser (our own button)."""
    message = text.format(email=email, list=mlist.fqdn_listname)
    if "text/html" in (req.get_header("Accept") or ""):
        render(req, resp, "message.html", title=mlist.display_name, message=message, mlist=mlist)
        return
    resp.content_type = "text/plain; charset=utf-8"
    resp.text = message + "\n"


def _is_member(req: falcon.Request, mlist: MailingList, email: str) -> bool:
    try:
        members.get(session_of(req), mlist, email, MemberRole.member)
    except NotFound:
        return False
    return True
