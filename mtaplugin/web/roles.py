"""Who is looking: site admin, domain admin, list owner, moderator, member, or nobody.

Every page asks the :class:`Viewer` before it shows a list: a list that a role does not
grant is answered 404, as if it did not exist (its name is not leaked either).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import ColumnElement, or_, select, true
from sqlalchemy.orm import Session

from mtaplugin.enums import MemberRole
from mtaplugin.i18n import N_
from mtaplugin.manage import users
from mtaplugin.model import Address, MailingList, User

#: a role's name as the pages show it (``_(role.value)``), marked for the catalogs
ROLE_NAMES = {
    MemberRole.member: N_("member"),
    MemberRole.owner: N_("owner"),
    MemberRole.moderator: N_("moderator"),
    MemberRole.nonmember: N_("nonmember"),
}


@dataclass(frozen=True)
class Viewer:
    user: User | None = None
    emails: frozenset[str] = field(default_factory=frozenset)
    is_admin: bool = False
    domains: frozenset[str] = field(default_factory=frozenset)
    owns: frozenset[int] = field(default_factory=frozenset)
    moderates: frozenset[int] = field(default_factory=frozenset)
    member_of: frozenset[int] = field(default_factory=frozenset)

    @property
    def logged_in(self) -> bool:
        return self.user is not None

    @property
    def name(self) -> str:
        """The preferred address (if verified), else the first verified one."""
        preferred = self.user.preferred_address if self.user is not None else None
        if preferred is not None and preferred.email in self.emails:
            return preferred.email
        return min(self.emails) if self.emails else ""

    def can_administer(self, mlist: MailingList) -> bool:
        return self.is_admin or mlist.mail_host in self.domains or mlist.id in self.owns

    def can_moderate(self, mlist: MailingList) -> bool:
        return self.can_administer(mlist) or mlist.id in self.moderates

    def can_see(self, mlist: MailingList) -> bool:
        return mlist.advertised or self.can_moderate(mlist) or mlist.id in self.member_of

    def can_admin_domain(self, mail_host: str) -> bool:
        return self.is_admin or mail_host in self.domains

    @property
    def is_staff(self) -> bool:
        return self.is_admin or bool(self.domains or self.owns or self.moderates)

    def managed_filter(self) -> ColumnElement[bool]:
        """Lists this viewer moderates or administers, as a WHERE clause."""
        if self.is_admin:
            return true()
        ids = sorted(self.owns | self.moderates)
        return or_(MailingList.mail_host.in_(sorted(self.domains)), MailingList.id.in_(ids))


def viewer_for(session: Session, user: User | None) -> Viewer:
    if user is None:
        return Viewer()
    # Only verified addresses count: an address added to an account but not verified yet
    # grants no role (it might be somebody else's).
    emails = frozenset(
        session.scalars(
            select(Address.email).where(
                Address.user_id == user.id, Address.verified_on.is_not(None)
            )
        )
    )
    roles = users.list_roles(session, user)
    return Viewer(
        user=user,
        emails=emails,
        is_admin=bool(user.is_server_owner),
        domains=users.owned_domains(session, user),
        owns=roles[MemberRole.owner],
        moderates=roles[MemberRole.moderator],
        member_of=roles[MemberRole.member],
    )
