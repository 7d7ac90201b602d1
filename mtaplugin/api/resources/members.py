"""``/members``, ``/members/find``, ``/lists/{list}/roster/{role}`` and
``/lists/{list}/{role}/{email}``.

Entries (:mod:`.member_view`) are paged with LIMIT/OFFSET.  Joining and leaving (role
member) go through the subscription workflow (:mod:`mtaplugin.manage.subscriptions`),
answered in Mailman's words (:mod:`mtaplugin.api.workflows`).
"""

from __future__ import annotations

from typing import Any

import falcon
from sqlalchemy import ColumnElement, and_, func, or_, select

from mtaplugin.api import collections, workflows
from mtaplugin.api.counts import member_counts
from mtaplugin.api.dialect import (
    Params,
    as_enum,
    bad_request,
    conflict,
    created,
    forbidden,
    invalid,
    no_content,
    not_found,
)
from mtaplugin.api.resources.base import (
    list_ref,
    mailing_list,
    principal,
    session,
    url,
    workflow,
)
from mtaplugin.api.resources.member_view import (
    ADDRESS_USER,
    BOUNCE_FIELDS,
    MEMBER_USER,
    entries_with_fields,
    member_query,
    one_entry,
)
from mtaplugin.enums import Action, DeliveryMode, DeliveryStatus, MemberRole
from mtaplugin.errors import AlreadyExists, InvalidInput, NotFound
from mtaplugin.i18n import _
from mtaplugin.manage import lists, members, subscriptions, topics
from mtaplugin.manage.subscriptions import AlreadyPending
from mtaplugin.model import Address, MailingList, Member, User


def member_by_id(req: falcon.Request, member_id: str, administer: bool = False) -> Member:
    member = session(req).scalar(select(Member).where(Member.member_id == member_id.lower()))
    if member is None:
        raise not_found(_("No such member: {id}").format(id=member_id))
    principal(req).check_list(member.mailing_list, administer=administer)
    return member


def _role(value: str) -> MemberRole:
    try:
        return MemberRole(value)
    except ValueError:
        raise not_found(_("No such role: {role}").format(role=value)) from None


# --- /members -----------------------------------------------------------------------------
class Members:
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        query = member_query()
        visible = principal(req).lists_filter()
        if visible is not None:
            query = query.where(visible)
        resp.media = collections.from_query(req, session(req), query, entries_with_fields(req))

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        p = Params.of(req)
        p.only(
            {
                "list_id",
                "subscriber",
                "display_name",
                "delivery_mode",
                "delivery_status",
                "role",
                "pre_verified",
                "pre_confirmed",
                "pre_approved",
                "invitation",
                "send_welcome_message",
                "moderation_action",
            }
        )
        try:
            mlist = lists.get(session(req), p.str("list_id", required=True))
        except NotFound:
            raise bad_request(_("No such list")) from None
        principal(req).check_list(mlist, administer=True)
        subscriber = p.str("subscriber", required=True)
        email = _subscriber_email(req, subscriber)
        role = p.enum("role", MemberRole, MemberRole.member)
        name = p.text("display_name") or ""
        mode = members.check_delivery_mode(p.enum("delivery_mode", DeliveryMode))
        status = p.enum("delivery_status", DeliveryStatus)
        s = session(req)
        if role != MemberRole.member:
            member = members.add(
                s,
                mlist,
                email,
                role,
                display_name=name,
                delivery_mode=mode,
                moderation_action=p.enum("moderation_action", Action),
                clock=workflow(req).clock,
            )
            created(resp, url(req, "members", member.member_id))
            return
        with workflows.subscription_refusals():
            state, token = subscriptions.request_subscription(
                s,
                mlist,
                email,
                pre_verified=p.bool("pre_verified", False),
                pre_confirmed=p.bool("pre_confirmed", False),
                pre_approved=p.bool("pre_approved", False),
                invitation=p.bool("invitation", False),
                display_name=name,
                delivery_mode=mode,
                send_welcome_message=p.bool("send_welcome_message", None),
                actor=principal(req).name,
                settings=workflow(req),
            )
        if workflows.waiting(resp, state, token):
            return
        member = members.get(s, mlist, email, MemberRole.member)
        if status is not None:
            member.delivery_status = status
        if p.raw("moderation_action") is not None:
            member.moderation_action = p.enum("moderation_action", Action)
        created(resp, url(req, "members", member.member_id))


