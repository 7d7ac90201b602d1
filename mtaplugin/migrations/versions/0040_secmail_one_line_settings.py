"""one-line list settings: line breaks and control characters stored before the check go

Since this revision a list's ``display_name``, ``description``, ``subject_prefix`` and
``reply_to_address`` are refused with a line break or a control character in them
(mtaplugin.model.one_line), and a copy whose header field would carry one is not made.  A value
stored before keeps the list from getting any post; here each such character becomes a
space (the value then stripped), and a ``reply_to_address`` that is a ``^regex`` or not
one line is emptied (no Reply-To: is added).  Nothing to undo on downgrade.

Revision ID: 0040
Revises: 0046
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0040"
down_revision: str | None = "0046"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_NOT_ONE_LINE = re.compile("[\x00-\x08\x0a-\x1f\x7f\x85\u2028\u2029]")
_TEXTS = ("display_name", "description", "subject_prefix")


def upgrade() -> None:
    lists = sa.table(
        "mailing_lists",
        sa.column("id", sa.Integer),
        *(sa.column(name, sa.String) for name in (*_TEXTS, "reply_to_address")),
    )
    bind = op.get_bind()
    for row in bind.execute(sa.select(lists)).mappings().all():
        changes: dict[str, str] = {}
        for name in _TEXTS:
            value = row[name] or ""
            if _NOT_ONE_LINE.search(value):
                changes[name] = _NOT_ONE_LINE.sub(" ", value).strip() or "list"
        reply_to = row["reply_to_address"] or ""
        if reply_to.startswith("^") or _NOT_ONE_LINE.search(reply_to):
            changes["reply_to_address"] = ""
        if changes:
            bind.execute(sa.update(lists).where(lists.c.id == row["id"]).values(**changes))


def downgrade() -> None:
    pass
