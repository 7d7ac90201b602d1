"""The one store of pending requests: everything that waits on a token.

A :class:`~mtaplugin.model.PendingRequest` is a subscriber's or a moderator's step of the
(un)subscription workflow (:mod:`mtaplugin.manage.subscriptions`, whether it started by
mail, on the web page or through REST), a held post's moderator token
(:func:`mtaplugin.manage.held.token_for`) or a password reset
(:mod:`mtaplugin.manage.password_reset`).

Every function takes the time (``now``, from the caller's :data:`~mtaplugin.clock.Clock`),
so that a test can move it.  The lifetimes are the site's (:class:`Lifetimes`, from
``[rules] pending_request_life`` and ``moderator_request_life``).  Tokens come from
:mod:`secrets` (160 bits, lower-case hex, so that they survive the lower-casing of an
address such as ``list-confirm+TOKEN@``), are single use, and a live one is found only
before its ``expires_at``.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Select, delete, func, select
from sqlalchemy.orm import Session

from mtaplugin.config import Settings
from mtaplugin.enums import RequestType, TokenOwner
from mtaplugin.errors import NotFound
from mtaplugin.i18n import _
from mtaplugin.model import MailingList, PendingRequest

#: the request types of the (un)subscription workflow
MEMBERSHIP = (RequestType.subscription, RequestType.unsubscription)


@dataclass(frozen=True)
class Lifetimes:
    #: a subscriber's token (Mailman's pending_request_life)
    subscriber: timedelta = timedelta(days=3)
    #: a moderator's token (Mailman's moderator_request_life)
    moderator: timedelta = timedelta(days=180)
    #: a password reset link
    password_reset: timedelta = timedelta(hours=1)

    @classmethod
    def from_settings(cls, settings: Settings) -> Lifetimes:
        return cls(
            subscriber=timedelta(seconds=settings.tokens.pending_request_life),
            moderator=timedelta(seconds=settings.tokens.moderator_request_life),
        )

    def of(self, owner: TokenOwner) -> timedelta:
        return self.moderator if owner is TokenOwner.moderator else self.subscriber


def new_token() -> str:
    return secrets.token_hex(20)


def create(
    session: Session,
    kind: RequestType,
    email: str,
    *,
    step: str,
    owner: TokenOwner,
    life: timedelta,
    now: datetime,
    mailing_list_id: int | None = None,
    held_message_id: int | None = None,
    data: dict[str, Any] | None = None,
    display_name: str = "",
    token: str = "",
) -> PendingRequest:
    """Store a new request with a new token (``token``: one made already with
    :func:`new_token`), valid for ``life`` from ``now``."""
    pending = PendingRequest(
        token=token or new_token(),
        request_type=kind,
        token_owner=owner,
        mailing_list_id=mailing_list_id,
        held_message_id=held_message_id,
        email=email,
        display_name=display_name[:255],
        step=step,
        data=dict(data or {}),
        created_at=now,
        expires_at=now + life,
    )
    session.add(pending)
    session.flush()
    return pending


def create_unless_recent(
    session: Session,
    kind: RequestType,
    email: str,
    *,
    resend_after: timedelta,
    now: datetime,
    **fields: Any,
) -> PendingRequest | None:
    """:func:`create`, unless a request of ``kind`` for ``email`` was made within
    ``resend_after`` (then None: at most one mail per address in that time, so a form
    cannot be used to flood a stranger's mailbox)."""
    if created_since(session, kind, email, now - resend_after):
        return None
    return create(session, kind, email, now=now, **fields)


def find(
    session: Session,
    token: str,
    now: datetime,
    *,
    mlist: MailingList | None = None,
    kinds: Iterable[RequestType] | None = None,
) -> PendingRequest | None:
    """The live request of ``token`` (on ``mlist``, of one of ``kinds``, if given); an
    expired one is removed.  Tokens are matched as given and lower-cased (a token read
    back from an address has lost its case)."""
    token = token.strip()
    if not token:
        return None
    query = select(PendingRequest).where(PendingRequest.token.in_({token, token.lower()}))
    if mlist is not None:
        query = query.where(PendingRequest.mailing_list_id == mlist.id)
    if kinds is not None:
        query = query.where(PendingRequest.request_type.in_(list(kinds)))
    pending = session.scalars(query).first()
    if pending is not None and pending.expires_at <= now:
        session.delete(pending)
        session.flush()
        return None
    return pending


def get(
    session: Session,
    token: str,
    now: datetime,
    *,
    mlist: MailingList | None = None,
    kinds: Iterable[RequestType] | None = None,
) -> PendingRequest:
    """Like :func:`find`; raises :class:`NotFound` naming ``token``."""
    pending = find(session, token, now, mlist=mlist, kinds=kinds)
    if pending is None:
        raise NotFound("token", _("no pending request has this token (or it has expired)"))
    return pending


def for_email(
    session: Session, mlist: MailingList, email: str, kind: RequestType, now: datetime
) -> PendingRequest | None:
    """The live request of ``kind`` for ``email`` on ``mlist``, if one waits."""
    return session.scalars(
        select(PendingRequest).where(
            PendingRequest.mailing_list_id == mlist.id,
            PendingRequest.email == email,
            PendingRequest.request_type == kind,
            PendingRequest.expires_at > now,
        )
    ).first()


def created_since(session: Session, kind: RequestType, email: str, since: datetime) -> bool:
    """Whether a request of ``kind`` for ``email`` was made after ``since``."""
    return (
        session.scalar(
            select(PendingRequest.id).where(
                PendingRequest.request_type == kind,
                PendingRequest.email == email,
                PendingRequest.created_at > since,
            )
        )
        is not None
    )


def waiting_query(
    mlist: MailingList,
    now: datetime,
    kinds: Iterable[RequestType] = MEMBERSHIP,
    owner: TokenOwner | None = None,
) -> Select[PendingRequest]:
    """The query of the live requests of ``kinds`` on a list (those waiting for ``owner``),
    oldest first (REST pages it in SQL)."""
    query = select(PendingRequest).where(
        PendingRequest.mailing_list_id == mlist.id,
        PendingRequest.expires_at > now,
        PendingRequest.request_type.in_(list(kinds)),
    )
    if owner is not None:
        query = query.where(PendingRequest.token_owner == owner)
    return query.order_by(PendingRequest.created_at, PendingRequest.id)


def waiting(
    session: Session,
    mlist: MailingList,
    now: datetime,
    kinds: Iterable[RequestType] = MEMBERSHIP,
    owner: TokenOwner | None = None,
) -> list[PendingRequest]:
    """The live requests of ``kinds`` on a list (those waiting for ``owner``), oldest
    first."""
    return list(session.scalars(waiting_query(mlist, now, kinds, owner)))


def count_waiting(
    session: Session,
    mlist: MailingList,
    now: datetime,
    kinds: Iterable[RequestType] = MEMBERSHIP,
    owner: TokenOwner | None = None,
) -> int:
    """How many requests :func:`waiting` would return."""
    query = waiting_query(mlist, now, kinds, owner).order_by(None).subquery()
    return int(session.scalar(select(func.count()).select_from(query)) or 0)


def expire(session: Session, now: datetime) -> int:
    """Remove every request that expired by ``now``; returns how many (the worker calls
    this every minute)."""
    result = session.execute(delete(PendingRequest).where(PendingRequest.expires_at <= now))
    return int(getattr(result, "rowcount", 0) or 0)
