"""Deleting a web account by its owner.

Deleting an account removes its memberships through the unsubscription workflow (goodbye
and owners' notices as each list says), then its addresses and the user; an audit entry
keeps what was done.  An owner or moderator of a list, a domain owner or a site admin is
refused until someone else takes the role.
"""

from __future__ import annotations

from sqlalchemy import delete, or_, select
from sqlalchemy.orm import Session

from mtaplugin.enums import MemberRole, RequestType
from mtaplugin.errors import InvalidInput
from mtaplugin.i18n import _
from mtaplugin.manage import admin_roster, users
from mtaplugin.manage.accounts import ACCOUNT_REQUESTS
from mtaplugin.manage.subscriptions import WorkflowSettings
from mtaplugin.model import Address, AuditEntry, MailingList, Member, PendingRequest, User
from mtaplugin.model.domain import domain_owners


def roles_held(session: Session, user: User) -> list[str]:
    """What keeps ``user`` from deleting the account: lists it owns or moderates, domains
    it owns, the site admin role (in words)."""
    held: list[str] = []
    if user.is_server_owner:
        held.append(_("site administrator"))
    rows = session.execute(
        select(MailingList, Member.role)
        .join(Member, Member.mailing_list_id == MailingList.id)
        .join(Address, Address.id == Member.address_id)
        .where(
            or_(Address.user_id == user.id, Member.user_id == user.id),
            Member.role.in_([MemberRole.owner, MemberRole.moderator]),
        )
        .order_by(MailingList.mail_host, MailingList.list_name)
    ).all()
    for mlist, role in rows:
        listname = mlist.fqdn_listname
        if role is MemberRole.owner:
            held.append(_("owner of {list}").format(list=listname))
        else:
            held.append(_("moderator of {list}").format(list=listname))
    if session.scalar(select(domain_owners.c.domain_id).where(domain_owners.c.user_id == user.id)):
        held.append(_("domain owner"))
    return held


def delete_account(
    session: Session, workflow: WorkflowSettings, user: User, password: str
) -> list[str]:
    """Delete ``user`` (after checking ``password``): its memberships through the
    unsubscription workflow, its addresses, its account requests, then the user.  Returns
    the lists it left.  Raises :class:`InvalidInput` naming ``password`` or ``account``."""
    if not users.check_password(user, password):
        raise InvalidInput("password", _("the password is wrong"))
    held = roles_held(session, user)
    if held:
        raise InvalidInput(
            "account",
            _("hand over these roles first: {roles}").format(roles=", ".join(held)),
        )
    addresses = list(session.scalars(select(Address).where(Address.user_id == user.id)))
    emails = sorted(a.email for a in addresses)
    rows = session.execute(
        select(MailingList, Address.email)
        .join(Member, Member.mailing_list_id == MailingList.id)
        .join(Address, Address.id == Member.address_id)
        .where(Address.user_id == user.id, Member.role == MemberRole.member)
        .order_by(MailingList.mail_host, MailingList.list_name, Address.email)
    ).all()
    left: list[str] = []
    actor = f"web:{emails[0]}" if emails else f"user:{user.user_id}"
    for mlist, email in rows:
        # The person has shown it is them (the password); the account going cannot wait
        # for a moderator: it leaves as an administrator removes a member (confirmed and
        # approved), and the goodbye and the owners' notice follow the list.
        by = admin_roster.Administrator(session, mlist, actor, workflow)
        admin_roster.remove(by, email, MemberRole.member)
        left.append(mlist.fqdn_listname)
    session.execute(
        delete(PendingRequest).where(
            PendingRequest.email.in_(emails),
            PendingRequest.request_type.in_([*ACCOUNT_REQUESTS, RequestType.password_reset]),
        )
    )
    for request in session.scalars(
        select(PendingRequest).where(
            PendingRequest.request_type == RequestType.address_verification
        )
    ):
        if request.data.get("user_id") == user.user_id:
            session.delete(request)
    session.add(
        AuditEntry(
            actor=actor,
            action="account.delete",
            at=workflow.now(),
            detail={"emails": emails, "lists": sorted(set(left))},
        )
    )
    user.preferred_address_id = None
    for address in addresses:
        session.delete(address)
    session.flush()
    session.delete(user)
    session.flush()
    return sorted(set(left))
