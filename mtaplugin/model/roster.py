"""Rosters from a directory: a list's members, owners or moderators read from an LDAP
directory or an SQL query (:mod:`mtaplugin.roster_sources`)."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from sqlalchemy import Boolean, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from mtaplugin.enums import MemberRole
from mtaplugin.model.base import Base, UTCDateTime, enum_column, enum_with_default, utcnow


class RosterKind(StrEnum):
    ldap = "ldap"
    sql = "sql"


class RosterSource(Base):
    """Where one role of a list comes from, and how its last sync went.

    ``bind_password`` is a secret: REST, the web and the CLI never show it (only whether
    one is set), and no log or error text carries it.
    """

    __tablename__ = "roster_sources"
    __table_args__ = (UniqueConstraint("mailing_list_id", "role", name="uq_roster_sources_role"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    mailing_list_id: Mapped[int] = mapped_column(
        ForeignKey("mailing_lists.id", ondelete="CASCADE"), index=True
    )
    role: Mapped[MemberRole] = enum_with_default(MemberRole.member)
    kind: Mapped[RosterKind] = mapped_column(enum_column(RosterKind))
    #: ``ldap://host:389`` / ``ldaps://...``, or any SQLAlchemy URL (without its password)
    url: Mapped[str] = mapped_column(String(1024))
    #: LDAP: the DN to bind as ("" = anonymous); SQL: unused (the user is in the URL)
    bind_dn: Mapped[str] = mapped_column(String(1024), default="")
    bind_password: Mapped[str] = mapped_column(String(1024), default="")
    #: LDAP search: where to search and what (an LDAP filter)
    base_dn: Mapped[str] = mapped_column(String(1024), default="")
    ldap_filter: Mapped[str] = mapped_column(Text, default="")
    #: LDAP group: the group's DN; its ``member_attribute`` values are the members' DNs
    #: (or addresses), each read for ``mail_attribute``
    group_dn: Mapped[str] = mapped_column(String(1024), default="")
    member_attribute: Mapped[str] = mapped_column(String(255), default="member")
    #: the attribute holding the address (LDAP) and the display name ("" = none)
    mail_attribute: Mapped[str] = mapped_column(String(255), default="mail")
    name_attribute: Mapped[str] = mapped_column(String(255), default="")
    #: SQL: a SELECT whose first column is the address (a second one: the name)
    query: Mapped[str] = mapped_column(Text, default="")
    #: seconds one directory answer may take
    timeout: Mapped[int] = mapped_column(Integer, default=30)
    #: how often the scheduler syncs it (seconds; 0: only on demand)
    interval: Mapped[int] = mapped_column(Integer, default=3600)
    #: one sync removes at most the larger of these (more needs ``--force``)
    max_removals: Mapped[int] = mapped_column(Integer, default=10)
    max_removal_percent: Mapped[int] = mapped_column(Integer, default=10)
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    last_sync_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    #: "ok", "error", "refused" (over the removal bound, or an empty answer), "" = never
    last_result: Mapped[str] = mapped_column(String(16), default="")
    #: what the last sync did ("2 added, 1 removed") or why it failed
    last_message: Mapped[str] = mapped_column(Text, default="")
    last_added: Mapped[int] = mapped_column(Integer, default=0)
    last_removed: Mapped[int] = mapped_column(Integer, default=0)


class RosterSourceMember(Base):
    """A membership the source made: only these does a sync remove.  A member added by
    hand has no row here (also when the directory lists them), so no sync removes them;
    removing the member by any other means removes the row with it."""

    __tablename__ = "roster_source_members"

    id: Mapped[int] = mapped_column(primary_key=True)
    source_id: Mapped[int] = mapped_column(
        ForeignKey("roster_sources.id", ondelete="CASCADE"), index=True
    )
    member_id: Mapped[int] = mapped_column(
        ForeignKey("members.id", ondelete="CASCADE"), unique=True
    )
