"""Leaving a list: one member (:func:`request_unsubscription`) or many at once
(:func:`mass_unsubscribe`, the web admin's mass removal and REST's roster DELETE)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin.enums import MemberRole, RequestType
from mtaplugin.errors import InvalidInput
from mtaplugin.lists.language import language_of
from mtaplugin.manage import members, pending
from mtaplugin.manage.subscriptions.steps import (
    DEFAULTS,
    AlreadyPending,
    Announcer,
    NotAMember,
    Status,
    WorkflowSettings,
    announce,
    ask,
    audit,
    audit_many,
    mass,
    notify_staff_of,
    request_data,
    steps_for,
)
from mtaplugin.model import Address, MailingList, Member
from mtaplugin.notices.templates import overrides_kept
from mtaplugin.vocabulary.addresses import normalize_email


def request_unsubscription(
    session: Session,
    mlist: MailingList,
    email: str,
    *,
    pre_confirmed: bool = False,
    pre_approved: bool = False,
    must_confirm: bool = False,
    send_goodbye_message: bool | None = None,
    send_admin_notice: bool | None = None,
    language: str | None = None,
    confirm_url: str = "",
    actor: str = "",
    settings: WorkflowSettings = DEFAULTS,
) -> tuple[Status, str | None]:
    """Start (or finish) removing a member, as the list's unsubscription_policy says.

    The flags mean what they mean for :func:`~.subscribe.request_subscription`
    (``send_goodbye_message`` overrides the list's ``send_goodbye_message``).  Raises
    :class:`~.steps.NotAMember` or :class:`~.steps.AlreadyPending`; nothing changes then.
    """
    email = normalize_email(email)
    if not members.is_member(session, mlist, email):
        raise NotAMember(email, mlist)
    if pending.for_email(session, mlist, email, RequestType.unsubscription, settings.now()):
        raise AlreadyPending(email, RequestType.unsubscription)
    steps = steps_for(
        mlist.unsubscription_policy,
        confirmed=pre_confirmed,
        approved=pre_approved,
        must_confirm=must_confirm,
    )
    data = request_data(
        actor,
        language,
        confirm_url,
        send_goodbye_message=send_goodbye_message,
        send_admin_notice=send_admin_notice,
    )
    if steps:
        return ask(session, mlist, email, RequestType.unsubscription, steps, data, settings)
    unsubscribe(session, mlist, email, data, actor or email, settings)
    return Status.unsubscribed, None


def unsubscribe(
    session: Session,
    mlist: MailingList,
    email: str,
    data: dict[str, Any],
    actor: str,
    settings: WorkflowSettings,
) -> None:
    """The last step: the member row goes; the goodbye and the owners' notice, as the list
    (or the request's flags) say."""
    language = language_of(session, mlist, email)
    members.remove(session, mlist, email, MemberRole.member)
    audit(session, mlist, actor, "member.unsubscribe", email, settings.now())
    announce(session, mlist, email, "unsubscribe", data, settings, language)


def mass_unsubscribe(
    session: Session,
    mlist: MailingList,
    emails: Sequence[str],
    *,
    send_goodbye_message: bool | None = None,
    send_admin_notice: bool | None = None,
    actor: str = "",
    settings: WorkflowSettings = DEFAULTS,
    batch: str = "",
) -> dict[str, bool]:
    """Remove these members at once, as an administrator does (confirmed and approved),
    in batches; each one removed gets the goodbye one unsubscription gives, and the owners
    one notice naming them all.  Returns, for each address as given, whether it was a
    member (and is not any more).  ``batch``: as for
    :func:`~.subscribe.mass_subscribe`."""
    goodbyes = Announcer(
        session,
        mlist,
        "unsubscribe",
        {"send_goodbye_message": send_goodbye_message},
        settings.clock,
    )
    done: dict[str, bool] = {}
    removed: list[str] = []
    with overrides_kept():  # the list's goodbye text looked up once, not per member
        for start in range(0, len(emails), members.BATCH):
            given = {e: _normal(e) for e in emails[start : start + members.BATCH]}
            rows = session.execute(
                select(Member, Address.email)
                .join(Address, Address.id == Member.address_id)
                .where(
                    Member.mailing_list_id == mlist.id,
                    Member.role == MemberRole.member,
                    Address.email.in_({e for e in given.values() if e}),
                )
            ).all()
            found = {email: member for member, email in rows}
            gone = list(found)
            languages = goodbyes.languages(gone)  # before the membership's own goes
            for member in found.values():
                session.delete(member)
            session.flush()
            audit_many(
                session, mlist, actor, "member.unsubscribe", gone, settings.now(), **mass(batch)
            )
            goodbyes.send(gone, languages)
            removed.extend(gone)
            done.update({raw: bool(e) and e in found for raw, e in given.items()})
    notify_staff_of(session, mlist, settings, removed, "unsubscribe", send_admin_notice)
    return done


def _normal(email: str) -> str:
    try:
        return normalize_email(email)
    except InvalidInput:
        return ""
