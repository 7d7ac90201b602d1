"""List owners: the roster (search, paging), one member at a time, mass (un)subscription.

Adding or removing a member (role member) goes through the subscription workflow as an
administrator's act (confirmed and approved): a banned address is refused, and the
welcome, goodbye and owners' notices go as the list's settings say.  Owners, moderators
and nonmembers are rows without a workflow, as in Mailman.

Paging is SQL ``LIMIT``/``OFFSET`` in address order with a total count; a page in the
second half is read from the other end (descending, with the offset from the end), so the
last page of a 100 000-member list costs what the first does.  Members (role member) show
their bounce record: score, last bounce, warnings sent, and why delivery is off
(:mod:`mtaplugin.bounces.standing`), read for the page's rows in one more query.
"""

from __future__ import annotations

import json

import falcon
from sqlalchemy import func, select

from mtaplugin.bounces.standing import Standing, standings, when
from mtaplugin.enums import Action, MemberRole
from mtaplugin.errors import InvalidInput
from mtaplugin.manage import admin_roster, members, subscriptions
from mtaplugin.model import Address, MailingList, Member
from mtaplugin.roster_sources import sources
from mtaplugin.web.common import (
    actor_of,
    audit,
    find_list,
    gettext,
    redirect_after,
    session_of,
    workflow_of,
)
from mtaplugin.web.forms import form
from mtaplugin.web.render import form_status, render, render_form
from mtaplugin.web.setting_help import choice_label

PAGE_SIZE = 50


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
    total = session.scalar(count) or 0
    start = (page - 1) * PAGE_SIZE
    # The page's member ids first (a narrow sort: ids and addresses only), then its rows.
    keys = select(Member.id).join(Address, Address.id == Member.address_id).where(*where)
    if start <= total // 2:
        ids = list(session.scalars(keys.order_by(Address.email).limit(PAGE_SIZE).offset(start)))
    else:
        # The second half from the other end: the last page costs what the first does.
        n = max(0, min(PAGE_SIZE, total - start))
        ids = list(
            session.scalars(keys.order_by(Address.email.desc()).limit(n).offset(total - start - n))
        )
    rows = session.execute(
        select(Member, Address)
        .join(Address, Address.id == Member.address_id)
        .where(Member.id.in_(ids))
        .order_by(Address.email)
    ).all()
    return [(m, a) for m, a in rows], total


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
        bounces: dict[int, Standing] = {}
        if role is MemberRole.member:
            bounces = standings(session_of(req), [m.id for m, _a in rows])
        source = sources.find(session_of(req), mlist, role)
        render_form(
            req,
            resp,
            "members.html",
            mlist=mlist,
            rows=rows,
            total=total,
            page=page,
            pages=pages,
            role=role.value,
            roles=[r.value for r in MemberRole],
            actions=[(a.value, choice_label("Action", a.value)) for a in Action],
            q=search,
            bounces=bounces,
            source=sources.view(source) if source else None,
            reason=lambda standing: standing.reason(lambda text: gettext(req, text)),
            when=when,
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
            by = admin_roster.Administrator(session, mlist, actor_of(req), workflow_of(req))
            if op == "add":
                admin_roster.add(by, email, role, display_name=f.get("display_name"))
                audit(req, mlist, "member.add", email=email, role=role.value)
                message = gettext(req, "Added {email}.").format(email=email)
            elif op == "remove":
                admin_roster.remove(by, email, role)
                audit(req, mlist, "member.remove", email=email, role=role.value)
                message = gettext(req, "Removed {email}.").format(email=email)
            elif op == "moderation":
                member = members.get(session, mlist, email, role)
                value = f.get("moderation_action")
                member.moderation_action = members.parse_action(value) if value else None
                audit(
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
        redirect_after(req, resp, req.relative_uri, message)


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
        # Removing members in bulk is asked for by typing the list's address, as removing
        # the list is: a slip of the Operation select must not empty a list.
        if (
            op == "unsubscribe"
            and f.get("confirm_name").strip().lower() != mlist.fqdn_listname.lower()
        ):
            errors = [
                *errors,
                "confirm_name: "
                + gettext(req, "type the list's address to unsubscribe these members"),
            ]
        # "quiet": no welcome, goodbye or owners' notice; else the list's settings say
        notices = False if f.get("quiet") == "1" else None
        # a chunk of the page's batch (mass.js): the owners' notice comes with the last
        batch = subscriptions.batch_token(f.get("batch"))
        owners = False if batch else notices
        done = already = 0
        refused: tuple[str, ...] = ()
        if not errors and op == "subscribe":
            result = subscriptions.mass_subscribe(
                session_of(req),
                mlist,
                entries,
                send_welcome_message=notices,
                send_admin_notice=owners,
                actor=actor_of(req),
                settings=workflow_of(req),
                batch=batch,
            )
            done, already, refused = len(result.added), result.already, result.refused
        elif not errors and op == "unsubscribe":
            removed = subscriptions.mass_unsubscribe(
                session_of(req),
                mlist,
                [e for e, _n in entries],
                send_goodbye_message=notices,
                send_admin_notice=owners,
                actor=actor_of(req),
                settings=workflow_of(req),
                batch=batch,
            )
            done = sum(removed.values())
            already = len(entries) - done
        elif not errors:
            errors = [f"op: {gettext(req, 'unknown operation')}"]
        if batch and f.get("last") == "1" and op in ("subscribe", "unsubscribe"):
            # also after a chunk refused as a whole: what the chunks before did is told
            subscriptions.notify_batch(
                session_of(req), mlist, workflow_of(req), op, batch, actor_of(req), notices
            )
        if not errors:
            audit(req, mlist, f"member.mass_{op}", count=done, already=already)
        if "application/json" in (req.get_header("Accept") or ""):
            resp.content_type = falcon.MEDIA_JSON
            resp.status = form_status(errors)
            resp.text = json.dumps(
                {"done": done, "already": already, "refused": list(refused), "errors": errors}
            )
            return
        message = ""
        status = form_status(errors)
        if not errors:
            text = (
                "Subscribed {done}; {already} were members already."
                if op == "subscribe"
                else "Unsubscribed {done}; {already} were not members."
            )
            message = gettext(req, text).format(done=done, already=already)
            if not refused:
                redirect_after(req, resp, req.path, message)
                return
            # The refused addresses, however many, stay on the page that lists them.
            if refused:
                errors = [
                    gettext(req, "Refused (banned, or the list's own address): {emails}").format(
                        emails=", ".join(refused)
                    )
                ]
        render(
            req,
            resp,
            "mass.html",
            status=status,
            mlist=mlist,
            errors=errors,
            message=message,
        )
