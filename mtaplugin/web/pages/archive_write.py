"""Writing to a list from its archive: a reply to an archived post, or a new thread.

Anyone logged in who may read the list's archive may write (a private archive: the
list's members and staff).  The post is not sent to the members from here: it is
submitted by SMTP to the MTA's public listener (:mod:`mtaplugin.web.submit`), so the
list's rules decide it as they decide any post -- a member's is distributed and archived
(and joins its thread: ``In-Reply-To`` and ``References`` name the archived parent), a
nonmember's is held, a banned address's refused -- and the page says what the MTA
answered.  ``From:`` is one of the user's own addresses -- verified, preferred, or
subscribed to the list; by default the preferred one when it is subscribed -- never an
address typed in.  A user sends at most ``[web] posts_per_minute`` posts a minute
(counted in the audit log, so every web worker sees the same count).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import falcon
from sqlalchemy import func, or_, select

from mtaplugin.archive import browse, compose
from mtaplugin.archive.hashing import message_id_hash
from mtaplugin.config import Settings
from mtaplugin.enums import MemberRole
from mtaplugin.i18n import _
from mtaplugin.model import (
    Address,
    ArchivedMessage,
    AuditEntry,
    HeldMessage,
    MailingList,
    Member,
)
from mtaplugin.web.common import (
    redirect_after,
    require_login,
    session_of,
    viewer_of,
    workflow_of,
)
from mtaplugin.web.forms import form
from mtaplugin.web.pages.archive import find_archive, message_of
from mtaplugin.web.render import render
from mtaplugin.web.roles import Viewer
from mtaplugin.web.submit import SmtpSubmitter, Submitted, Submitter

#: the audit log's action for a post sent from the web (its count is the rate limit)
ACTION = "archive.post"
RATE_WINDOW = timedelta(minutes=1)
#: after the MTA's 250, how often (and how many seconds apart) the page looks whether the
#: post was held or archived: an MTA that decides after queueing (through LMTP) decides a
#: moment later than its 250
POLLS = 10
POLL_INTERVAL = 0.3


@dataclass
class Draft:
    """What the form shows and sends back."""

    sender: str
    subject: str = ""
    body: str = ""


def member_addresses(req: falcon.Request, mlist: MailingList) -> set[str]:
    """The viewer's addresses subscribed to ``mlist`` as regular members (a membership
    as a user follows the user's preferred address)."""
    viewer = viewer_of(req)
    assert viewer.user is not None
    rows = (
        session_of(req)
        .execute(
            select(Address.email, Member.user_id)
            .join(Member, Member.address_id == Address.id)
            .where(
                Member.mailing_list_id == mlist.id,
                Member.role == MemberRole.member,
                or_(Address.user_id == viewer.user.id, Member.user_id == viewer.user.id),
            )
        )
        .all()
    )
    found = {email for email, _user_id in rows}
    preferred = viewer.user.preferred_address
    if preferred is not None and any(user_id is not None for _email, user_id in rows):
        found.add(preferred.email)
    return found


def own_addresses(req: falcon.Request, mlist: MailingList) -> list[str]:
    """The addresses the viewer may write as: their verified ones, their preferred one,
    and those subscribed to ``mlist``."""
    viewer = viewer_of(req)
    assert viewer.user is not None
    verified = session_of(req).scalars(
        select(Address.email).where(
            Address.user_id == viewer.user.id, Address.verified_on.is_not(None)
        )
    )
    preferred = viewer.user.preferred_address
    found = {*verified, *member_addresses(req, mlist)}
    if preferred is not None:
        found.add(preferred.email)
    return sorted(found & viewer.emails)


def default_sender(req: falcon.Request, mlist: MailingList) -> str:
    """The user's preferred address when it is subscribed (or nothing is), else a
    subscribed one."""
    viewer = viewer_of(req)
    assert viewer.user is not None
    preferred = viewer.user.preferred_address
    first = preferred.email if preferred is not None else viewer.name
    subscribed = member_addresses(req, mlist)
    if not subscribed or first in subscribed:
        return first
    return min(subscribed)


