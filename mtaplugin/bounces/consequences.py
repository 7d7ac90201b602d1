"""What bounces do to a member, in the caller's transaction: the probe, disabled delivery,
the warnings and the removal, each with the notices the list asks for.

Everything leaves through the outbox with the list's ``-bounces`` address as the envelope
sender (a probe with its VERP token address: :func:`mtaplugin.bounces.verp.encode_token`),
so that a bounce of a notice comes back to bounce processing, not to a person.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete
from sqlalchemy.orm import Session

from mtaplugin import outbox
from mtaplugin.bounces import verp
from mtaplugin.enums import DeliveryStatus, MemberRole, RequestType, TokenOwner
from mtaplugin.lists.language import language_of
from mtaplugin.manage import lists, pending
from mtaplugin.manage.subscriptions.steps import WorkflowSettings, audit
from mtaplugin.manage.subscriptions.unsubscribe import unsubscribe
from mtaplugin.model import MailingList, Member, PendingRequest
from mtaplugin.notices import bounce_scores

#: who bounce processing is, in the audit log
ACTOR = "bounces"


@dataclass(frozen=True)
class Affected:
    """The member (``email``) of ``mlist`` bounces act on, in ``session``'s transaction at
    ``now`` (the run's clock), with the workflow settings of the run."""

    session: Session
    mlist: MailingList
    member: Member
    email: str
    now: datetime
    workflow: WorkflowSettings


def owners(session: Session, mlist: MailingList, site_owner: str = "") -> list[str]:
    """The list's owners (the site owner when it has none): who hear of bounces."""
    return lists.holders(session, mlist, (MemberRole.owner,), site_owner)


def tell_owners(who: Affected, raw: bytes) -> None:
    """The owners' notice ``raw`` about ``who``, through the outbox."""
    to = owners(who.session, who.mlist, who.workflow.site_owner)
    outbox.list_notice(who.session, who.mlist, to, raw, who.now)


def probe(who: Affected) -> bool:
    """Send ``who`` a probe whose return path carries a token (a ``probe`` request on the
    list, alive for ``bounce_info_stale_after``); False when one is already out."""
    session, mlist, email, now = who.session, who.mlist, who.email, who.now
    if pending.for_email(session, mlist, email, RequestType.probe, now) is not None:
        return False
    request = pending.create(
        session,
        RequestType.probe,
        email,
        step="probe",
        owner=TokenOwner.no_one,
        life=mlist.bounce_info_stale_after,
        now=now,
        mailing_list_id=mlist.id,
        data={"member_id": who.member.member_id},
    )
    language = language_of(session, mlist, email)
    raw = bounce_scores.probe(session, mlist, email, language, request.token)
    token_address = verp.encode_token(mlist.bounces_address, request.token)
    outbox.list_notice(session, mlist, [email], raw, now, token_address)
    audit(session, mlist, ACTOR, "member.bounce_probe", email, now, score=who.member.bounce_score)
    return True


def disable(who: Affected) -> None:
    """Delivery off (``by_bounces``), the owners told (``bounce_notify_owner_on_disable``)
    and the member's first warning; a list that sends no warnings removes them at once."""
    session, mlist, member, email = who.session, who.mlist, who.member, who.email
    _forget_probes(session, mlist, email)
    if mlist.bounce_you_are_disabled_warnings <= 0:
        remove(who)
        return
    member.delivery_status = DeliveryStatus.by_bounces
    audit(
        session, mlist, ACTOR, "member.delivery_disabled", email, who.now, score=member.bounce_score
    )
    if mlist.bounce_notify_owner_on_disable:
        tell_owners(who, bounce_scores.disable(session, mlist, email, member.bounce_score))
    warn(who)


def warn(who: Affected) -> None:
    """``list:user:notice:warning`` to the member, counted on the member row."""
    session, mlist, email = who.session, who.mlist, who.email
    raw = bounce_scores.warning(session, mlist, email, language_of(session, mlist, email))
    outbox.list_notice(session, mlist, [email], raw, who.now)
    who.member.total_warnings_sent += 1
    who.member.last_warning_sent = who.now


def remove(who: Affected) -> None:
    """Unsubscribe the member the usual way (roster, audit), with no goodbye (it would
    bounce) and, instead of the membership-change notice, ``list:admin:notice:removal``
    (``bounce_notify_owner_on_removal``)."""
    session, mlist, email = who.session, who.mlist, who.email
    score = who.member.bounce_score
    data = {"send_goodbye_message": False, "send_admin_notice": False}
    unsubscribe(session, mlist, email, data, ACTOR, who.workflow)
    _forget_probes(session, mlist, email)
    if mlist.bounce_notify_owner_on_removal:
        tell_owners(who, bounce_scores.removal(session, mlist, email, score))


def _forget_probes(session: Session, mlist: MailingList, email: str) -> None:
    session.execute(
        delete(PendingRequest).where(
            PendingRequest.mailing_list_id == mlist.id,
            PendingRequest.email == email,
            PendingRequest.request_type == RequestType.probe,
        )
    )
