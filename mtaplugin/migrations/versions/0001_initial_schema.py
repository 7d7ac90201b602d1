"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-12-03 08:38:44.883961
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import mtaplugin.model.base

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:

    op.create_table(
        "domains",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("mail_host", sa.String(length=255), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("alias_domain", sa.String(length=255), nullable=True),
        sa.Column("base_url", sa.String(length=255), nullable=False),
        sa.Column("created_at", mtaplugin.model.base.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_domains")),
        sa.UniqueConstraint("alias_domain", name=op.f("uq_domains_alias_domain")),
        sa.UniqueConstraint("mail_host", name=op.f("uq_domains_mail_host")),
    )
    op.create_table(
        "users",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.String(length=32), nullable=False),
        sa.Column("display_name", sa.String(length=255), nullable=False),
        sa.Column("password", sa.String(length=255), nullable=True),
        sa.Column("created_on", mtaplugin.model.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("is_server_owner", sa.Boolean(), nullable=False),
        sa.Column("preferred_address_id", sa.Integer(), nullable=True),
        sa.Column("acknowledge_posts", sa.Boolean(), nullable=True),
        sa.Column("hide_address", sa.Boolean(), nullable=True),
        sa.Column("preferred_language", sa.String(length=16), nullable=True),
        sa.Column("receive_list_copy", sa.Boolean(), nullable=True),
        sa.Column("receive_own_postings", sa.Boolean(), nullable=True),
        sa.Column(
            "delivery_mode",
            sa.Enum(
                "regular",
                "plaintext_digests",
                "mime_digests",
                "summary_digests",
                name="deliverymode",
                native_enum=False,
                length=32,
            ),
            nullable=True,
        ),
        sa.Column(
            "delivery_status",
            sa.Enum(
                "enabled",
                "by_user",
                "by_bounces",
                "by_moderator",
                "unknown",
                name="deliverystatus",
                native_enum=False,
                length=32,
            ),
            nullable=True,
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_users")),
        sa.UniqueConstraint("user_id", name=op.f("uq_users_user_id")),
    )
    op.create_table(
        "addresses",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("original_email", sa.String(length=320), nullable=False),
        sa.Column("display_name", sa.String(length=255), nullable=False),
        sa.Column("verified_on", mtaplugin.model.base.UTCDateTime(timezone=True), nullable=True),
        sa.Column("registered_on", mtaplugin.model.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=True),
        sa.Column("acknowledge_posts", sa.Boolean(), nullable=True),
        sa.Column("hide_address", sa.Boolean(), nullable=True),
        sa.Column("preferred_language", sa.String(length=16), nullable=True),
        sa.Column("receive_list_copy", sa.Boolean(), nullable=True),
        sa.Column("receive_own_postings", sa.Boolean(), nullable=True),
        sa.Column(
            "delivery_mode",
            sa.Enum(
                "regular",
                "plaintext_digests",
                "mime_digests",
                "summary_digests",
                name="deliverymode",
                native_enum=False,
                length=32,
            ),
            nullable=True,
        ),
        sa.Column(
            "delivery_status",
            sa.Enum(
                "enabled",
                "by_user",
                "by_bounces",
                "by_moderator",
                "unknown",
                name="deliverystatus",
                native_enum=False,
                length=32,
            ),
            nullable=True,
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_addresses_user_id_users"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_addresses")),
        sa.UniqueConstraint("email", name=op.f("uq_addresses_email")),
    )
    with op.batch_alter_table("addresses", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_addresses_user_id"), ["user_id"], unique=False)

    op.create_table(
        "domain_owners",
        sa.Column("domain_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["domain_id"],
            ["domains.id"],
            name=op.f("fk_domain_owners_domain_id_domains"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_domain_owners_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("domain_id", "user_id", name=op.f("pk_domain_owners")),
    )
    op.create_table(
        "mailing_lists",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("list_name", sa.String(length=64), nullable=False),
        sa.Column("mail_host", sa.String(length=255), nullable=False),
        sa.Column("list_id", sa.String(length=320), nullable=False),
        sa.Column("created_at", mtaplugin.model.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("style_name", sa.String(length=64), nullable=False),
        sa.Column("display_name", sa.String(length=255), nullable=False),
        sa.Column("description", sa.String(length=255), nullable=False),
        sa.Column("info", sa.Text(), nullable=False),
        sa.Column("advertised", sa.Boolean(), nullable=False),
        sa.Column("preferred_language", sa.String(length=16), nullable=False),
        sa.Column(
            "member_roster_visibility",
            sa.Enum(
                "public",
                "members",
                "moderators",
                name="rostervisibility",
                native_enum=False,
                length=32,
            ),
            nullable=False,
        ),
        sa.Column("post_id", sa.Integer(), nullable=False),
        sa.Column("volume", sa.Integer(), nullable=False),
        sa.Column("next_digest_number", sa.Integer(), nullable=False),
        sa.Column("last_post_at", mtaplugin.model.base.UTCDateTime(timezone=True), nullable=True),
        sa.Column(
            "digest_last_sent_at", mtaplugin.model.base.UTCDateTime(timezone=True), nullable=True
        ),
        sa.Column(
            "default_member_action",
            sa.Enum(
                "hold",
                "reject",
                "discard",
                "accept",
                "defer",
                name="action",
                native_enum=False,
                length=32,
            ),
            nullable=False,
        ),
        sa.Column(
            "default_nonmember_action",
            sa.Enum(
                "hold",
                "reject",
                "discard",
                "accept",
                "defer",
                name="action",
                native_enum=False,
                length=32,
            ),
            nullable=False,
        ),
        sa.Column("accept_these_nonmembers", sa.JSON(), nullable=False),
        sa.Column("hold_these_nonmembers", sa.JSON(), nullable=False),
        sa.Column("reject_these_nonmembers", sa.JSON(), nullable=False),
        sa.Column("discard_these_nonmembers", sa.JSON(), nullable=False),
        sa.Column("emergency", sa.Boolean(), nullable=False),
        sa.Column("moderator_password", sa.String(length=255), nullable=True),
        sa.Column("max_days_to_hold", sa.Integer(), nullable=False),
        sa.Column("administrivia", sa.Boolean(), nullable=False),
        sa.Column("require_explicit_destination", sa.Boolean(), nullable=False),
        sa.Column("acceptable_aliases", sa.JSON(), nullable=False),
        sa.Column("max_num_recipients", sa.Integer(), nullable=False),
        sa.Column("max_message_size", sa.Integer(), nullable=False),
        sa.Column("bounce_matching_headers", sa.Text(), nullable=False),
        sa.Column("require_authenticated_senders", sa.Boolean(), nullable=False),
        sa.Column("respond_to_post_requests", sa.Boolean(), nullable=False),
        sa.Column("admin_immed_notify", sa.Boolean(), nullable=False),
        sa.Column("admin_notify_mchanges", sa.Boolean(), nullable=False),
        sa.Column(
            "newsgroup_moderation",
            sa.Enum(
                "none",
                "open_moderated",
                "moderated",
                name="newsgroupmoderation",
                native_enum=False,
                length=32,
            ),
            nullable=False,
        ),
        sa.Column(
            "subscription_policy",
            sa.Enum(
                "open",
                "confirm",
                "moderate",
                "confirm_then_moderate",
                name="subscriptionpolicy",
                native_enum=False,
                length=32,
            ),
            nullable=False,
        ),
        sa.Column(
            "unsubscription_policy",
            sa.Enum(
                "open",
                "confirm",
                "moderate",
                "confirm_then_moderate",
                name="subscriptionpolicy",
                native_enum=False,
                length=32,
            ),
            nullable=False,
        ),
        sa.Column("send_welcome_message", sa.Boolean(), nullable=False),
        sa.Column("send_goodbye_message", sa.Boolean(), nullable=False),
        sa.Column("subject_prefix", sa.String(length=255), nullable=False),
        sa.Column(
            "reply_goes_to_list",
            sa.Enum(
                "no_munging",
                "point_to_list",
                "explicit_header",
                "explicit_header_only",
                name="replytomunging",
                native_enum=False,
                length=32,
            ),
            nullable=False,
        ),
        sa.Column("reply_to_address", sa.String(length=320), nullable=False),
        sa.Column("first_strip_reply_to", sa.Boolean(), nullable=False),
        sa.Column("include_rfc2369_headers", sa.Boolean(), nullable=False),
        sa.Column("allow_list_posts", sa.Boolean(), nullable=False),
        sa.Column("anonymous_list", sa.Boolean(), nullable=False),
        sa.Column(
            "personalize",
            sa.Enum(
                "none", "individual", "full", name="personalization", native_enum=False, length=32
            ),
            nullable=False,
        ),
        sa.Column("posting_pipeline", sa.String(length=64), nullable=False),
        sa.Column("filter_content", sa.Boolean(), nullable=False),
        sa.Column(
            "filter_action",
            sa.Enum(
                "discard",
                "reject",
                "forward",
                "preserve",
                name="filteraction",
                native_enum=False,
                length=32,
            ),
            nullable=False,
        ),
        sa.Column("filter_types", sa.JSON(), nullable=False),
        sa.Column("pass_types", sa.JSON(), nullable=False),
        sa.Column("filter_extensions", sa.JSON(), nullable=False),
        sa.Column("pass_extensions", sa.JSON(), nullable=False),
        sa.Column("collapse_alternatives", sa.Boolean(), nullable=False),
        sa.Column("convert_html_to_plaintext", sa.Boolean(), nullable=False),
        sa.Column(
            "dmarc_mitigate_action",
            sa.Enum(
                "no_mitigation",
                "munge_from",
                "wrap_message",
                "reject",
                "discard",
                name="dmarcmitigateaction",
                native_enum=False,
                length=32,
            ),
            nullable=False,
        ),
        sa.Column("dmarc_mitigate_unconditionally", sa.Boolean(), nullable=False),
        sa.Column("dmarc_moderation_notice", sa.Text(), nullable=False),
        sa.Column("dmarc_wrapped_message_text", sa.Text(), nullable=False),
        sa.Column("dmarc_addresses", sa.JSON(), nullable=False),
        sa.Column("digests_enabled", sa.Boolean(), nullable=False),
        sa.Column("digest_size_threshold", sa.Integer(), nullable=False),
        sa.Column("digest_send_periodic", sa.Boolean(), nullable=False),
        sa.Column(
            "digest_volume_frequency",
            sa.Enum(
                "yearly",
                "monthly",
                "quarterly",
                "weekly",
                "daily",
                name="digestfrequency",
                native_enum=False,
                length=32,
            ),
            nullable=False,
        ),
        sa.Column("process_bounces", sa.Boolean(), nullable=False),
        sa.Column("bounce_score_threshold", sa.Integer(), nullable=False),
        sa.Column("bounce_info_stale_after", sa.Interval(), nullable=False),
        sa.Column("bounce_you_are_disabled_warnings", sa.Integer(), nullable=False),
        sa.Column("bounce_you_are_disabled_warnings_interval", sa.Interval(), nullable=False),
        sa.Column("bounce_notify_owner_on_bounce_increment", sa.Boolean(), nullable=False),
        sa.Column("bounce_notify_owner_on_disable", sa.Boolean(), nullable=False),
        sa.Column("bounce_notify_owner_on_removal", sa.Boolean(), nullable=False),
        sa.Column(
            "forward_unrecognized_bounces_to",
            sa.Enum(
                "discard",
                "administrators",
                "site_owner",
                name="unrecognizedbouncedisposition",
                native_enum=False,
                length=32,
            ),
            nullable=False,
        ),
        sa.Column(
            "autorespond_owner",
            sa.Enum(
                "none",
                "respond_and_discard",
                "respond_and_continue",
                name="responseaction",
                native_enum=False,
                length=32,
            ),
            nullable=False,
        ),
        sa.Column(
            "autorespond_postings",
            sa.Enum(
                "none",
                "respond_and_discard",
                "respond_and_continue",
                name="responseaction",
                native_enum=False,
                length=32,
            ),
            nullable=False,
        ),
        sa.Column(
            "autorespond_requests",
            sa.Enum(
                "none",
                "respond_and_discard",
                "respond_and_continue",
                name="responseaction",
                native_enum=False,
                length=32,
            ),
            nullable=False,
        ),
        sa.Column("autoresponse_grace_period", sa.Interval(), nullable=False),
        sa.Column("autoresponse_owner_text", sa.Text(), nullable=False),
        sa.Column("autoresponse_postings_text", sa.Text(), nullable=False),
        sa.Column("autoresponse_request_text", sa.Text(), nullable=False),
        sa.Column(
            "archive_policy",
            sa.Enum(
                "never", "private", "public", name="archivepolicy", native_enum=False, length=32
            ),
            nullable=False,
        ),
        sa.Column(
            "archive_rendering_mode",
            sa.Enum("text", "markdown", name="archiverenderingmode", native_enum=False, length=32),
            nullable=False,
        ),
        sa.Column("archivers", sa.JSON(), nullable=False),
        sa.Column("gateway_to_mail", sa.Boolean(), nullable=False),
        sa.Column("gateway_to_news", sa.Boolean(), nullable=False),
        sa.Column("linked_newsgroup", sa.String(length=255), nullable=False),
        sa.Column("nntp_prefix_subject_too", sa.Boolean(), nullable=False),
        sa.Column("usenet_watermark", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(
            ["mail_host"],
            ["domains.mail_host"],
            name=op.f("fk_mailing_lists_mail_host_domains"),
            onupdate="CASCADE",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_mailing_lists")),
        sa.UniqueConstraint("list_id", name=op.f("uq_mailing_lists_list_id")),
        sa.UniqueConstraint("mail_host", "list_name", name="uq_mailing_lists_address"),
    )
    with op.batch_alter_table("mailing_lists", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_mailing_lists_mail_host"), ["mail_host"], unique=False)

    op.create_table(
        "archived_messages",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("mailing_list_id", sa.Integer(), nullable=False),
        sa.Column("message_id", sa.String(length=998), nullable=False),
        sa.Column("message_id_hash", sa.String(length=32), nullable=False),
        sa.Column("in_reply_to", sa.String(length=998), nullable=False),
        sa.Column("sender", sa.String(length=320), nullable=False),
        sa.Column("subject", sa.Text(), nullable=False),
        sa.Column("date", mtaplugin.model.base.UTCDateTime(timezone=True), nullable=True),
        sa.Column("archived_at", mtaplugin.model.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("raw", sa.LargeBinary(), nullable=False),
        sa.Column("headers", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["mailing_list_id"],
            ["mailing_lists.id"],
            name=op.f("fk_archived_messages_mailing_list_id_mailing_lists"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_archived_messages")),
    )
    with op.batch_alter_table("archived_messages", schema=None) as batch_op:
        batch_op.create_index(
            "ix_archived_list_hash", ["mailing_list_id", "message_id_hash"], unique=True
        )

    op.create_table(
        "audit_log",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("at", mtaplugin.model.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("actor", sa.String(length=320), nullable=False),
        sa.Column("action", sa.String(length=64), nullable=False),
        sa.Column("mailing_list_id", sa.Integer(), nullable=True),
        sa.Column("detail", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["mailing_list_id"],
            ["mailing_lists.id"],
            name=op.f("fk_audit_log_mailing_list_id_mailing_lists"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_log")),
    )
    with op.batch_alter_table("audit_log", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_audit_log_at"), ["at"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_audit_log_mailing_list_id"), ["mailing_list_id"], unique=False
        )

    op.create_table(
        "autoresponse_records",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("mailing_list_id", sa.Integer(), nullable=True),
        sa.Column("response_type", sa.String(length=32), nullable=False),
        sa.Column("sent_on", mtaplugin.model.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["mailing_list_id"],
            ["mailing_lists.id"],
            name=op.f("fk_autoresponse_records_mailing_list_id_mailing_lists"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_autoresponse_records")),
    )
    with op.batch_alter_table("autoresponse_records", schema=None) as batch_op:
        batch_op.create_index(
            "ix_autoresponse_lookup", ["email", "mailing_list_id", "sent_on"], unique=False
        )

    op.create_table(
        "bans",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("is_regex", sa.Boolean(), nullable=False),
        sa.Column("mailing_list_id", sa.Integer(), nullable=True),
        sa.Column("created_at", mtaplugin.model.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["mailing_list_id"],
            ["mailing_lists.id"],
            name=op.f("fk_bans_mailing_list_id_mailing_lists"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_bans")),
        sa.UniqueConstraint("mailing_list_id", "email", name="uq_bans_list_email"),
    )
    with op.batch_alter_table("bans", schema=None) as batch_op:
        batch_op.create_index("ix_bans_email", ["email"], unique=False)
        batch_op.create_index("ix_bans_regex", ["is_regex"], unique=False)

    op.create_table(
        "bounce_events",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("mailing_list_id", sa.Integer(), nullable=True),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("at", mtaplugin.model.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("message_id", sa.String(length=998), nullable=False),
        sa.Column(
            "context",
            sa.Enum("normal", "probe", name="bouncecontext", native_enum=False, length=32),
            nullable=False,
        ),
        sa.Column("processed", sa.Boolean(), nullable=False),
        sa.Column("raw", sa.LargeBinary(), nullable=True),
        sa.ForeignKeyConstraint(
            ["mailing_list_id"],
            ["mailing_lists.id"],
            name=op.f("fk_bounce_events_mailing_list_id_mailing_lists"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_bounce_events")),
    )
    with op.batch_alter_table("bounce_events", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_bounce_events_email"), ["email"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_bounce_events_mailing_list_id"), ["mailing_list_id"], unique=False
        )

    op.create_table(
        "digest_queue",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("mailing_list_id", sa.Integer(), nullable=False),
        sa.Column("message_id", sa.String(length=998), nullable=False),
        sa.Column("sender", sa.String(length=320), nullable=False),
        sa.Column("subject", sa.Text(), nullable=False),
        sa.Column("raw", sa.LargeBinary(), nullable=False),
        sa.Column("added_at", mtaplugin.model.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["mailing_list_id"],
            ["mailing_lists.id"],
            name=op.f("fk_digest_queue_mailing_list_id_mailing_lists"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_digest_queue")),
    )
    with op.batch_alter_table("digest_queue", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_digest_queue_mailing_list_id"), ["mailing_list_id"], unique=False
        )

    op.create_table(
        "header_matches",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("mailing_list_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("header", sa.String(length=255), nullable=False),
        sa.Column("pattern", sa.Text(), nullable=False),
        sa.Column(
            "action",
            sa.Enum(
                "hold",
                "reject",
                "discard",
                "accept",
                "defer",
                name="action",
                native_enum=False,
                length=32,
            ),
            nullable=True,
        ),
        sa.Column("tag", sa.String(length=255), nullable=True),
        sa.ForeignKeyConstraint(
            ["mailing_list_id"],
            ["mailing_lists.id"],
            name=op.f("fk_header_matches_mailing_list_id_mailing_lists"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_header_matches")),
        sa.UniqueConstraint("mailing_list_id", "position", name="uq_header_matches_position"),
    )
    with op.batch_alter_table("header_matches", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_header_matches_mailing_list_id"), ["mailing_list_id"], unique=False
        )

    op.create_table(
        "held_messages",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("mailing_list_id", sa.Integer(), nullable=False),
        sa.Column("message_id", sa.String(length=998), nullable=False),
        sa.Column("sender", sa.String(length=320), nullable=False),
        sa.Column("subject", sa.Text(), nullable=False),
        sa.Column("reasons", sa.JSON(), nullable=False),
        sa.Column("envelope", sa.JSON(), nullable=False),
        sa.Column("raw", sa.LargeBinary(), nullable=False),
        sa.Column("hold_date", mtaplugin.model.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["mailing_list_id"],
            ["mailing_lists.id"],
            name=op.f("fk_held_messages_mailing_list_id_mailing_lists"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_held_messages")),
    )
    with op.batch_alter_table("held_messages", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_held_messages_mailing_list_id"), ["mailing_list_id"], unique=False
        )

    op.create_table(
        "members",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("member_id", sa.String(length=32), nullable=False),
        sa.Column("mailing_list_id", sa.Integer(), nullable=False),
        sa.Column(
            "role",
            sa.Enum(
                "member",
                "owner",
                "moderator",
                "nonmember",
                name="memberrole",
                native_enum=False,
                length=32,
            ),
            nullable=False,
        ),
        sa.Column("address_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=True),
        sa.Column(
            "subscription_mode",
            sa.Enum("as_address", "as_user", name="subscriptionmode", native_enum=False, length=32),
            nullable=False,
        ),
        sa.Column("display_name", sa.String(length=255), nullable=False),
        sa.Column(
            "moderation_action",
            sa.Enum(
                "hold",
                "reject",
                "discard",
                "accept",
                "defer",
                name="action",
                native_enum=False,
                length=32,
            ),
            nullable=True,
        ),
        sa.Column("bounce_score", sa.Integer(), nullable=False),
        sa.Column(
            "last_bounce_received", mtaplugin.model.base.UTCDateTime(timezone=True), nullable=True
        ),
        sa.Column(
            "last_warning_sent", mtaplugin.model.base.UTCDateTime(timezone=True), nullable=True
        ),
        sa.Column("total_warnings_sent", sa.Integer(), nullable=False),
        sa.Column("unsubscribe_token", sa.String(length=64), nullable=True),
        sa.Column("created_at", mtaplugin.model.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("acknowledge_posts", sa.Boolean(), nullable=True),
        sa.Column("hide_address", sa.Boolean(), nullable=True),
        sa.Column("preferred_language", sa.String(length=16), nullable=True),
        sa.Column("receive_list_copy", sa.Boolean(), nullable=True),
        sa.Column("receive_own_postings", sa.Boolean(), nullable=True),
        sa.Column(
            "delivery_mode",
            sa.Enum(
                "regular",
                "plaintext_digests",
                "mime_digests",
                "summary_digests",
                name="deliverymode",
                native_enum=False,
                length=32,
            ),
            nullable=True,
        ),
        sa.Column(
            "delivery_status",
            sa.Enum(
                "enabled",
                "by_user",
                "by_bounces",
                "by_moderator",
                "unknown",
                name="deliverystatus",
                native_enum=False,
                length=32,
            ),
            nullable=True,
        ),
        sa.ForeignKeyConstraint(
            ["address_id"],
            ["addresses.id"],
            name=op.f("fk_members_address_id_addresses"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["mailing_list_id"],
            ["mailing_lists.id"],
            name=op.f("fk_members_mailing_list_id_mailing_lists"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_members_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_members")),
        sa.UniqueConstraint("mailing_list_id", "role", "address_id", name="uq_members_role"),
        sa.UniqueConstraint("member_id", name=op.f("uq_members_member_id")),
        sa.UniqueConstraint("unsubscribe_token", name=op.f("uq_members_unsubscribe_token")),
    )
    with op.batch_alter_table("members", schema=None) as batch_op:
        batch_op.create_index("ix_members_address", ["address_id"], unique=False)
        batch_op.create_index("ix_members_list_role", ["mailing_list_id", "role"], unique=False)
        batch_op.create_index(batch_op.f("ix_members_user_id"), ["user_id"], unique=False)

    op.create_table(
        "outbox",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("mail_from", sa.String(length=320), nullable=False),
        sa.Column("recipients", sa.JSON(), nullable=False),
        sa.Column("raw", sa.LargeBinary(), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("mailing_list_id", sa.Integer(), nullable=True),
        sa.Column(
            "status",
            sa.Enum("queued", "sent", "failed", name="outboxstatus", native_enum=False, length=32),
            nullable=False,
        ),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("created_at", mtaplugin.model.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column(
            "next_attempt_at", mtaplugin.model.base.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column("last_error", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["mailing_list_id"],
            ["mailing_lists.id"],
            name=op.f("fk_outbox_mailing_list_id_mailing_lists"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_outbox")),
    )
    with op.batch_alter_table("outbox", schema=None) as batch_op:
        batch_op.create_index("ix_outbox_due", ["status", "next_attempt_at"], unique=False)

    op.create_table(
        "templates",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column(
            "scope",
            sa.Enum("site", "domain", "list", name="templatescope", native_enum=False, length=32),
            nullable=False,
        ),
        sa.Column("domain_id", sa.Integer(), nullable=True),
        sa.Column("mailing_list_id", sa.Integer(), nullable=True),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("language", sa.String(length=16), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("uri", sa.String(length=1024), nullable=False),
        sa.Column("username", sa.String(length=255), nullable=False),
        sa.Column("password", sa.String(length=255), nullable=False),
        sa.ForeignKeyConstraint(
            ["domain_id"],
            ["domains.id"],
            name=op.f("fk_templates_domain_id_domains"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["mailing_list_id"],
            ["mailing_lists.id"],
            name=op.f("fk_templates_mailing_list_id_mailing_lists"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_templates")),
        sa.UniqueConstraint(
            "scope", "domain_id", "mailing_list_id", "name", "language", name="uq_templates_key"
        ),
    )
    op.create_table(
        "pending_requests",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("token", sa.String(length=64), nullable=False),
        sa.Column(
            "request_type",
            sa.Enum(
                "held_message",
                "subscription",
                "unsubscription",
                "password_reset",
                "moderation_reply",
                name="requesttype",
                native_enum=False,
                length=32,
            ),
            nullable=False,
        ),
        sa.Column(
            "token_owner",
            sa.Enum(
                "no_one", "subscriber", "moderator", name="tokenowner", native_enum=False, length=32
            ),
            nullable=False,
        ),
        sa.Column("mailing_list_id", sa.Integer(), nullable=True),
        sa.Column("held_message_id", sa.Integer(), nullable=True),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("display_name", sa.String(length=255), nullable=False),
        sa.Column("step", sa.String(length=64), nullable=False),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("created_at", mtaplugin.model.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("expires_at", mtaplugin.model.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["held_message_id"],
            ["held_messages.id"],
            name=op.f("fk_pending_requests_held_message_id_held_messages"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["mailing_list_id"],
            ["mailing_lists.id"],
            name=op.f("fk_pending_requests_mailing_list_id_mailing_lists"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_pending_requests")),
        sa.UniqueConstraint("token", name=op.f("uq_pending_requests_token")),
    )
    with op.batch_alter_table("pending_requests", schema=None) as batch_op:
        batch_op.create_index("ix_pending_requests_expires", ["expires_at"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_pending_requests_mailing_list_id"), ["mailing_list_id"], unique=False
        )


def downgrade() -> None:

    with op.batch_alter_table("pending_requests", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_pending_requests_mailing_list_id"))
        batch_op.drop_index("ix_pending_requests_expires")

    op.drop_table("pending_requests")
    op.drop_table("templates")
    with op.batch_alter_table("outbox", schema=None) as batch_op:
        batch_op.drop_index("ix_outbox_due")

    op.drop_table("outbox")
    with op.batch_alter_table("members", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_members_user_id"))
        batch_op.drop_index("ix_members_list_role")
        batch_op.drop_index("ix_members_address")

    op.drop_table("members")
    with op.batch_alter_table("held_messages", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_held_messages_mailing_list_id"))

    op.drop_table("held_messages")
    with op.batch_alter_table("header_matches", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_header_matches_mailing_list_id"))

    op.drop_table("header_matches")
    with op.batch_alter_table("digest_queue", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_digest_queue_mailing_list_id"))

    op.drop_table("digest_queue")
    with op.batch_alter_table("bounce_events", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_bounce_events_mailing_list_id"))
        batch_op.drop_index(batch_op.f("ix_bounce_events_email"))

    op.drop_table("bounce_events")
    with op.batch_alter_table("bans", schema=None) as batch_op:
        batch_op.drop_index("ix_bans_regex")
        batch_op.drop_index("ix_bans_email")

    op.drop_table("bans")
    with op.batch_alter_table("autoresponse_records", schema=None) as batch_op:
        batch_op.drop_index("ix_autoresponse_lookup")

    op.drop_table("autoresponse_records")
    with op.batch_alter_table("audit_log", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_audit_log_mailing_list_id"))
        batch_op.drop_index(batch_op.f("ix_audit_log_at"))

    op.drop_table("audit_log")
    with op.batch_alter_table("archived_messages", schema=None) as batch_op:
        batch_op.drop_index("ix_archived_list_hash")

    op.drop_table("archived_messages")
    with op.batch_alter_table("mailing_lists", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_mailing_lists_mail_host"))

    op.drop_table("mailing_lists")
    op.drop_table("domain_owners")
    with op.batch_alter_table("addresses", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_addresses_user_id"))

    op.drop_table("addresses")
    op.drop_table("users")
    op.drop_table("domains")
