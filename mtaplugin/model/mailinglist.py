"""Mailing lists and every list setting, with Mailman 3's names (reference §4 and the REST
config resource).  Defaults are those of Mailman's ``legacy-default`` style unless a comment
says otherwise and why.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    JSON,
    Boolean,
    ForeignKey,
    Integer,
    Interval,
    String,
    Text,
    UniqueConstraint,
    event,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from mtaplugin.enums import (
    Action,
    ArchivePolicy,
    ArchiveRenderingMode,
    DigestFrequency,
    DMARCMitigateAction,
    FilterAction,
    NewsgroupModeration,
    Personalization,
    ReplyToMunging,
    ResponseAction,
    RosterVisibility,
    SubscriptionPolicy,
    UnrecognizedBounceDisposition,
)
from mtaplugin.list_addresses import ListAddresses
from mtaplugin.model.base import Base, UTCDateTime, enum_with_default, utcnow

if TYPE_CHECKING:
    from mtaplugin.model.domain import Domain
    from mtaplugin.model.member import Member


def _list(default: list[Any] | None = None) -> Any:
    return mapped_column(JSON, default=lambda: list(default or []))


class MailingList(ListAddresses, Base):
    __tablename__ = "mailing_lists"
    # Hot path: resolving ``list_name@mail_host`` at RCPT uses this unique index.
    __table_args__ = (UniqueConstraint("mail_host", "list_name", name="uq_mailing_lists_address"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    list_name: Mapped[str] = mapped_column(String(64))
    mail_host: Mapped[str] = mapped_column(
        ForeignKey("domains.mail_host", ondelete="CASCADE", onupdate="CASCADE"), index=True
    )
    #: RFC 2919 list identifier, ``list_name.mail_host``
    list_id: Mapped[str] = mapped_column(String(320), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    style_name: Mapped[str] = mapped_column(String(64), default="legacy-default")

    # --- identity -----------------------------------------------------------------------
    display_name: Mapped[str] = mapped_column(String(255), default="")
    description: Mapped[str] = mapped_column(String(255), default="")
    info: Mapped[str] = mapped_column(Text, default="")
    advertised: Mapped[bool] = mapped_column(Boolean, default=True)
    preferred_language: Mapped[str] = mapped_column(String(16), default="en")
    member_roster_visibility: Mapped[RosterVisibility] = enum_with_default(
        RosterVisibility.moderators
    )

    # --- counters (read-only over REST) -------------------------------------------------
    post_id: Mapped[int] = mapped_column(Integer, default=1)
    volume: Mapped[int] = mapped_column(Integer, default=1)
    next_digest_number: Mapped[int] = mapped_column(Integer, default=1)
    last_post_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    digest_last_sent_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    #: bumped by database triggers (migration 0002) whenever the list's settings, members,
    #: their addresses or users, bans or header matches change -- by any writer, even
    #: hand-written SQL.  The SMTP front ends cache a list's snapshot until it moves.
    generation: Mapped[int] = mapped_column(Integer, default=0, server_default="0")

    # --- moderation ---------------------------------------------------------------------
    default_member_action: Mapped[Action] = enum_with_default(Action.defer)
    default_nonmember_action: Mapped[Action] = enum_with_default(Action.hold)
    accept_these_nonmembers: Mapped[list[str]] = _list()
    hold_these_nonmembers: Mapped[list[str]] = _list()
    reject_these_nonmembers: Mapped[list[str]] = _list()
    discard_these_nonmembers: Mapped[list[str]] = _list()
    emergency: Mapped[bool] = mapped_column(Boolean, default=False)
    #: passlib hash of Mailman's Approved: password (compatibility; None = rule off)
    moderator_password: Mapped[str | None] = mapped_column(String(255), default=None)
    max_days_to_hold: Mapped[int] = mapped_column(Integer, default=0)
    administrivia: Mapped[bool] = mapped_column(Boolean, default=True)
    require_explicit_destination: Mapped[bool] = mapped_column(Boolean, default=True)
    acceptable_aliases: Mapped[list[str]] = _list()
    max_num_recipients: Mapped[int] = mapped_column(Integer, default=10)
    #: KiB; 0 = no limit
    max_message_size: Mapped[int] = mapped_column(Integer, default=40)
    bounce_matching_headers: Mapped[str] = mapped_column(Text, default="")
    #: mtaplugin: hold a post whose From: is a member but is not backed by aligned DKIM/SPF
    require_authenticated_senders: Mapped[bool] = mapped_column(Boolean, default=False)
    #: mtaplugin: the list's own wording of SMTP refusals, rule name → text ("*": any rule);
    #: {list} {rule} {reason} {sender} {owner} {subscribe} {listinfo} are filled in
    refusal_texts: Mapped[dict[str, str]] = mapped_column(JSON, default=dict)
    respond_to_post_requests: Mapped[bool] = mapped_column(Boolean, default=True)
    admin_immed_notify: Mapped[bool] = mapped_column(Boolean, default=True)
    admin_notify_mchanges: Mapped[bool] = mapped_column(Boolean, default=False)
    newsgroup_moderation: Mapped[NewsgroupModeration] = enum_with_default(NewsgroupModeration.none)

    # --- subscription -------------------------------------------------------------------
    subscription_policy: Mapped[SubscriptionPolicy] = enum_with_default(SubscriptionPolicy.confirm)
    unsubscription_policy: Mapped[SubscriptionPolicy] = enum_with_default(
        SubscriptionPolicy.confirm
    )
    send_welcome_message: Mapped[bool] = mapped_column(Boolean, default=True)
    send_goodbye_message: Mapped[bool] = mapped_column(Boolean, default=True)

    # --- headers and decoration ----------------------------------------------------------
    subject_prefix: Mapped[str] = mapped_column(String(255), default="")
    reply_goes_to_list: Mapped[ReplyToMunging] = enum_with_default(ReplyToMunging.no_munging)
    reply_to_address: Mapped[str] = mapped_column(String(320), default="")
    first_strip_reply_to: Mapped[bool] = mapped_column(Boolean, default=False)
    include_rfc2369_headers: Mapped[bool] = mapped_column(Boolean, default=True)
    allow_list_posts: Mapped[bool] = mapped_column(Boolean, default=True)
    anonymous_list: Mapped[bool] = mapped_column(Boolean, default=False)
    personalize: Mapped[Personalization] = enum_with_default(Personalization.none)
    #: Mailman's name of the pipeline; only ``default-posting-pipeline`` is taken (REST's
    #: /system/pipelines), and posts are decided by mtaplugin's rules whatever it says
    posting_pipeline: Mapped[str] = mapped_column(String(64), default="default-posting-pipeline")

    # --- content filtering --------------------------------------------------------------
    filter_content: Mapped[bool] = mapped_column(Boolean, default=False)
    filter_action: Mapped[FilterAction] = enum_with_default(FilterAction.discard)
    filter_types: Mapped[list[str]] = _list()
    pass_types: Mapped[list[str]] = _list()
    filter_extensions: Mapped[list[str]] = _list()
    pass_extensions: Mapped[list[str]] = _list()
    collapse_alternatives: Mapped[bool] = mapped_column(Boolean, default=True)
    convert_html_to_plaintext: Mapped[bool] = mapped_column(Boolean, default=False)

    # --- DMARC --------------------------------------------------------------------------
    dmarc_mitigate_action: Mapped[DMARCMitigateAction] = enum_with_default(
        DMARCMitigateAction.no_mitigation
    )
    dmarc_mitigate_unconditionally: Mapped[bool] = mapped_column(Boolean, default=False)
    dmarc_moderation_notice: Mapped[str] = mapped_column(Text, default="")
    dmarc_wrapped_message_text: Mapped[str] = mapped_column(Text, default="")
    dmarc_addresses: Mapped[list[str]] = _list()

    # --- digests ------------------------------------------------------------------------
    digests_enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    digest_size_threshold: Mapped[int] = mapped_column(Integer, default=30)
    digest_send_periodic: Mapped[bool] = mapped_column(Boolean, default=True)
    digest_volume_frequency: Mapped[DigestFrequency] = enum_with_default(DigestFrequency.monthly)

    # --- topics (Mailman 2.1) ------------------------------------------------------------
    topics_enabled: Mapped[bool] = mapped_column(Boolean, default=False)
    #: [[name, regex, description], ...]: a post's topics are those whose regex (one or
    #: more lines, any of which may match; case-insensitive) matches its Subject:,
    #: Keywords: or the Subject:/Keywords: lines among its first body lines
    topics: Mapped[list[list[str]]] = _list()
    #: body lines read for Subject:/Keywords: lines (0: none, -1: all), MM2.1's default 5
    topics_bodylines_limit: Mapped[int] = mapped_column(Integer, default=5)

    # --- bounces ------------------------------------------------------------------------
    process_bounces: Mapped[bool] = mapped_column(Boolean, default=True)
    bounce_score_threshold: Mapped[int] = mapped_column(Integer, default=5)
    bounce_info_stale_after: Mapped[timedelta] = mapped_column(Interval, default=timedelta(days=7))
    bounce_you_are_disabled_warnings: Mapped[int] = mapped_column(Integer, default=3)
    bounce_you_are_disabled_warnings_interval: Mapped[timedelta] = mapped_column(
        Interval, default=timedelta(days=7)
    )
    bounce_notify_owner_on_bounce_increment: Mapped[bool] = mapped_column(Boolean, default=False)
    bounce_notify_owner_on_disable: Mapped[bool] = mapped_column(Boolean, default=True)
    bounce_notify_owner_on_removal: Mapped[bool] = mapped_column(Boolean, default=True)
    forward_unrecognized_bounces_to: Mapped[UnrecognizedBounceDisposition] = enum_with_default(
        UnrecognizedBounceDisposition.administrators
    )

    # --- autoresponders -----------------------------------------------------------------
    autorespond_owner: Mapped[ResponseAction] = enum_with_default(ResponseAction.none)
    autorespond_postings: Mapped[ResponseAction] = enum_with_default(ResponseAction.none)
    autorespond_requests: Mapped[ResponseAction] = enum_with_default(ResponseAction.none)
    autoresponse_grace_period: Mapped[timedelta] = mapped_column(
        Interval, default=timedelta(days=90)
    )
    autoresponse_owner_text: Mapped[str] = mapped_column(Text, default="")
    autoresponse_postings_text: Mapped[str] = mapped_column(Text, default="")
    autoresponse_request_text: Mapped[str] = mapped_column(Text, default="")

    # --- archive ------------------------------------------------------------------------
    archive_policy: Mapped[ArchivePolicy] = enum_with_default(ArchivePolicy.public)
    archive_rendering_mode: Mapped[ArchiveRenderingMode] = enum_with_default(
        ArchiveRenderingMode.text
    )
    #: {archiver name: enabled}
    archivers: Mapped[dict[str, bool]] = mapped_column(JSON, default=lambda: {"mtaplugin": True})

    # --- the Usenet gateway (mtaplugin.news; docs/usenet.md) ----------------------------
    gateway_to_mail: Mapped[bool] = mapped_column(Boolean, default=False)
    gateway_to_news: Mapped[bool] = mapped_column(Boolean, default=False)
    linked_newsgroup: Mapped[str] = mapped_column(String(255), default="")
    nntp_prefix_subject_too: Mapped[bool] = mapped_column(Boolean, default=True)
    usenet_watermark: Mapped[int | None] = mapped_column(Integer, default=None)

    domain: Mapped[Domain] = relationship(back_populates="lists")
    members: Mapped[list[Member]] = relationship(
        back_populates="mailing_list", cascade="all, delete-orphan", passive_deletes=True
    )

    # --- derived addresses --------------------------------------------------------------
    # (posting_address, fqdn_listname, subaddress(), the -request, -owner, -bounces, -join
    # and -leave addresses, no_reply_address: ListAddresses)
    def __repr__(self) -> str:
        return f"<MailingList {self.fqdn_listname}>"


def _one_line(target: MailingList, value: Any, _old: Any, initiator: Any) -> Any:
    """Every write of a list setting whose texts go into header fields is checked here, as
    the last word after each surface's own check (:mod:`mtaplugin.model.one_line`)."""
    from mtaplugin.model.one_line import check_setting

    return check_setting(initiator.key, value)


# Every column: check_setting picks the one-line ones from the table, new columns included.
for _column in MailingList.__table__.columns:
    event.listen(getattr(MailingList, _column.key), "set", _one_line, retval=True)
