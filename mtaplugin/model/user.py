"""Users (people, with an optional password) and their email addresses."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import Boolean, ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column, relationship

from mtaplugin.model.base import Base, UTCDateTime, new_uid, utcnow
from mtaplugin.model.domain import domain_owners
from mtaplugin.model.preferences import PreferencesMixin

if TYPE_CHECKING:
    from mtaplugin.model.domain import Domain


class User(PreferencesMixin, Base):
    __tablename__ = "users"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[str] = mapped_column(String(32), unique=True, default=new_uid)
    display_name: Mapped[str] = mapped_column(String(255), default="")
    #: a passlib hash (argon2); never served by the API
    password: Mapped[str | None] = mapped_column(String(255), default=None)
    created_on: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    is_server_owner: Mapped[bool] = mapped_column(Boolean, default=False)
    # No foreign key: users and addresses would reference each other, a cycle that
    # PostgreSQL cannot create in one migration.  Code clears it when the address goes.
    preferred_address_id: Mapped[int | None] = mapped_column(Integer, default=None)

    addresses: Mapped[list[Address]] = relationship(
        back_populates="user", foreign_keys="Address.user_id"
    )
    preferred_address: Mapped[Address | None] = relationship(
        primaryjoin="foreign(User.preferred_address_id) == Address.id", viewonly=True
    )
    domains: Mapped[list[Domain]] = relationship(secondary=domain_owners, back_populates="owners")


class Address(PreferencesMixin, Base):
    __tablename__ = "addresses"

    id: Mapped[int] = mapped_column(primary_key=True)
    #: lower-cased; the key every lookup uses
    email: Mapped[str] = mapped_column(String(320), unique=True)
    #: as the person typed it
    original_email: Mapped[str] = mapped_column(String(320))
    display_name: Mapped[str] = mapped_column(String(255), default="")
    verified_on: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    registered_on: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    user_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), index=True, default=None
    )

    user: Mapped[User | None] = relationship(back_populates="addresses", foreign_keys=[user_id])

    def __repr__(self) -> str:
        return f"<Address {self.email}>"
