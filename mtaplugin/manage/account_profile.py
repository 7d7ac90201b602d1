"""What the owner of a web account changes: one more address (mailed a link, see
:mod:`mtaplugin.manage.accounts`), the preferred address, removing an address, the
password."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin.enums import RequestType
from mtaplugin.errors import AlreadyExists, InvalidInput, NotFound
from mtaplugin.i18n import _
from mtaplugin.manage import users
from mtaplugin.manage.accounts import Links, link_request, mail_verify_link
from mtaplugin.manage.subscriptions import WorkflowSettings
from mtaplugin.model import Address, AuditEntry, PendingRequest, User
from mtaplugin.vocabulary.addresses import normalize_email


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
    request = link_request(
        session, workflow, RequestType.address_verification, addr, {"user_id": user.user_id}
    )
    if request is not None:
        mail_verify_link(
            session, workflow, links, request, _("Confirm your address"), "site:user:action:verify"
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


def remove_address(session: Session, user: User, email: str, now: datetime) -> Address:
    """Detach one of the account's addresses (its memberships stay with the address), as
    of ``now``; the last address cannot go (delete the account instead)."""
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
            at=now,
            detail={"email": address.email},
        )
    )
    session.flush()
    return address


def change_password(
    session: Session, user: User, current: str, new: str, again: str, now: datetime
) -> None:
    """The new password, audited at ``now``; raises :class:`InvalidInput` naming
    ``current_password`` or ``password``."""
    if not users.check_password(user, current):
        raise InvalidInput("current_password", _("the current password is wrong"))
    if new != again:
        raise InvalidInput("password", _("the two passwords differ"))
    user.password = users.hash_password(new, users.MIN_PASSWORD)
    session.add(AuditEntry(actor=f"user:{user.user_id}", action="account.password", at=now))
    session.flush()
