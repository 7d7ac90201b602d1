"""Pending (un)subscription requests carried from Mailman 3 with their tokens
(:class:`~mtaplugin.importers.plan.PendingPlan`), so that a confirmation Mailman mailed
("reply to this message", ``confirm TOKEN`` to ``LIST-confirm+TOKEN@``, or Postorius's
link over this REST API) and a moderator's request still work after the move.

A request waiting for the person goes on as one made here would: their confirmation,
then the moderators' approval when the list's policy asks for it.  A request waiting for
a moderator waits for one here.  It expires when it would have in Mailman: its request
date plus Mailman's default lifetimes (3 days for the person, 180 days for a moderator,
the defaults of ``[tokens]`` here too); an already expired one is not carried.  A token
already here (a second run) is left as it is, and so is a request that is done here
(a subscription of a member, an unsubscription of someone who is not one).  Each token
carried is remembered in the audit log (its SHA-256, never the token): a request carried
once and then confirmed, approved or discarded here is not carried again by a later run.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin.enums import RequestType, TokenOwner
from mtaplugin.i18n import _
from mtaplugin.importers.plan import PendingPlan
from mtaplugin.manage import members
from mtaplugin.manage.pending import Lifetimes
from mtaplugin.manage.subscriptions.steps import Step, steps_for
from mtaplugin.model import AuditEntry, MailingList, PendingRequest

#: the audit log's action of a request carried from Mailman
CARRIED = "request.carried"


def _sha(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def carry(
    session: Session,
    mlist: MailingList,
    requests: list[PendingPlan],
    changes: list[str],
    notes: list[str],
    now: datetime | None = None,
) -> None:
    """Store each request of ``requests`` with its token, unless it is here already."""
    if not requests:
        return
    now = now or datetime.now(UTC)
    life = Lifetimes()
    here = set(
        session.scalars(
            select(PendingRequest.token).where(
                PendingRequest.token.in_([r.token for r in requests])
            )
        )
    )
    carried_before = {
        str((detail or {}).get("token_sha256", ""))
        for detail in session.scalars(
            select(AuditEntry.detail).where(
                AuditEntry.mailing_list_id == mlist.id, AuditEntry.action == CARRIED
            )
        )
    }
    expired = 0
    for request in requests:
        if request.token in here or _sha(request.token) in carried_before:
            continue
        owner = TokenOwner(request.owner)
        kind = (
            RequestType.unsubscription
            if request.kind == "unsubscription"
            else RequestType.subscription
        )
        member = members.is_member(session, mlist, request.email)
        if member == (kind is RequestType.subscription):
            continue  # done meanwhile (a rerun after the person confirmed here)
        since = request.requested_at or now
        expires = since + life.of(owner)
        if expires <= now:
            expired += 1
            continue
        policy = (
            mlist.unsubscription_policy
            if kind is RequestType.unsubscription
            else mlist.subscription_policy
        )
        if owner is TokenOwner.moderator:
            steps: tuple[Step, ...] = (Step.moderate,)
        else:
            steps = steps_for(policy, confirmed=False, approved=False, must_confirm=True)
        session.add(
            PendingRequest(
                token=request.token,
                request_type=kind,
                token_owner=owner,
                mailing_list_id=mlist.id,
                email=request.email,
                display_name=request.display_name[:255],
                step=steps[0].value,
                data={
                    "actor": "",
                    "steps": [s.value for s in steps],
                    "approved": Step.moderate not in steps,
                    "imported": True,
                },
                created_at=since,
                expires_at=expires,
            )
        )
        here.add(request.token)
        session.add(
            AuditEntry(
                actor="import",
                action=CARRIED,
                mailing_list_id=mlist.id,
                detail={"email": request.email, "token_sha256": _sha(request.token)},
                at=now,
            )
        )
        changes.append(
            (
                _("carried the pending unsubscription of {email} with its token")
                if kind is RequestType.unsubscription
                else _("carried the pending subscription of {email} with its token")
            ).format(email=request.email)
        )
    if expired:
        notes.append(
            _("{n} pending request(s) had expired in Mailman; not carried").format(n=expired)
        )
    session.flush()
