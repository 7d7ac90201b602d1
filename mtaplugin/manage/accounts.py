"""Accounts on the web: sign-up, and the mailed links that create an account or attach
one more address to it.  What the owner changes later is in
:mod:`~mtaplugin.manage.account_profile`; deleting the account in
:mod:`~mtaplugin.manage.account_deletion`.

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
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from mtaplugin import notices, outbox, passwords
from mtaplugin.enums import RequestType, TokenOwner
from mtaplugin.errors import AlreadyExists, InvalidInput, NotFound
from mtaplugin.i18n import _, current_language
from mtaplugin.manage import claims, pending, users
from mtaplugin.manage.subscriptions import WorkflowSettings
from mtaplugin.model import Address, AuditEntry, PendingRequest, User
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


def mail_link(
    session: Session, workflow: WorkflowSettings, to: str, subject: str, name: str, **values: str
) -> None:
    variables: dict[str, Any] = {"user_email": to, **values}
    body = render(name, current_language(), session=session, **variables)
    raw = notices.build(workflow.site_owner, to, subject, body)
    outbox.enqueue(session, workflow.site_owner, [to], raw, kind="notice", now=workflow.now())


def link_request(
    session: Session,
    workflow: WorkflowSettings,
    kind: RequestType,
    email: str,
    data: dict[str, Any],
    *,
    step: str = "verify",
    life: timedelta | None = None,
    **fields: Any,
) -> PendingRequest | None:
    """A request of ``kind`` whose link is mailed to ``email`` (its owner: the person),
    living ``life`` (else a subscriber's confirmation's); None when one was made within
    :data:`RESEND_AFTER` (no mail then)."""
    return pending.create_unless_recent(
        session,
        kind,
        email,
        resend_after=RESEND_AFTER,
        step=step,
        owner=TokenOwner.subscriber,
        life=workflow.pending_life if life is None else life,
        now=workflow.now(),
        data=data,
        **fields,
    )


def mail_verify_link(
    session: Session,
    workflow: WorkflowSettings,
    links: Links,
    request: PendingRequest,
    subject: str,
    template: str,
) -> None:
    """Mail the request's person its verification link (``template``)."""
    mail_link(
        session,
        workflow,
        request.email,
        subject,
        template,
        verify_url=links.verify(request.token),
        expires=expires_text(request),
    )


def expires_text(request: PendingRequest) -> str:
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
            mail_link(
                session,
                workflow,
                addr,
                _("You already have an account"),
                "site:user:notice:account-exists",
                login_url=links.login(),
                reset_url=links.reset(),
            )
        return
    request = link_request(
        session,
        workflow,
        RequestType.registration,
        addr,
        {"password": hashed},
        display_name=display_name,
    )
    if request is None:
        return
    mail_verify_link(
        session,
        workflow,
        links,
        request,
        _("Confirm your new account"),
        "site:user:action:register",
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
        address = Address(
            email=email,
            original_email=email,
            display_name=request.display_name,
            registered_on=now,
        )
        session.add(address)
    elif claims.drop_claim(session, address, now, actor=f"web:{email}"):
        owner = None  # an account that only claimed it is not taken over (M3)
    # A user made for the address alone (an import, a subscription, Postorius) becomes
    # the account: the link has just shown the address is theirs.
    user = owner or User(display_name=request.display_name, created_on=now)
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
        claims.drop_claim(session, address, now, actor=f"web:{email}")  # a claim gives way
    if address is not None and address.user_id not in (None, user.id):
        other = session.get(User, address.user_id)
        if other is not None and (other.password or other.is_server_owner):
            session.delete(request)
            session.flush()
            raise AlreadyExists(
                "email", _("{email} belongs to another account").format(email=email)
            )
    if address is None:
        address = Address(email=email, original_email=email, registered_on=now)
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
