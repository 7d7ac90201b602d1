"""List owners: the roster (search, paging), one member at a time, mass (un)subscription.

Paging is SQL ``LIMIT``/``OFFSET`` over the (list, role) index with a total count, so a
list of 100 000 members shows its pages as fast as one of 100.
"""

from __future__ import annotations

import json

import falcon
from sqlalchemy import delete, func, select

from mtaplugin.errors import InvalidInput
from mtaplugin.manage import members
from mtaplugin.model import Address, AuditEntry, MailingList, Member
from mtaplugin.model.enums import Action, MemberRole
from mtaplugin.web.forms import form
from mtaplugin.web.pages.common import find_list, gettext, session_of, viewer_of
from mtaplugin.web.render import render

PAGE_SIZE = 50


def _audit(req: falcon.Request, mlist: MailingList, action: str, **detail: object) -> None:
    session_of(req).add(
        AuditEntry(
            actor=f"web:{viewer_of(req).name}",
            action=action,
            mailing_list_id=mlist.id,
            detail=dict(detail),
        )
    )


def _role(req: falcon.Request, value: str) -> MemberRole:
    return members.parse_role(value or "member")


def roster_page(
    req: falcon.Request, mlist: MailingList, role: MemberRole, search: str, page: int
) -> tuple[list[tuple[Member, Address]], int]:
    session = session_of(req)
    where = [Member.mailing_list_id == mlist.id, Member.role == role]
    if search:
        escaped = search.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        where.append(Address.email.like(f"%{escaped}%", escape="\\"))
    count = select(func.count(Member.id)).where(*where)
    if search:
        count = count.join(Address, Address.id == Member.address_id)
    total = session.scalar(count)
    rows = session.execute(
        select(Member, Address)
        .join(Address, Address.id == Member.address_id)
        .where(*where)
        .order_by(Address.email)
        .limit(PAGE_SIZE)
        .offset((page - 1) * PAGE_SIZE)
    ).all()
    return [(m, a) for m, a in rows], total or 0


class Members:
    def _show(
        self,
        req: falcon.Request,
        resp: falcon.Response,
        mlist: MailingList,
        message: str = "",
        error: str = "",
    ) -> None:
        role = _role(req, req.get_param("role") or "member")
        search = (req.get_param("q") or "").strip()
        page = max(1, req.get_param_as_int("page") or 1)
        rows, total = roster_page(req, mlist, role, search, page)
        pages = max(1, -(-total // PAGE_SIZE))
        render(
            req,
            resp,
            "members.html",
            status=falcon.HTTP_400 if error else falcon.HTTP_200,
            mlist=mlist,
            rows=rows,
            total=total,
            page=page,
            pages=pages,
            role=role.value,
            roles=[r.value for r in MemberRole],
            actions=[a.value for a in Action],
            q=search,
            message=message,
            error=error,
        )

    def on_get(self, req: falcon.Request, resp: falcon.Response, list_id: str) -> None:
        mlist = find_list(req, list_id, "administer")
        self._show(req, resp, mlist)

    def on_post(self, req: falcon.Request, resp: falcon.Response, list_id: str) -> None:
        mlist = find_list(req, list_id, "administer")
        f = form(req)
        session = session_of(req)
        op = f.get("op")
        try:
            role = _role(req, f.get("role"))
            email = f.get("email").strip()
            if op == "add":
                members.add(session, mlist, email, role, display_name=f.get("display_name"))
                _audit(req, mlist, "member.add", email=email, role=role.value)
                message = gettext(req, "Added {email}.").format(email=email)
            elif op == "remove":
                members.remove(session, mlist, email, role)
                _audit(req, mlist, "member.remove", email=email, role=role.value)
                message = gettext(req, "Removed {email}.").format(email=email)
            elif op == "moderation":
                member = members.get(session, mlist, email, role)
                value = f.get("moderation_action")
                member.moderation_action = members.parse_action(value) if value else None
                _audit(
                    req,
                    mlist,
                    "member.moderation",
                    email=email,
                    moderation_action=value or "default",
                )
                message = gettext(req, "{email}: moderation action {action}.").format(
                    email=email, action=value or gettext(req, "the list's default")
                )
            else:
                raise InvalidInput("op", gettext(req, "unknown operation"))
        except InvalidInput as exc:
            self._show(req, resp, mlist, error=f"{exc.field}: {exc.problem}")
            return
        self._show(req, resp, mlist, message=message)


class MassSubscription:
    """A textarea of addresses; with JavaScript, sent in chunks with a progress bar."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, list_id: str) -> None:
        mlist = find_list(req, list_id, "administer")
        render(req, resp, "mass.html", mlist=mlist, errors=[], message="")

    def on_post(self, req: falcon.Request, resp: falcon.Response, list_id: str) -> None:
        mlist = find_list(req, list_id, "administer")
        f = form(req)
        op = f.get("op", "subscribe")
        entries, errors = members.validate_lines(f.get("addresses").splitlines())
        done = already = 0
        if not errors and op == "subscribe":
            result = members.add_many(session_of(req), mlist, entries)
            done, already = result.added, result.already
        elif not errors and op == "unsubscribe":
            done = unsubscribe_many(req, mlist, [e for e, _n in entries])
            already = len(entries) - done
        elif not errors:
            errors = [f"op: {gettext(req, 'unknown operation')}"]
        if not errors:
            _audit(req, mlist, f"member.mass_{op}", count=done, already=already)
        if "application/json" in (req.get_header("Accept") or ""):
            resp.content_type = falcon.MEDIA_JSON
            resp.status = falcon.HTTP_400 if errors else falcon.HTTP_200
            resp.text = json.dumps({"done": done, "already": already, "errors": errors})
            return
        message = ""
        if not errors:
            text = (
                "Subscribed {done}; {already} were members already."
                if op == "subscribe"
                else "Unsubscribed {done}; {already} were not members."
            )
            message = gettext(req, text).format(done=done, already=already)
        render(
            req,
            resp,
            "mass.html",
            status=falcon.HTTP_400 if errors else falcon.HTTP_200,
            mlist=mlist,
            errors=errors,
            message=message,
        )


def unsubscribe_many(req: falcon.Request, mlist: MailingList, emails: list[str]) -> int:
    session = session_of(req)
    removed = 0
    for start in range(0, len(emails), members.BATCH):
        batch = emails[start : start + members.BATCH]
        ids = select(Address.id).where(Address.email.in_(batch))
        result = session.execute(
            delete(Member)
            .where(
                Member.mailing_list_id == mlist.id,
                Member.role == MemberRole.member,
                Member.address_id.in_(ids),
            )
            .execution_options(synchronize_session=False)
        )
        removed += result.rowcount or 0  # type: ignore[attr-defined]
    return removed