def _subscriber_email(req: falcon.Request, subscriber: str) -> str:
    """``subscriber`` is an email address or a user_id (then: the user's preferred one)."""
    if "@" in subscriber:
        return subscriber
    user = session(req).scalar(select(User).where(User.user_id == subscriber.strip().lower()))
    if user is None:
        raise bad_request(_("No such user: {s}").format(s=subscriber))
    if user.preferred_address is None:
        raise bad_request(_("User has no preferred address: {s}").format(s=subscriber))
    return user.preferred_address.email


class FindMembers:
    def _find(self, req: falcon.Request, resp: falcon.Response) -> None:
        p = Params.of(req)
        p.only(
            {
                "list_id",
                "subscriber",
                "role",
                "moderation_action",
                "delivery_mode",
                "delivery_status",
                "fields",
                *collections.PAGING,
            }
        )
        query = member_query()
        conditions: list[ColumnElement[bool]] = []
        if (key := p.str("list_id")) is not None:
            try:
                mlist = lists.get(session(req), key)
            except NotFound:
                raise not_found(_("No such list: {name}").format(name=key)) from None
            conditions.append(Member.mailing_list_id == mlist.id)
        if (subscriber := p.str("subscriber")) is not None:
            conditions.append(_subscriber_match(subscriber))
        if (role := p.enum("role", MemberRole)) is not None:
            conditions.append(Member.role == role)
        if (action := p.enum("moderation_action", Action)) is not None:
            conditions.append(Member.moderation_action == action)
        if (mode := p.enum("delivery_mode", DeliveryMode)) is not None:
            conditions.append(Member.delivery_mode == mode)
        if (status := p.enum("delivery_status", DeliveryStatus)) is not None:
            conditions.append(Member.delivery_status == status)
        visible = principal(req).lists_filter()
        if visible is not None:
            conditions.append(visible)
        if conditions:
            query = query.where(and_(*conditions))
        resp.media = collections.from_query(req, session(req), query, entries_with_fields(req))

    on_get = _find
    on_post = _find


def _subscriber_match(subscriber: str) -> ColumnElement[bool]:
    text = subscriber.strip().lower()
    if "*" in text:
        pattern = text.replace("%", r"\%").replace("_", r"\_").replace("*", "%")
        return or_(
            Address.email.like(pattern, escape="\\"),
            func.lower(Address.display_name).like(pattern, escape="\\"),
            func.lower(Member.display_name).like(pattern, escape="\\"),
        )
    if "@" in text:
        return Address.email == text
    return or_(MEMBER_USER.user_id == text, ADDRESS_USER.user_id == text)


class OneMember:
    def on_get(self, req: falcon.Request, resp: falcon.Response, member_id: str) -> None:
        resp.media = one_entry(req, member_by_id(req, member_id).id)

    def on_patch(self, req: falcon.Request, resp: falcon.Response, member_id: str) -> None:
        member = member_by_id(req, member_id)
        p = Params.of(req)
        for name in BOUNCE_FIELDS:
            if name in p:
                raise invalid(name, _("read-only: bounce processing keeps it"))
        p.only(
            {
                "address",
                "delivery_mode",
                "moderation_action",
                "topics",
                "receive_nonmatching_topics",
            }
        )
        if "topics" in p:
            # a list of topic names, or one text of names separated by spaces or commas
            wanted = [w for v in p.list("topics") for w in v.replace(",", " ").split()]
            try:
                topics.choose(member.mailing_list, member, wanted)
            except InvalidInput as exc:
                raise invalid(exc.field, exc.problem) from None
        if "receive_nonmatching_topics" in p:
            member.receive_nonmatching_topics = bool(p.bool("receive_nonmatching_topics"))
        if "moderation_action" in p:
            value = p.str("moderation_action")
            member.moderation_action = (
                None if value in ("", "None") else as_enum("moderation_action", value, Action)
            )
        if not principal(req).can_administer(member.mailing_list) and (
            "address" in p or "delivery_mode" in p
        ):
            raise forbidden(_("only an owner may change this member's address or delivery"))
        if "delivery_mode" in p:
            member.delivery_mode = members.check_delivery_mode(
                p.enum("delivery_mode", DeliveryMode)
            )
        if "address" in p:
            from mtaplugin.manage import users

            address = users.find_address(session(req), p.str("address") or "")
            if address is None:
                raise invalid("address", _("No such address: {a}").format(a=p.str("address")))
            member.address_id = address.id
        session(req).flush()
        no_content(resp)

    def on_delete(self, req: falcon.Request, resp: falcon.Response, member_id: str) -> None:
        member = member_by_id(req, member_id, administer=True)
        _unsubscribe(req, resp, member.mailing_list, member)


