"""An address across every list a caller administers (Sympa's long-asked "find and remove
everywhere"): find it, then remove it, ban it or change its moderation action on all of
those lists (or the ones named) in one action.

Who administers what is a :class:`Scope`: the site admin every list, a domain owner the
lists of their domains, a list owner their lists.  A list outside the scope is never read
nor touched, and naming one is answered as if it did not exist.  Each change goes through
the same code as one list's: removals through the unsubscription workflow (goodbye and
the owners' notice as each list says, an audit entry), bans through the ban store, all in
the caller's transaction: one failure, and nothing changed."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from sqlalchemy import ColumnElement, false, or_, select, true
from sqlalchemy.orm import Session

from mtaplugin.enums import Action, MemberRole
from mtaplugin.errors import InvalidInput, NotFound
from mtaplugin.i18n import _
from mtaplugin.manage import bans, members
from mtaplugin.manage.subscriptions import DEFAULTS, WorkflowSettings
from mtaplugin.manage.subscriptions.steps import audit
from mtaplugin.manage.subscriptions.unsubscribe import unsubscribe
from mtaplugin.model import Address, Ban, MailingList, Member
from mtaplugin.vocabulary.addresses import normalize_email


@dataclass(frozen=True)
class Scope:
    """The lists a caller administers."""

    is_admin: bool = False
    #: mail hosts of the domains they own
    domains: frozenset[str] = field(default_factory=frozenset)
    #: primary keys of the lists they own
    owns: frozenset[int] = field(default_factory=frozenset)

    @property
    def empty(self) -> bool:
        return not (self.is_admin or self.domains or self.owns)

    def where(self) -> ColumnElement[bool]:
        if self.is_admin:
            return true()
        if self.empty:
            return false()
        return or_(
            MailingList.mail_host.in_(sorted(self.domains)), MailingList.id.in_(sorted(self.owns))
        )

    def allows(self, mlist: MailingList) -> bool:
        return self.is_admin or mlist.mail_host in self.domains or mlist.id in self.owns


SITE_ADMIN = Scope(is_admin=True)


@dataclass
class Finding:
    """One administered list and what the address is there."""

    mlist: MailingList
    #: role → the member row (member, owner, moderator, nonmember)
    roles: dict[MemberRole, Member] = field(default_factory=dict)
    banned: bool = False

    @property
    def moderation_action(self) -> Action | None:
        for role in (MemberRole.member, MemberRole.nonmember):
            if role in self.roles:
                return self.roles[role].moderation_action
        return None


@dataclass(frozen=True)
class Outcome:
    """What one action did on one list."""

    list: str
    changed: bool
    #: why nothing changed ("not a member", "already banned"), else ""
    note: str = ""


@dataclass(frozen=True)
class Target:
    """What every change across lists takes: who acts, within which scope, on which
    address, on which of their lists, with which workflow settings (web, REST and the
    command line each build one)."""

    scope: Scope
    email: str
    actor: str
    #: the lists named (each must be in scope); None: the administered lists
    lists: Sequence[str] | None = None
    settings: WorkflowSettings = DEFAULTS

    @property
    def address(self) -> str:
        return normalize_email(self.email)


MODERATION_CHOICES = ("default", *(a.value for a in Action))


def administered(session: Session, scope: Scope) -> list[MailingList]:
    return list(
        session.scalars(
            select(MailingList)
            .where(scope.where())
            .order_by(MailingList.mail_host, MailingList.list_name)
        )
    )


def find(session: Session, scope: Scope, email: str) -> list[Finding]:
    """The lists in ``scope`` where ``email`` has a role or a ban, by list name."""
    addr = normalize_email(email)
    found: dict[int, Finding] = {}
    rows = session.execute(
        select(Member, MailingList)
        .join(Address, Address.id == Member.address_id)
        .join(MailingList, MailingList.id == Member.mailing_list_id)
        .where(Address.email == addr, scope.where())
    ).all()
    for member, mlist in rows:
        found.setdefault(mlist.id, Finding(mlist)).roles[member.role] = member
    banned = session.scalars(
        select(MailingList)
        .join(Ban, Ban.mailing_list_id == MailingList.id)
        .where(Ban.email == addr, scope.where())
    )
    for mlist in banned:
        found.setdefault(mlist.id, Finding(mlist)).banned = True
    return sorted(found.values(), key=lambda f: (f.mlist.mail_host, f.mlist.list_name))


def _chosen(session: Session, target: Target) -> list[MailingList]:
    """The lists named (each must be in scope), or every administered list."""
    scope = target.scope
    if not target.lists:
        return administered(session, scope)
    out: list[MailingList] = []
    for name in target.lists:
        key = name.strip().lower()
        local, at, host = key.partition("@")
        query = select(MailingList).where(scope.where())
        query = query.where(
            (MailingList.list_name == local) & (MailingList.mail_host == host)
            if at
            else MailingList.list_id == key
        )
        mlist = session.scalar(query)
        if mlist is None:
            raise NotFound("lists", _("no list you administer is named {name}").format(name=name))
        if mlist not in out:
            out.append(mlist)
    return out


def remove(
    session: Session,
    target: Target,
    *,
    send_goodbye_message: bool | None = None,
    send_admin_notice: bool | None = None,
) -> list[Outcome]:
    """Remove the address as a member of every administered list (or those named) where
    it is one, as an administrator's removal: confirmed and approved, goodbye and owners'
    notice as each list says (or the flags)."""
    addr = target.address
    data = {"send_goodbye_message": send_goodbye_message, "send_admin_notice": send_admin_notice}
    out: list[Outcome] = []
    lists = (
        _chosen(session, target)
        if target.lists
        else [f.mlist for f in find(session, target.scope, addr) if MemberRole.member in f.roles]
    )
    for mlist in lists:
        if not members.is_member(session, mlist, addr):
            if target.lists:
                out.append(Outcome(mlist.fqdn_listname, False, _("not a member")))
            continue
        _drop_pending_unsubscription(session, mlist, addr)
        unsubscribe(session, mlist, addr, data, target.actor, target.settings)
        out.append(Outcome(mlist.fqdn_listname, True))
    return out


def _drop_pending_unsubscription(session: Session, mlist: MailingList, email: str) -> None:
    """An administrator's removal settles a pending request to leave."""
    from mtaplugin.enums import RequestType
    from mtaplugin.model import PendingRequest

    for request in session.scalars(
        select(PendingRequest).where(
            PendingRequest.mailing_list_id == mlist.id,
            PendingRequest.email == email,
            PendingRequest.request_type == RequestType.unsubscription,
        )
    ):
        session.delete(request)
    session.flush()


