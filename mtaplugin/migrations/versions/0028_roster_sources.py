"""roster_sources, roster_source_members: rosters synced from LDAP or SQL

Revision ID: 0028
Revises: 0025
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from mtaplugin.model.base import UTCDateTime

revision: str = "0028"
down_revision: str | None = "0024"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "roster_sources",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("mailing_list_id", sa.Integer(), nullable=False),
        sa.Column("role", sa.String(length=32), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("url", sa.String(length=1024), nullable=False),
        sa.Column("bind_dn", sa.String(length=1024), nullable=False),
        sa.Column("bind_password", sa.String(length=1024), nullable=False),
        sa.Column("base_dn", sa.String(length=1024), nullable=False),
        sa.Column("ldap_filter", sa.Text(), nullable=False),
        sa.Column("group_dn", sa.String(length=1024), nullable=False),
        sa.Column("member_attribute", sa.String(length=255), nullable=False),
        sa.Column("mail_attribute", sa.String(length=255), nullable=False),
        sa.Column("name_attribute", sa.String(length=255), nullable=False),
        sa.Column("query", sa.Text(), nullable=False),
        sa.Column("timeout", sa.Integer(), nullable=False),
        sa.Column("interval", sa.Integer(), nullable=False),
        sa.Column("max_removals", sa.Integer(), nullable=False),
        sa.Column("max_removal_percent", sa.Integer(), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("last_sync_at", UTCDateTime(timezone=True), nullable=True),
        sa.Column("last_result", sa.String(length=16), nullable=False),
        sa.Column("last_message", sa.Text(), nullable=False),
        sa.Column("last_added", sa.Integer(), nullable=False),
        sa.Column("last_removed", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["mailing_list_id"],
            ["mailing_lists.id"],
            name=op.f("fk_roster_sources_mailing_list_id_mailing_lists"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_roster_sources")),
        sa.UniqueConstraint("mailing_list_id", "role", name="uq_roster_sources_role"),
    )
    op.create_index(
        op.f("ix_roster_sources_mailing_list_id"), "roster_sources", ["mailing_list_id"]
    )
    op.create_table(
        "roster_source_members",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("source_id", sa.Integer(), nullable=False),
        sa.Column("member_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["source_id"],
            ["roster_sources.id"],
            name=op.f("fk_roster_source_members_source_id_roster_sources"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["member_id"],
            ["members.id"],
            name=op.f("fk_roster_source_members_member_id_members"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_roster_source_members")),
        sa.UniqueConstraint("member_id", name=op.f("uq_roster_source_members_member_id")),
    )
    op.create_index(
        op.f("ix_roster_source_members_source_id"), "roster_source_members", ["source_id"]
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_roster_source_members_source_id"), "roster_source_members")
    op.drop_table("roster_source_members")
    op.drop_index(op.f("ix_roster_sources_mailing_list_id"), "roster_sources")
    op.drop_table("roster_sources")
