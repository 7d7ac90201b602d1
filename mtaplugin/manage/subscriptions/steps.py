"""What the (un)subscription workflows share: the statuses, the step table per policy,
the workflow's settings, its refusals, and how a waiting step is stored and announced."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, TypedDict, Unpack

from sqlalchemy import insert
from sqlalchemy.orm import Session

from mtaplugin import outbox
from mtaplugin.clock import Clock, system_clock
from mtaplugin.config import ArchiversSettings, Settings
from mtaplugin.enums import RequestType, SubscriptionPolicy, TokenOwner
from mtaplugin.errors import AlreadyExists, InvalidInput, NotFound
from mtaplugin.i18n import _
from mtaplugin.lists.language import language_of, languages_of
from mtaplugin.manage import lists, pending
from mtaplugin.model import AuditEntry, MailingList
from mtaplugin.notices import membership
from mtaplugin.notices.member_batch import MemberNotices


class Status(StrEnum):
    subscribed = "subscribed"
    unsubscribed = "unsubscribed"
    #: a confirmation was sent; the token is the subscriber's
    pending_confirmation = "pending_confirmation"
    #: waiting for a moderator; the token is the moderator's
    pending_approval = "pending_approval"
    refused = "refused"
    discarded = "discarded"
    deferred = "deferred"


class Step(StrEnum):
    """A step that waits (``PendingRequest.step``)."""

    #: the person shows that the address is theirs (a reply, ``confirm TOKEN``, the web link)
    confirm = "confirm"
    #: a moderator accepts, rejects, discards or defers
    moderate = "moderate"


#: the steps each subscription_policy / unsubscription_policy asks for, in order
STEPS: Mapping[SubscriptionPolicy, tuple[Step, ...]] = {
    SubscriptionPolicy.open: (),
    SubscriptionPolicy.confirm: (Step.confirm,),
    SubscriptionPolicy.moderate: (Step.moderate,),
    SubscriptionPolicy.confirm_then_moderate: (Step.confirm, Step.moderate),
}


def steps_for(
    policy: SubscriptionPolicy, *, confirmed: bool, approved: bool, must_confirm: bool = False
) -> tuple[Step, ...]:
    """The steps a request still needs: the policy's, less those the caller vouches for
    (``confirmed``: Mailman's pre_confirmed; ``approved``: pre_approved), with a
    confirmation first when the requester has not shown the address is theirs
    (``must_confirm``, whatever ``confirmed`` says)."""
    steps = [
        step
        for step in STEPS[policy]
        if not (step is Step.confirm and confirmed) and not (step is Step.moderate and approved)
    ]
    if must_confirm and Step.confirm not in steps:
        steps.insert(0, Step.confirm)
    return tuple(steps)


def steps_left(data: Mapping[str, Any], done: Step) -> tuple[Step, ...]:
    """The steps after ``done`` of a stored request (older rows only say ``approved``)."""
    stored = data.get("steps")
    if stored is None:
        stored = [] if data.get("approved") else [Step.moderate.value]
        return tuple(Step(s) for s in stored if s != done.value)
    steps = [Step(s) for s in stored]
    return tuple(steps[steps.index(done) + 1 :] if done in steps else steps)


@dataclass(frozen=True)
class WorkflowSettings:
    #: how long a subscriber's token is valid (Mailman's pending_request_life)
    pending_life: timedelta = timedelta(days=3)
    #: how long a moderator's token is valid (Mailman's moderator_request_life)
    moderator_life: timedelta = timedelta(days=180)
    #: gets the moderators' notices of a list that has no owner or moderator
    site_owner: str = ""
    #: the time (tests pass a ManualClock)
    clock: Clock = field(default=system_clock, compare=False)
    #: signs members' one-click unsubscribe links (``site.secret_key``; "" = none), for
    #: what a workflow sends to members (a released post filling a digest)
    secret_key: str = field(default="", repr=False)
    #: the site's external archivers ([archivers]), which a released post is handed to
    archivers: ArchiversSettings = field(default_factory=ArchiversSettings, compare=False)

    @classmethod
    def from_settings(cls, settings: Settings, clock: Clock = system_clock) -> WorkflowSettings:
        lives = pending.Lifetimes.from_settings(settings)
        return cls(
            pending_life=lives.subscriber,
            moderator_life=lives.moderator,
            site_owner=settings.site.site_owner,
            clock=clock,
            secret_key=settings.site.secret_key,
            archivers=settings.archivers,
        )

    def life(self, step: Step) -> timedelta:
        return self.moderator_life if step is Step.moderate else self.pending_life

    def now(self) -> datetime:
        return self.clock()


DEFAULTS = WorkflowSettings()


# --- refusals: distinct types, so that REST can answer in Mailman's own words ------------
class Banned(InvalidInput):
    def __init__(self, email: str, mlist: MailingList) -> None:
        super().__init__(
            "email",
            _("{email} is banned from {list}").format(email=email, list=mlist.fqdn_listname),
        )


class AlreadyMember(AlreadyExists):
    def __init__(self, email: str, mlist: MailingList) -> None:
        super().__init__(
            "email",
            _("{email} is already a member of {list}").format(
                email=email, list=mlist.fqdn_listname
            ),
        )


class AlreadyPending(AlreadyExists):
    def __init__(self, email: str, kind: RequestType) -> None:
        text = (
            _("a subscription request for {email} is already pending")
            if kind is RequestType.subscription
            else _("an unsubscription request for {email} is already pending")
        )
        super().__init__("email", text.format(email=email))


class NotAMember(NotFound):
    def __init__(self, email: str, mlist: MailingList) -> None:
        super().__init__(
            "email",
            _("{email} is not a member of {list}").format(email=email, list=mlist.fqdn_listname),
        )


# --- what every step does -----------------------------------------------------------------
def audit(
    session: Session,
    mlist: MailingList,
    actor: str,
    action: str,
    email: str,
    now: datetime,
    **extra: Any,
) -> None:
    """What ``actor`` did to ``email`` on ``mlist``, in the audit log, dated ``now``."""
    session.add(
        AuditEntry(
            actor=actor or email,
            action=action,
            mailing_list_id=mlist.id,
            at=now,
            detail={"email": email, **extra},
        )
    )


def mass(batch: str) -> dict[str, str]:
    """The audit details of a mass (un)subscription (a chunk of ``batch``, if named)."""
    return {"via": "mass", "batch": batch} if batch else {"via": "mass"}


def audit_many(
    session: Session,
    mlist: MailingList,
    actor: str,
    action: str,
    emails: Sequence[str],
    now: datetime,
    **extra: Any,
) -> None:
    """:func:`audit` for each of ``emails``, in one statement."""
    if emails:
        session.execute(
            insert(AuditEntry),
            [
                {
                    "actor": actor or email,
                    "action": action,
                    "mailing_list_id": mlist.id,
                    "at": now,
                    "detail": {"email": email, **extra},
                }
                for email in emails
            ],
        )


def notify_staff(
    session: Session, mlist: MailingList, settings: WorkflowSettings, raw: bytes
) -> None:
    outbox.list_notice(
        session, mlist, lists.staff(session, mlist, settings.site_owner), raw, settings.now()
    )


def notify_staff_of(
    session: Session,
    mlist: MailingList,
    settings: WorkflowSettings,
    emails: Sequence[str],
    kind: str,
    send_admin_notice: bool | None,
) -> None:
    """The owners' notice of a mass (un)subscription, if ``send_admin_notice`` (None: the
    list's ``admin_notify_mchanges``) says so: one for the whole batch (one address: the
    usual notice)."""
    if not chosen(send_admin_notice, mlist.admin_notify_mchanges):
        return
    if len(emails) == 1:
        raw = membership.membership_change(session, mlist, emails[0], kind)
    elif emails:
        raw = membership.membership_changes(mlist, emails, kind)
    else:
        return
    notify_staff(session, mlist, settings, raw)


class RequestFlags(TypedDict, total=False):
    """The choices a request carries to its later steps (None: as the list says)."""

    delivery_mode: str | None
    send_welcome_message: bool | None
    send_goodbye_message: bool | None
    send_admin_notice: bool | None


def request_data(
    actor: str, language: str | None, confirm_url: str, **flags: Unpack[RequestFlags]
) -> dict[str, Any]:
    """What a request keeps for its later steps (the pending request's ``data``): the notice
    flags and the delivery mode (``flags``), the language the person asked for, who asked,
    and the web page's confirmation link, if any (:func:`ask` adds the token to it)."""
    data: dict[str, Any] = {**flags, "language": language, "actor": actor}
    if confirm_url:
        data["confirm_url"] = confirm_url
    return data


def ask(
    session: Session,
    mlist: MailingList,
    email: str,
    kind: RequestType,
    steps: tuple[Step, ...],
    data: dict[str, Any],
    settings: WorkflowSettings,
    display_name: str = "",
) -> tuple[Status, str]:
    """Store the first of ``steps`` and send its notice: the confirmation to the person,
    or the request to the moderators."""
    step = steps[0]
    data = {**data, "steps": [s.value for s in steps], "approved": Step.moderate not in steps}
    owner = TokenOwner.moderator if step is Step.moderate else TokenOwner.subscriber
    request = pending.create(
        session,
        kind,
        email,
        step=step.value,
        owner=owner,
        life=settings.life(step),
        now=settings.now(),
        mailing_list_id=mlist.id,
        data=data,
        display_name=display_name,
    )
    verb = "unsubscribe" if kind is RequestType.unsubscription else "subscribe"
    if step is Step.confirm:
        language = language_of(session, mlist, email, data.get("language"))
        link = f"{data['confirm_url']}{request.token}" if data.get("confirm_url") else ""
        notice = "invite" if data.get("invitation") else verb
        raw = membership.confirmation(
            session, mlist, email, request.token, request.expires_at, language, notice, link=link
        )
        outbox.list_notice(session, mlist, [email], raw, settings.now())
        return Status.pending_confirmation, request.token
    notify_staff(
        session,
        mlist,
        settings,
        membership.moderator_request(session, mlist, email, request.token, verb),
    )
    return Status.pending_approval, request.token


def chosen(value: object, default: bool) -> bool:
    """A notice flag the caller may set (True/False) or leave to the list (None)."""
    return default if value is None else bool(value)


def _own_notice(
    mlist: MailingList, change: str, data: Mapping[str, Any]
) -> membership.MemberNotice | None:
    """The notice a done ``change`` sends the person ("subscribe": the welcome;
    "unsubscribe": the goodbye), if ``data``'s flag (else the list's) says it goes."""
    welcome = change == "subscribe"
    flag = "send_welcome_message" if welcome else "send_goodbye_message"
    if not chosen(data.get(flag), getattr(mlist, flag)):
        return None
    return membership.welcome if welcome else membership.goodbye


def announce(
    session: Session,
    mlist: MailingList,
    email: str,
    change: str,
    data: Mapping[str, Any],
    settings: WorkflowSettings,
    language: str | None = None,
    owners: bool = True,
) -> None:
    """The notice of a done ``change`` to ``email`` ("subscribe": the welcome;
    "unsubscribe": the goodbye) in ``language`` (or the member's) and (``owners``) the
    owners' notice, as the list or ``data`` say."""
    notice = _own_notice(mlist, change, data)
    if notice is not None:
        if language is None:
            language = language_of(session, mlist, email, data.get("language"))
        raw = notice(session, mlist, email, language)
        outbox.list_notice(session, mlist, [email], raw, settings.now())
    if owners and chosen(data.get("send_admin_notice"), mlist.admin_notify_mchanges):
        raw = membership.membership_change(session, mlist, email, change)
        notify_staff(session, mlist, settings, raw)


class Announcer:
    """The welcomes (``change`` "subscribe") or goodbyes ("unsubscribe") of a mass
    (un)subscription, one batch of members at a time: each member's own notice, as
    :func:`announce` sends it (without the owners' one), made once per language
    (:class:`~mtaplugin.notices.member_batch.MemberNotices`) and queued in one statement
    per batch, in the caller's transaction."""

    def __init__(
        self,
        session: Session,
        mlist: MailingList,
        change: str,
        data: Mapping[str, Any],
        clock: Clock,
    ) -> None:
        notice = _own_notice(mlist, change, data)
        self.session = session
        self.mlist = mlist
        self.clock = clock
        self.notices = MemberNotices(session, mlist, notice) if notice is not None else None

    def languages(self, emails: Sequence[str]) -> dict[str, str]:
        """What each of ``emails`` reads (ask before a goodbye: the membership's own
        preference goes with it)."""
        return languages_of(self.session, self.mlist, emails) if self.notices else {}

    def send(self, emails: Sequence[str], languages: Mapping[str, str] | None = None) -> None:
        """Each of ``emails`` gets the notice, in ``languages`` (None: as they read now)."""
        if self.notices is None or not emails:
            return
        if languages is None:
            languages = self.languages(emails)
        made = [([email], self.notices.raw(email, languages[email])) for email in emails]
        outbox.enqueue_many(
            self.session,
            self.mlist.bounces_address,
            made,
            "notice",
            self.mlist.id,
            now=self.clock(),
        )
