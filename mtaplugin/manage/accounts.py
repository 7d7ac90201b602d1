"""Accounts on the web: sign-up, more addresses, the preferred one, deletion by the owner.

Every step that needs an address shown to be the person's waits in the one pending-request
store (:mod:`mtaplugin.manage.pending`) with a mailed link, valid as long as a subscriber's
confirmation (``[tokens] pending_request_life``):

- a **sign-up** (``registration``) keeps the argon2 hash of the chosen password in the
  request; the user and its address exist only once the link is used;
- one more **address** (``address_verification``) is attached to the account only once its
  link is used (an unverified address grants nothing: no log-in, no list role).

Links are single use; a sign-up's link asks for the password chosen at sign-up once more
(so that someone who signs up with a stranger's address cannot get the stranger to open an
account whose password they know).  A sign-up for an address that already has an account
gets the same answer as any other (no account enumeration); that address is mailed a note
with the log-in and password-reset links instead.  At most one mail per address and kind
goes out every :data:`RESEND_AFTER`.

Deleting an account removes its memberships through the unsubscription workflow (goodbye
and owners' notices as each list says), then its addresses and the user; an audit entry
keeps what was done.  An owner or moderator of a list, a domain owner or a site admin is
refused until someone else takes the role.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, func, or_, select
from sqlalchemy.orm import Session

from mtaplugin import notices, outbox, passwords
from mtaplugin.errors import AlreadyExists, InvalidInput, NotFound
from mtaplugin.i18n import _, current_language
from mtaplugin.manage import claims, pending, subscriptions, users
from mtaplugin.manage.subscriptions import WorkflowSettings
from mtaplugin.model import Address, AuditEntry, MailingList, Member, PendingRequest, User
from mtaplugin.model.domain import domain_owners
from mtaplugin.model.enums import MemberRole, RequestType, TokenOwner
from mtaplugin.notices.templates import render
from mtaplugin.vocabulary.addresses import normalize_email

#: at most one mail of each kind per address in this time
RESEND_AFTER = timedelta(minutes=10)
#: the request types of this module
ACCOUNT_REQUESTS = (RequestType.registration, RequestType.address_verification)


class InvalidLink(NotFound):
    """A verification link that is unknown, used already or expired."""

    def __init__(self) -> None:
        super().__init__(
            "token",
            _("This link is not valid any more: it was used already, or it has expired."),
        )


@dataclass(frozen=True)
class Links:
    """Where the mailed links point: the site's web address (``https://lists.example``)."""

    base_url: str

    def verify(self, token: str) -> str:
        return f"{self.base_url.rstrip('/')}/account/verify/{token}"

    def login(self) -> str:
        return f"{self.base_url.rstrip('/')}/login"

    def reset(self) -> str:
        return f"{self.base_url.rstrip('/')}/reset"


def _mail(
    session: Session, workflow: WorkflowSettings, to: str, subject: str, name: str, **values: str
) -> None:
    variables: dict[str, Any] = {"user_email": to, **values}
    body = render(name, current_language(), session=session, **variables)
    raw = notices.build(workflow.site_owner, to, subject, body)
    outbox.enqueue(session, workflow.site_owner, [to], raw, kind="notice")


def _expires(request: PendingRequest) -> str:
    return request.expires_at.strftime("%Y-%m-%d %H:%M UTC")


def _account_of(session: Session, email: str) -> User | None:
    """The user that owns ``email``, verified, with a password (a log-in account)."""
    user = users.user_by_email(session, email, verified=True)
    return user if user is not None and user.password else None


def _noted_since(session: Session, email: str, since: datetime) -> bool:
    return (
        session.scalar(
            select(func.count(AuditEntry.id)).where(
                AuditEntry.action == "account.signup_existing",
                AuditEntry.actor == email,
                AuditEntry.at > since,
            )
        )
        or 0
    ) > 0


