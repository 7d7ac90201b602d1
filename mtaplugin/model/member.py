"""Members: an address (or a user) holding a role on a list."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import JSON, Boolean, ForeignKey, Index, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship, validates

from mtaplugin.enums import Action, DeliveryStatus, MemberRole, SubscriptionMode
from mtaplugin.model.base import Base, UTCDateTime, enum_column, enum_with_default, new_uid, utcnow
from mtaplugin.model.preferences import PreferencesMixin

if TYPE_CHECKING:
    from mtaplugin.model.mailinglist import MailingList
    from mtaplugin.model.user import Address, User


#: the member-level delivery statuses that deliver (None: the address's, user's or
#: site's preference, enabled unless one of those says otherwise)
_DELIVERING = (None, DeliveryStatus.enabled)


class Member(PreferencesMixin, Base):
    __tablename__ = "members"
    __table_args__ = (
        UniqueConstraint("mailing_list_id", "role", "address_id", name="uq_members_role"),
        # Hot path: "the regular-delivery recipients of a list" and "is this sender a
        # member" both start from (list, role).
        # id last: a roster page in member order is a walk of this index (REST paging)
        Index("ix_members_list_role", "mailing_list_id", "role", "id"),
        Index("ix_members_address", "address_id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    member_id: Mapped[str] = mapped_column(String(32), unique=True, default=new_uid)
    mailing_list_id: Mapped[int] = mapped_column(ForeignKey("mailing_lists.id", ondelete="CASCADE"))
    role: Mapped[MemberRole] = enum_with_default(MemberRole.member)
    #: subscribed as this address (subscription_mode as_address) ...
    address_id: Mapped[int] = mapped_column(ForeignKey("addresses.id", ondelete="CASCADE"))
    #: ... or as this user, following the user's preferred address (as_user)
    user_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), default=None, index=True
    )
    subscription_mode: Mapped[SubscriptionMode] = enum_with_default(SubscriptionMode.as_address)
    display_name: Mapped[str] = mapped_column(String(255), default="")
    #: None = the list's default_member_action / default_nonmember_action
    moderation_action: Mapped[Action | None] = mapped_column(enum_column(Action), default=None)
    bounce_score: Mapped[int] = mapped_column(Integer, default=0)
    last_bounce_received: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    last_warning_sent: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    total_warnings_sent: Mapped[int] = mapped_column(Integer, default=0)
    #: the list's topics this member wants (Mailman 2.1); [] = every post
    topics: Mapped[list[str]] = mapped_column(JSON, default=list)
    #: with topics chosen, also the posts that match no topic (MM2.1's
    #: ReceiveNonmatchingTopics, off by default)
    receive_nonmatching_topics: Mapped[bool] = mapped_column(Boolean, default=False)
    #: secret for the per-member RFC 8058 one-click unsubscribe URL
    unsubscribe_token: Mapped[str | None] = mapped_column(String(64), unique=True, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    mailing_list: Mapped[MailingList] = relationship(back_populates="members")
    address: Mapped[Address] = relationship()
    user: Mapped[User | None] = relationship()

    @validates("delivery_status")
    def _delivery_status_changes(
        self, _key: str, status: DeliveryStatus | None
    ) -> DeliveryStatus | None:
        """The one place a member's delivery status changes, whoever changes it (the web
        page, ``set delivery on`` by mail, REST's preferences, the CLI, bounce processing):
        a member whose delivery is switched back on starts over, with no bounce score and
        no warnings (``last_bounce_received`` stays, for the record), as in Mailman."""
        if status in _DELIVERING and self.delivery_status not in _DELIVERING:
            self.bounce_score = 0
            self.total_warnings_sent = 0
            self.last_warning_sent = None
        return status

    def __repr__(self) -> str:
        return f"<Member {self.role} {self.address_id} on {self.mailing_list_id}>"
