"""What every page needs: the logged-in viewer, the list it may see, redirects."""

from __future__ import annotations

from dataclasses import replace
from urllib.parse import quote

import falcon
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from mtaplugin.config import Settings
from mtaplugin.enums import TokenOwner
from mtaplugin.i18n import translation
from mtaplugin.manage.subscriptions import WorkflowSettings, pending_requests
from mtaplugin.model import AuditEntry, HeldMessage, MailingList, PendingRequest
from mtaplugin.web.roles import Viewer


def session_of(req: falcon.Request) -> Session:
    session: Session = req.context.session
    return session


def workflow_of(req: falcon.Request) -> WorkflowSettings:
    """The (un)subscription workflow's settings (lifetimes, site owner, clock)."""
    workflow: WorkflowSettings = req.context.workflow
    return workflow


def settings_of(req: falcon.Request) -> Settings:
    settings: Settings = req.context.settings
    return settings


def viewer_of(req: falcon.Request) -> Viewer:
    viewer: Viewer = req.context.viewer
    return viewer


def actor_of(req: falcon.Request) -> str:
    """Who acts, for the audit log and the workflows: ``web:`` and the viewer's name."""
    return f"web:{viewer_of(req).name}"


def audit(req: falcon.Request, mlist: MailingList, action: str, **detail: object) -> None:
    """Record what the viewer did on ``mlist`` in the audit log."""
    session_of(req).add(
        AuditEntry(
            actor=f"web:{viewer_of(req).name}",
            action=action,
            mailing_list_id=mlist.id,
            at=workflow_of(req).clock(),
            detail=dict(detail),
        )
    )


def gettext(req: falcon.Request, text: str) -> str:
    """``_()`` in the language of this request."""
    return translation(getattr(req.context, "language", "en")).gettext(text)


def require_login(req: falcon.Request) -> Viewer:
    viewer = viewer_of(req)
    if not viewer.logged_in:
        raise falcon.HTTPSeeOther(f"/login?next={quote(req.relative_uri, safe='')}")
    return viewer


def _not_found(req: falcon.Request) -> falcon.HTTPNotFound:
    return falcon.HTTPNotFound(
        title=gettext(req, "No such list"),
        description=gettext(req, "There is no list here, or you may not see it."),
    )


def find_list(req: falcon.Request, list_id: str, need: str = "see") -> MailingList:
    """The list ``list_id`` if the viewer may ``see``, ``moderate`` or ``administer`` it.

    Pages for staff ask an anonymous visitor to log in first (whether the list exists or
    not); a list the viewer may not see is 404; one seen but not managed is 403."""
    viewer = viewer_of(req)
    if need != "see" and not viewer.logged_in:
        require_login(req)
    mlist = session_of(req).scalar(
        select(MailingList).where(MailingList.list_id == list_id.strip().lower())
    )
    if mlist is None or not viewer.can_see(mlist):
        raise _not_found(req)
    allowed = {
        "see": True,
        "moderate": viewer.can_moderate(mlist),
        "administer": viewer.can_administer(mlist),
    }[need]
    if not allowed:
        raise falcon.HTTPForbidden(
            title=gettext(req, "Not allowed"),
            description=gettext(req, "Your role on this list does not allow this page."),
        )
    return mlist


def see_other(resp: falcon.Response, location: str) -> None:
    """Answer 303 without raising, so that the page's transaction is committed."""
    resp.status = falcon.HTTP_303
    resp.location = location
    resp.text = ""


#: at most this many messages, of at most this many characters, wait in the cookie
_FLASH_COUNT = 5
_FLASH_LENGTH = 400


def redirect_after(req: falcon.Request, resp: falcon.Response, location: str, *said: str) -> None:
    """POST-redirect-GET: answer 303 to ``location``, which shows ``said`` once.

    Reloading that page repeats nothing, and the browser's history holds no form to
    resend."""
    ws = req.context.web_session
    kept = (*ws.flash, *(m[:_FLASH_LENGTH] for m in said if m))[-_FLASH_COUNT:]
    req.context.web_session = replace(ws, flash=kept)
    see_other(resp, location)


def held_counts(req: falcon.Request, list_ids: list[int]) -> dict[int, int]:
    """How many held posts wait on each of ``list_ids`` (lists with none are left out)."""
    if not list_ids:
        return {}
    rows = session_of(req).execute(
        select(HeldMessage.mailing_list_id, func.count(HeldMessage.id))
        .where(HeldMessage.mailing_list_id.in_(list_ids))
        .group_by(HeldMessage.mailing_list_id)
    )
    return {list_id: count for list_id, count in rows}


def requests_waiting(req: falcon.Request, mlist: MailingList) -> list[PendingRequest]:
    """The (un)subscription requests of ``mlist`` waiting for a moderator's decision."""
    return pending_requests(
        session_of(req), mlist, token_owner=TokenOwner.moderator, settings=workflow_of(req)
    )


def waiting_of(req: falcon.Request, mlist: MailingList) -> tuple[int, int]:
    """(held posts, (un)subscription requests) waiting for a moderator of ``mlist``."""
    held = held_counts(req, [mlist.id]).get(mlist.id, 0)
    return held, len(requests_waiting(req, mlist))