# --- sign-up --------------------------------------------------------------------------------
def request_signup(
    session: Session,
    workflow: WorkflowSettings,
    links: Links,
    email: str,
    password: str,
    display_name: str = "",
) -> None:
    """Mail ``email`` a link that creates the account; raises :class:`InvalidInput` naming
    ``email`` or ``password`` for bad input (nothing stored then).  The same outcome for an
    address that has an account already (that address gets a note instead)."""
    addr = normalize_email(email)
    hashed = users.hash_password(password, users.MIN_PASSWORD)
    display_name = display_name.strip()[:255]
    now = workflow.now()
    if _account_of(session, addr) is not None:
        if not _noted_since(session, addr, now - RESEND_AFTER):
            session.add(AuditEntry(actor=addr, action="account.signup_existing", at=now))
            _mail(
                session,
                workflow,
                addr,
                _("You already have an account"),
                "site:user:notice:account-exists",
                login_url=links.login(),
                reset_url=links.reset(),
            )
        return
    request = pending.create_unless_recent(
        session,
        RequestType.registration,
        addr,
        resend_after=RESEND_AFTER,
        step="verify",
        owner=TokenOwner.subscriber,
        life=workflow.pending_life,
        now=now,
        data={"password": hashed},
        display_name=display_name,
    )
    if request is None:
        return
    _mail(
        session,
        workflow,
        addr,
        _("Confirm your new account"),
        "site:user:action:register",
        verify_url=links.verify(request.token),
        expires=_expires(request),
    )


def find_request(session: Session, workflow: WorkflowSettings, token: str) -> PendingRequest:
    """The live sign-up or address verification of ``token``; :class:`InvalidLink` when it
    is unknown, used or expired (the page says so, and nothing changes)."""
    found = pending.find(session, token, workflow.now(), kinds=ACCOUNT_REQUESTS)
    if found is None:
        raise InvalidLink()
    return found


def verify(session: Session, workflow: WorkflowSettings, token: str, password: str = "") -> User:
    """Carry out the request of ``token``: create the account, or attach the address.
    Returns the user; raises :class:`InvalidLink`, or :class:`AlreadyExists` naming
    ``email`` when the address went to another account meanwhile (the request is used up
    then, nothing else changes).

    A sign-up is completed only with the password chosen at sign-up (:class:`InvalidInput`
    naming ``password`` otherwise, the link stays valid): someone who signed up with a
    stranger's address cannot have the stranger open an account whose password they know."""
    request = find_request(session, workflow, token)
    if request.request_type is RequestType.registration:
        if not passwords.verify(password, str(request.data.get("password", ""))):
            raise InvalidInput("password", _("this is not the password chosen when signing up"))
        return _create_account(session, workflow, request)
    return _attach_address(session, workflow, request)


def _create_account(session: Session, workflow: WorkflowSettings, request: PendingRequest) -> User:
    now = workflow.now()
    email = request.email
    address = users.find_address(session, email)
    owner = session.get(User, address.user_id) if address and address.user_id else None
    if owner is not None and owner.password and address is not None and address.verified_on:
        session.delete(request)
        session.flush()
        raise AlreadyExists("email", _("{email} already has an account").format(email=email))
    if address is None:
        address = Address(email=email, original_email=email, display_name=request.display_name)
        session.add(address)
    elif claims.drop_claim(session, address, actor=f"web:{email}"):
        owner = None  # an account that only claimed it is not taken over (M3)
    # A user made for the address alone (an import, a subscription, Postorius) becomes
    # the account: the link has just shown the address is theirs.
    user = owner or User(display_name=request.display_name)
    if owner is None:
        session.add(user)
        session.flush()
        address.user_id = user.id
    address.verified_on = address.verified_on or now
    user.password = str(request.data["password"])
    user.display_name = user.display_name or request.display_name
    session.flush()
    user.preferred_address_id = user.preferred_address_id or address.id
    session.add(
        AuditEntry(actor=f"web:{email}", action="account.create", at=now, detail={"email": email})
    )
    session.delete(request)
    session.flush()
    return user


def _attach_address(session: Session, workflow: WorkflowSettings, request: PendingRequest) -> User:
    now = workflow.now()
    user = users.user_by_id(session, str(request.data.get("user_id", "")))
    if user is None:
        session.delete(request)
        session.flush()
        raise InvalidLink()
    email = request.email
    address = users.find_address(session, email)
    if address is not None and address.user_id not in (None, user.id):
        claims.drop_claim(session, address, actor=f"web:{email}")  # a claim gives way
    if address is not None and address.user_id not in (None, user.id):
        other = session.get(User, address.user_id)
        if other is not None and (other.password or other.is_server_owner):
            session.delete(request)
            session.flush()
            raise AlreadyExists(
                "email", _("{email} belongs to another account").format(email=email)
            )
    if address is None:
        address = Address(email=email, original_email=email)
        session.add(address)
    address.user_id = user.id
    address.verified_on = address.verified_on or now
    session.add(
        AuditEntry(
            actor=f"web:{email}", action="account.address_add", at=now, detail={"email": email}
        )
    )
    session.delete(request)
    session.flush()
    return user