def _unsubscribe(
    req: falcon.Request, resp: falcon.Response, mlist: MailingList, member: Member
) -> None:
    p = Params.of(req)
    p.only({"pre_confirmed", "pre_approved"})
    if member.role is not MemberRole.member:
        # owners, moderators, nonmembers: no workflow, as in Mailman
        session(req).delete(member)
        session(req).flush()
        no_content(resp)
        return
    try:
        state, token = subscriptions.request_unsubscription(
            session(req),
            mlist,
            member.address.email,
            pre_confirmed=p.bool("pre_confirmed", True),
            pre_approved=p.bool("pre_approved", False),
            actor=principal(req).name,
            settings=workflow(req),
        )
    except AlreadyPending:
        # Mailman starts another workflow and answers 202; the one waiting is that answer
        workflows.still_waiting(resp, session(req), mlist, member.address.email, workflow(req))
        return
    except AlreadyExists as exc:
        raise conflict(exc.problem) from None
    if not workflows.waiting(resp, state, token):
        no_content(resp)


# --- /lists/{list}/roster/{role} and /lists/{list}/{role}/{email} ----------------------
class Roster:
    def on_get(self, req: falcon.Request, resp: falcon.Response, list: str, role: str) -> None:
        mlist = list_ref(req, list)
        member_role = _role(role)
        Params.of(req).only({"fields", *collections.PAGING})
        where = (Member.mailing_list_id == mlist.id, Member.role == member_role)
        query = member_query().where(*where)
        keys = select(Member.id).where(*where).order_by(Member.id)
        total = member_counts(session(req), [(mlist.id, mlist.generation)], member_role)
        resp.media = collections.from_query(
            req,
            session(req),
            query,
            entries_with_fields(req),
            total=total[mlist.id],
            keys=(keys, Member.id),
        )

    def on_delete(self, req: falcon.Request, resp: falcon.Response, list: str, role: str) -> None:
        """Mass unsubscribe: ``emails=`` (repeated) → ``{email: removed}``."""
        mlist = mailing_list(req, list, administer=True)
        member_role = _role(role)
        p = Params.of(req)
        p.only({"emails"})
        emails = p.list("emails")
        if not emails:
            raise bad_request(_("Missing Parameter: emails"))
        if member_role is MemberRole.member:
            # as an administrator's removal: the goodbye and owners' notice as the list says
            resp.media = subscriptions.mass_unsubscribe(
                session(req), mlist, emails, actor=principal(req).name, settings=workflow(req)
            )
            return
        result: dict[str, bool] = {}
        for email in emails:
            try:
                member = members.get(session(req), mlist, email, member_role)
            except (NotFound, Exception):
                result[email] = False
                continue
            session(req).delete(member)
            result[email] = True
        session(req).flush()
        resp.media = result


class ListMember:
    def _member(self, req: falcon.Request, list: str, role: str, email: str, admin: bool) -> Any:
        mlist = mailing_list(req, list, administer=admin)
        try:
            return mlist, members.get(session(req), mlist, email, _role(role))
        except Exception as exc:
            if isinstance(exc, NotFound):  # the app's handler words it
                raise
            raise not_found(_("No such member: {e}").format(e=email)) from None

    def on_get(
        self, req: falcon.Request, resp: falcon.Response, list: str, role: str, email: str
    ) -> None:
        _mlist, member = self._member(req, list, role, email, admin=False)
        resp.media = one_entry(req, member.id)

    def on_patch(
        self, req: falcon.Request, resp: falcon.Response, list: str, role: str, email: str
    ) -> None:
        _mlist, member = self._member(req, list, role, email, admin=False)
        OneMember().on_patch(req, resp, member.member_id)

    def on_delete(
        self, req: falcon.Request, resp: falcon.Response, list: str, role: str, email: str
    ) -> None:
        mlist, member = self._member(req, list, role, email, admin=True)
        _unsubscribe(req, resp, mlist, member)