def ban(session: Session, target: Target) -> list[Outcome]:
    """Ban the address from every administered list (or those named): it can no longer
    join or post there.  Its memberships stay (remove them too for that)."""
    addr = target.address
    settings = target.settings
    out: list[Outcome] = []
    for mlist in _chosen(session, target):
        if bans.find(session, mlist, addr) is not None:
            out.append(Outcome(mlist.fqdn_listname, False, _("already banned")))
            continue
        bans.add(session, mlist, addr, clock=settings.clock)
        audit(session, mlist, target.actor, "ban.add", addr, settings.now(), via="people")
        out.append(Outcome(mlist.fqdn_listname, True))
    return out


def parse_moderation(value: str) -> Action | None:
    """A moderation action by name; ``default`` is the list's default (None)."""
    text = value.strip().lower()
    if text == "default":
        return None
    try:
        return Action(text)
    except ValueError:
        raise InvalidInput.not_one_of(
            "moderation_action",
            _("unknown action {value!r}; choose one of: {choices}"),
            value,
            MODERATION_CHOICES,
        ) from None


def moderate(session: Session, target: Target, action: Action | None) -> list[Outcome]:
    """Set the moderation action of the address (as a member, and as a nonmember where it
    is one) on every administered list where it has one of those roles (or those named)."""
    addr = target.address
    chosen = {m.id: m for m in _chosen(session, target)}
    rows = _rows(session, addr, chosen, (MemberRole.member, MemberRole.nonmember))
    out: list[Outcome] = []
    for mlist in chosen.values():
        here = [m for m in rows if m.mailing_list_id == mlist.id]
        if not here:
            if target.lists:
                out.append(Outcome(mlist.fqdn_listname, False, _("not a member or nonmember")))
            continue
        changed = False
        for member in here:
            if member.moderation_action != action:
                member.moderation_action = action
                changed = True
        if changed:
            audit(
                session,
                mlist,
                target.actor,
                "member.moderation",
                addr,
                target.settings.now(),
                moderation_action=action.value if action else "default",
                via="people",
            )
        out.append(Outcome(mlist.fqdn_listname, changed, "" if changed else _("unchanged")))
    session.flush()
    return out


def _rows(
    session: Session, email: str, chosen: dict[int, MailingList], roles: Iterable[MemberRole]
) -> list[Member]:
    if not chosen:
        return []
    return list(
        session.scalars(
            select(Member)
            .join(Address, Address.id == Member.address_id)
            .where(
                Address.email == email,
                Member.role.in_(list(roles)),
                Member.mailing_list_id.in_(sorted(chosen)),
            )
        )
    )