# --- addresses -------------------------------------------------------------------------------
def verified_addresses(session: Session, user: User) -> list[Address]:
    return list(
        session.scalars(
            select(Address)
            .where(Address.user_id == user.id, Address.verified_on.is_not(None))
            .order_by(Address.email)
        )
    )


def waiting_addresses(session: Session, workflow: WorkflowSettings, user: User) -> list[str]:
    """The addresses this account asked to add whose links wait to be used."""
    rows = session.scalars(
        select(PendingRequest).where(
            PendingRequest.request_type == RequestType.address_verification,
            PendingRequest.expires_at > workflow.now(),
        )
    )
    return sorted({r.email for r in rows if r.data.get("user_id") == user.user_id})


def request_address(
    session: Session, workflow: WorkflowSettings, links: Links, user: User, email: str
) -> str:
    """Mail ``email`` a link that adds it to ``user``; returns the normalised address.
    Raises :class:`InvalidInput` naming ``email`` for a bad or already attached one."""
    addr = normalize_email(email)
    address = users.find_address(session, addr)
    if address is not None and address.user_id == user.id and address.verified_on is not None:
        raise AlreadyExists(
            "email", _("{email} is one of your addresses already").format(email=addr)
        )
    now = workflow.now()
    request = pending.create_unless_recent(
        session,
        RequestType.address_verification,
        addr,
        resend_after=RESEND_AFTER,
        step="verify",
        owner=TokenOwner.subscriber,
        life=workflow.pending_life,
        now=now,
        data={"user_id": user.user_id},
    )
    if request is None:
        return addr
    _mail(
        session,
        workflow,
        addr,
        _("Confirm your address"),
        "site:user:action:verify",
        verify_url=links.verify(request.token),
        expires=_expires(request),
    )
    return addr


def _own_address(session: Session, user: User, email: str) -> Address:
    address = users.find_address(session, email)
    if address is None or address.user_id != user.id or address.verified_on is None:
        raise NotFound("email", _("{email} is not one of your addresses").format(email=email))
    return address


def set_preferred(session: Session, user: User, email: str) -> Address:
    address = _own_address(session, user, email)
    user.preferred_address_id = address.id
    session.flush()
    return address


def remove_address(session: Session, user: User, email: str) -> Address:
    """Detach one of the account's addresses (its memberships stay with the address); the
    last address cannot go (delete the account instead)."""
    address = _own_address(session, user, email)
    if len(verified_addresses(session, user)) <= 1:
        raise InvalidInput(
            "email",
            _("{email} is your only address; delete the account instead").format(
                email=address.email
            ),
        )
    address.user_id = None
    if user.preferred_address_id == address.id:
        user.preferred_address_id = next(
            a.id for a in verified_addresses(session, user) if a.id != address.id
        )
    session.add(
        AuditEntry(
            actor=f"web:{address.email}",
            action="account.address_remove",
            detail={"email": address.email},
        )
    )
    session.flush()
    return address


def change_password(session: Session, user: User, current: str, new: str, again: str) -> None:
    """Raises :class:`InvalidInput` naming ``current_password`` or ``password``."""
    if not users.check_password(user, current):
        raise InvalidInput("current_password", _("the current password is wrong"))
    if new != again:
        raise InvalidInput("password", _("the two passwords differ"))
    user.password = users.hash_password(new, users.MIN_PASSWORD)
    session.add(AuditEntry(actor=f"user:{user.user_id}", action="account.password"))
    session.flush()


# --- deletion --------------------------------------------------------------------------------
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
        # for a moderator, but the goodbye and the owners' notice follow the list.
        subscriptions.request_unsubscription(
            session,
            mlist,
            email,
            pre_confirmed=True,
            pre_approved=True,
            actor=actor,
            settings=workflow,
        )
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
