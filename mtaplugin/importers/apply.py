"""Make the database match a :class:`~mtaplugin.importers.mailman2.Plan`, saying what
changed.

The caller runs :func:`apply` in one transaction: an error leaves nothing half-imported,
and a dry run rolls the transaction back after reading the changes.  Every step compares
before it writes, so running the same import twice changes nothing the second time.
Members already on the list stay; members of the list that the plan does not name stop
the import unless ``merge`` says to keep them (importing a 2.1 list over another list of
the same name is more likely a mistake than a wish).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import Enum
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin import passwords
from mtaplugin.enums import MemberRole, TemplateScope
from mtaplugin.errors import InvalidInput, NotFound
from mtaplugin.i18n import _, available_languages
from mtaplugin.importers import carried_requests
from mtaplugin.importers.plan import MemberPlan, Plan
from mtaplugin.manage import bans, domains, header_matches, lists, members
from mtaplugin.model import Address, HeldMessage, MailingList, Member, Template, User
from mtaplugin.model.one_line import check_setting

#: the member fields an import sets, in the order they are reported
MEMBER_FIELDS = (
    "display_name",
    "delivery_mode",
    "delivery_status",
    "moderation_action",
    "acknowledge_posts",
    "receive_own_postings",
    "hide_address",
    "receive_list_copy",
    "receive_nonmatching_topics",
    "topics",
    "bounce_score",
    "last_bounce_received",
)


@dataclass
class Report:
    """What an import changed (or, in a dry run, would change)."""

    created_domain: bool = False
    created_list: bool = False
    changes: list[str] = field(default_factory=list)
    added: dict[MemberRole, int] = field(default_factory=dict)
    #: the addresses added, with their role (a dry run names them)
    added_emails: list[tuple[str, MemberRole]] = field(default_factory=list)
    updated_members: int = 0
    #: users given the member's Mailman 2.1 password (they had none here)
    passwords: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(
            self.created_domain
            or self.created_list
            or self.changes
            or any(self.added.values())
            or self.updated_members
            or self.passwords
        )


def _shown(value: Any) -> str:
    if isinstance(value, Enum):
        return str(value.value)
    if isinstance(value, timedelta):
        return f"{value.total_seconds() / 86400:g}d"
    if isinstance(value, datetime):
        return value.isoformat(timespec="seconds")
    return repr(value)


def _same(old: Any, new: Any) -> bool:
    if (
        isinstance(old, datetime)
        and isinstance(new, datetime)
        and (old.tzinfo is None or new.tzinfo is None)
    ):
        return old.replace(tzinfo=None) == new.replace(tzinfo=None)
    return bool(old == new)


def _settings(mlist: MailingList, plan: Plan, report: Report) -> None:
    for key, value in plan.settings.items():
        try:
            check_setting(key, value)
        except InvalidInput as exc:
            # a text that would go into header fields with a line break or a control
            # character in it: refused, as REST and the web refuse it
            report.notes.append(
                _("{key} = {value!r} refused here ({why}); not changed").format(
                    key=key, value=value, why=exc.problem
                )
            )
            continue
        old = getattr(mlist, key)
        if _same(old, value):
            continue
        setattr(mlist, key, value)
        report.changes.append(
            _("set {key}: {old} -> {new}").format(key=key, old=_shown(old), new=_shown(value))
        )


def _roster(session: Session, mlist: MailingList) -> dict[tuple[str, MemberRole], Member]:
    rows = session.execute(
        select(Address.email, Member)
        .join(Member, Member.address_id == Address.id)
        .where(Member.mailing_list_id == mlist.id)
    ).all()
    return {(email, m.role): m for email, m in rows}


def _refuse_others(plan: Plan, roster: dict[tuple[str, MemberRole], Member]) -> None:
    wanted = {(m.email, m.role) for m in plan.members}
    others = sorted(
        email
        for (email, role) in roster
        if role is MemberRole.member and (email, role) not in wanted
    )
    if others:
        shown = ", ".join(others[:3]) + (", ..." if len(others) > 3 else "")
        raise InvalidInput(
            "list",
            _(
                "{list} exists and has {n} members that are not in this configuration "
                "({shown}); nothing was imported. Import into a new list, or pass --merge "
                "to keep them"
            ).format(list=plan.fqdn_listname, n=len(others), shown=shown),
        )


def _member(
    session: Session,
    mlist: MailingList,
    wanted: MemberPlan,
    roster: dict[tuple[str, MemberRole], Member],
    report: Report,
) -> None:
    member = roster.get((wanted.email, wanted.role))
    if member is None:
        member = members.add(
            session,
            mlist,
            wanted.email,
            wanted.role,
            wanted.display_name,
            wanted.delivery_mode,
            wanted.moderation_action,
        )
        roster[(wanted.email, wanted.role)] = member
        report.added[wanted.role] = report.added.get(wanted.role, 0) + 1
        report.added_emails.append((wanted.email, wanted.role))
        fresh = True
    else:
        fresh = False
    changed = False
    for name in MEMBER_FIELDS:
        value = getattr(wanted, name)
        if not _same(getattr(member, name), value):
            setattr(member, name, value)
            changed = True
    if not _same(member.preferred_language, wanted.language):
        member.preferred_language = wanted.language
        changed = True
    if (
        wanted.subscription_mode is not None
        and member.subscription_mode != wanted.subscription_mode
    ):
        member.subscription_mode = wanted.subscription_mode
        changed = True
    if wanted.user_id is not None:
        user = session.scalar(select(User.id).where(User.user_id == wanted.user_id))
        if user is not None and member.user_id != user:
            member.user_id = user
            changed = True
    if changed and not fresh:
        report.updated_members += 1
    if wanted.password and _carry_password(session, member.address, wanted):
        report.passwords += 1


def _carry_password(session: Session, address: Address, wanted: MemberPlan) -> bool:
    """Give the user of the member's ``address`` (made when it has none) a hash of its
    Mailman 2.1 password, unless it has a password here already: one set here stays, and
    of a person's several 2.1 lists the first imported gives it.  Whether one was
    written."""
    user = address.user
    if user is not None and user.password:
        return False
    if user is None:
        user = User(display_name=wanted.display_name or address.display_name or "")
        session.add(user)
        session.flush()
        address.user_id = user.id
    user.password = passwords.carried_hash(wanted.password)
    return True


def _templates(session: Session, mlist: MailingList, plan: Plan, report: Report) -> None:
    for (name, language), text in plan.templates.items():
        row = session.scalar(
            select(Template).where(
                Template.scope == TemplateScope.list,
                Template.mailing_list_id == mlist.id,
                Template.name == name,
                Template.language == language,
            )
        )
        if row is None:
            session.add(
                Template(
                    scope=TemplateScope.list,
                    mailing_list_id=mlist.id,
                    name=name,
                    language=language,
                    text=text,
                )
            )
        elif row.text != text or row.uri:
            row.text, row.uri = text, ""
        else:
            continue
        report.changes.append(_("template {name}: set").format(name=name))
    if plan.template_uris:
        from mtaplugin.importers.mm3site import set_template_uri

        for name, wanted in plan.template_uris.items():
            set_template_uri(
                session,
                TemplateScope.list,
                name,
                wanted,
                report.changes,
                plan.fqdn_listname,
                mailing_list_id=mlist.id,
            )


def _held(session: Session, mlist: MailingList, plan: Plan, report: Report) -> None:
    """Held posts, each once (by Message-ID): released here as if held here."""
    if not plan.held:
        return
    waiting = set(
        session.scalars(
            select(HeldMessage.message_id).where(HeldMessage.mailing_list_id == mlist.id)
        )
    )
    for post in plan.held:
        if post.message_id in waiting:
            continue
        session.add(
            HeldMessage(
                mailing_list_id=mlist.id,
                message_id=post.message_id,
                sender=post.sender,
                subject=post.subject,
                reasons=[["import", post.reason]],
                envelope={"mail_from": post.sender, "recipients": [mlist.posting_address]},
                raw=post.raw,
                **({"hold_date": post.hold_date} if post.hold_date else {}),
            )
        )
        waiting.add(post.message_id)
        report.changes.append(
            _("held post from {sender}: {subject}").format(sender=post.sender, subject=post.subject)
        )


def apply(
    session: Session,
    plan: Plan,
    *,
    merge: bool = False,
    progress: Callable[[int], None] | None = None,
) -> Report:
    """Make the list of ``plan`` (creating its domain and the list when missing) what
    the plan says; ``progress`` is called with the number of members done since the
    last call."""
    report = Report(notes=list(plan.notes))
    mail_host = plan.fqdn_listname.split("@", 1)[1]
    try:
        domains.get(session, mail_host)
    except NotFound:
        domains.create(session, mail_host)
        report.created_domain = True
    try:
        mlist = lists.get(session, plan.fqdn_listname)
    except NotFound:
        mlist = lists.create(session, plan.fqdn_listname)
        report.created_list = True
    roster = _roster(session, mlist)
    if not merge and not report.created_list:
        _refuse_others(plan, roster)
    # No welcome or admin notices for the members an import adds: they are not joining.
    _settings(mlist, plan, report)
    language = plan.settings.get("preferred_language")
    if language and language not in available_languages():
        report.notes.append(
            _(
                "the list's language {language} has no catalog here: notices go out in "
                "the site's language until one is added (available: {available})"
            ).format(language=language, available=", ".join(available_languages()))
        )
    for ban in plan.bans:
        if bans.find(session, mlist, ban) is None:
            bans.add(session, mlist, ban)
            report.changes.append(_("banned {address}").format(address=ban))
    banned = {m.email for m in plan.members if bans.is_banned(session, mlist, m.email)}
    for email in sorted(banned):
        report.notes.append(_("{email} is banned: not imported").format(email=email))
    existing = {(h.header, h.pattern) for h in header_matches.all_matches(session, mlist)}
    for header, pattern, action in plan.header_matches:
        if (header, pattern) not in existing:
            header_matches.add(session, mlist, header, pattern, action)
            existing.add((header, pattern))
            report.changes.append(
                _("header match {header}: {pattern} -> {action}").format(
                    header=header, pattern=pattern, action=action.value if action else "default"
                )
            )
    _templates(session, mlist, plan, report)
    _held(session, mlist, plan, report)
    carried_requests.carry(session, mlist, plan.pending, report.changes, report.notes)
    done = 0
    for wanted in plan.members:
        if wanted.email not in banned:
            _member(session, mlist, wanted, roster, report)
        done += 1
        if progress is not None and done % 100 == 0:
            progress(100)
    if progress is not None and done % 100:
        progress(done % 100)
    session.flush()
    return report