def recent_posts(req: falcon.Request, viewer: Viewer) -> int:
    """Posts the viewer sent from the web in the last minute."""
    since = workflow_of(req).now() - RATE_WINDOW
    actors = [f"web:{e}" for e in sorted(viewer.emails)]
    count = session_of(req).scalar(
        select(func.count(AuditEntry.id)).where(
            AuditEntry.action == ACTION, AuditEntry.actor.in_(actors), AuditEntry.at >= since
        )
    )
    return int(count or 0)


class Compose:
    """``/archive/{list}/new`` (a new thread) and ``/archive/{list}/message/{hash}/reply``."""

    def __init__(self, settings: Settings, submitter: Submitter | None = None) -> None:
        self.per_minute = settings.web.posts_per_minute
        self.submitter = submitter or SmtpSubmitter.from_settings(settings.web)

    # --- the page -----------------------------------------------------------------------
    def _open(
        self, req: falcon.Request, list_id: str, digest: str | None
    ) -> tuple[MailingList, ArchivedMessage | None]:
        require_login(req)
        mlist = find_archive(req, list_id)
        parent = message_of(req, mlist, digest) if digest is not None else None
        if self.per_minute == 0:
            raise falcon.HTTPForbidden(
                title=_("Posting from the web is off"),
                description=_("This site takes posts by mail only; write to {address}.").format(
                    address=mlist.posting_address
                ),
            )
        return mlist, parent

    def _show(
        self,
        req: falcon.Request,
        resp: falcon.Response,
        mlist: MailingList,
        parent: ArchivedMessage | None,
        draft: Draft,
        status: str = falcon.HTTP_200,
        error: str = "",
        outcome: str = "",
    ) -> None:
        render(
            req,
            resp,
            "archive_compose.html",
            status=status,
            mlist=mlist,
            parent=parent,
            parent_author=browse.author(parent, True) if parent is not None else "",
            draft=draft,
            senders=own_addresses(req, mlist),
            subscribed=member_addresses(req, mlist),
            error=error,
            outcome=outcome,
            action=req.path,
        )

    def on_get(
        self, req: falcon.Request, resp: falcon.Response, list_id: str, digest: str | None = None
    ) -> None:
        mlist, parent = self._open(req, list_id, digest)
        draft = Draft(sender=default_sender(req, mlist))
        if parent is not None:
            draft.subject = compose.reply_subject(parent.subject)
            if req.get_param_as_bool("quote", default=False):
                draft.body = compose.quoted(parent.text, parent.sender_name or parent.sender)
        self._show(req, resp, mlist, parent, draft)

    def on_post(
        self, req: falcon.Request, resp: falcon.Response, list_id: str, digest: str | None = None
    ) -> None:
        mlist, parent = self._open(req, list_id, digest)
        viewer = viewer_of(req)
        f = form(req)
        draft = Draft(
            sender=f.get("sender").strip().lower(),
            subject=compose.one_line(f.get("subject"))[: compose.MAX_SUBJECT],
            body=f.get("body").replace("\r\n", "\n")[: compose.MAX_BODY],
        )

        def again(status: str, error: str = "", outcome: str = "") -> None:
            self._show(req, resp, mlist, parent, draft, status, error, outcome)

        if draft.sender not in own_addresses(req, mlist):
            draft.sender = default_sender(req, mlist)
            return again(falcon.HTTP_400, _("From: choose one of your own addresses."))
        if not draft.subject:
            return again(falcon.HTTP_400, _("Subject: write a subject."))
        if not draft.body.strip():
            return again(falcon.HTTP_400, _("Message: write your message."))
        if recent_posts(req, viewer) >= self.per_minute:
            said = _("You sent {n} posts from the web in the last minute; wait a minute "
                     "and send this one again.")  # fmt: skip
            return again(falcon.HTTP_429, said.format(n=self.per_minute))
        submitted, message_id = self._submit(req, mlist, parent, draft)
        if submitted.stage == "connect":
            said = _("The mail server could not be reached; your post was not sent. "
                     "Try again later. ({reply})")  # fmt: skip
            return again(falcon.HTTP_503, outcome=said.format(reply=submitted))
        self._record(req, mlist, message_id, submitted)
        if submitted.refused:
            return again(
                falcon.HTTP_403,
                outcome=_("The list refused your post. The mail server said: {reply}").format(
                    reply=submitted
                ),
            )
        if not submitted.taken:
            said = _("The mail server cannot take your post now; try again later. "
                     "It said: {reply}")  # fmt: skip
            return again(falcon.HTTP_503, outcome=said.format(reply=submitted))
        self._done(req, resp, mlist, parent, message_id, submitted)

    # --- sending ------------------------------------------------------------------------
    def _submit(
        self,
        req: falcon.Request,
        mlist: MailingList,
        parent: ArchivedMessage | None,
        draft: Draft,
    ) -> tuple[Submitted, str]:
        viewer = viewer_of(req)
        assert viewer.user is not None
        message_id = compose.new_message_id(mlist.mail_host)
        raw = compose.message(
            sender=draft.sender,
            sender_name=viewer.user.display_name,
            list_address=mlist.posting_address,
            subject=draft.subject,
            body=draft.body,
            message_id=message_id,
            date=workflow_of(req).now(),
            parent=compose.Parent(
                message_id=parent.message_id,
                in_reply_to=parent.in_reply_to,
                references=tuple(parent.references or ()),
            )
            if parent is not None
            else None,
        )
        # Nothing is written yet; end the page's transaction so that no lock or snapshot
        # of ours stands in the way of the decision the MTA asks for meanwhile.
        session_of(req).commit()
        return self.submitter.submit(draft.sender, mlist.posting_address, raw), message_id

    def _record(
        self, req: falcon.Request, mlist: MailingList, message_id: str, submitted: Submitted
    ) -> None:
        session_of(req).add(
            AuditEntry(
                at=workflow_of(req).now(),
                actor=f"web:{viewer_of(req).name}",
                action=ACTION,
                mailing_list_id=mlist.id,
                detail={"message_id": message_id, "reply": str(submitted)[:300]},
            )
        )

    def _fate(self, req: falcon.Request, mlist: MailingList, message_id: str) -> Any:
        """The archived post or the held post with ``message_id``, once the list decided."""
        s = session_of(req)
        for attempt in range(POLLS + 1):
            if attempt:
                time.sleep(POLL_INTERVAL)
            s.commit()  # a fresh look: the decision (a hold), the worker (the archive)
            archived = s.scalar(
                select(ArchivedMessage).where(
                    ArchivedMessage.mailing_list_id == mlist.id,
                    ArchivedMessage.message_id_hash == message_id_hash(message_id),
                )
            )
            if archived is not None:
                return archived
            held = s.scalar(
                select(HeldMessage).where(
                    HeldMessage.mailing_list_id == mlist.id, HeldMessage.message_id == message_id
                )
            )
            if held is not None:
                return held
        return None

    def _done(
        self,
        req: falcon.Request,
        resp: falcon.Response,
        mlist: MailingList,
        parent: ArchivedMessage | None,
        message_id: str,
        submitted: Submitted,
    ) -> None:
        fate = self._fate(req, mlist, message_id)
        base = f"/archive/{mlist.list_id}"
        if isinstance(fate, ArchivedMessage):
            said = _("Your post was sent to the list and is in its archive. "
                     "The mail server said: {reply}")  # fmt: skip
            where = f"{base}/thread/{fate.thread_id}/#m{fate.id}"
        elif isinstance(fate, HeldMessage):
            said = _("Your post is held for the list's moderators: it reaches the list if "
                     "one of them approves it. The mail server said: {reply}")  # fmt: skip
            where = f"{base}/message/{parent.message_id_hash}/" if parent else f"{base}/"
        else:
            said = _("The mail server took your post ({reply}). It appears in the archive "
                     "once the list has sent it, unless the list holds or discards "
                     "it.")  # fmt: skip
            where = f"{base}/message/{parent.message_id_hash}/" if parent else f"{base}/"
        redirect_after(req, resp, where, said.format(reply=submitted))
