"""Domains (mail hosts) and their owners, the domain admins."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import Column, ForeignKey, String, Table, Text
from sqlalchemy.orm import Mapped, mapped_column, relationship

from mtaplugin.model.base import Base, UTCDateTime, utcnow

if TYPE_CHECKING:
    from mtaplugin.model.dkim import DkimKey
    from mtaplugin.model.mailinglist import MailingList
    from mtaplugin.model.user import User

domain_owners = Table(
    "domain_owners",
    Base.metadata,
    Column("domain_id", ForeignKey("domains.id", ondelete="CASCADE"), primary_key=True),
    Column("user_id", ForeignKey("users.id", ondelete="CASCADE"), primary_key=True),
)


class Domain(Base):
    __tablename__ = "domains"

    id: Mapped[int] = mapped_column(primary_key=True)
    #: the domain part of every list address in this domain, lower case
    mail_host: Mapped[str] = mapped_column(String(255), unique=True)
    description: Mapped[str] = mapped_column(Text, default="")
    #: another domain whose list addresses map onto this one (Mailman's alias_domain)
    alias_domain: Mapped[str | None] = mapped_column(String(255), unique=True, default=None)
    #: where the web pages of this domain live (for links in notices and List-* headers)
    base_url: Mapped[str] = mapped_column(String(255), default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    owners: Mapped[list[User]] = relationship(secondary=domain_owners, back_populates="domains")
    lists: Mapped[list[MailingList]] = relationship(
        back_populates="domain", cascade="all, delete-orphan", passive_deletes=True
    )
    dkim_keys: Mapped[list[DkimKey]] = relationship(
        back_populates="domain", cascade="all, delete-orphan", passive_deletes=True
    )

    def __repr__(self) -> str:
        return f"<Domain {self.mail_host}>"
