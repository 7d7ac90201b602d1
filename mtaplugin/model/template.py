"""Notice and decoration templates overridden per site, domain or list."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from mtaplugin.enums import TemplateScope
from mtaplugin.model.base import Base, UTCDateTime, enum_column


class Template(Base):
    __tablename__ = "templates"
    __table_args__ = (
        UniqueConstraint(
            "scope", "domain_id", "mailing_list_id", "name", "language", name="uq_templates_key"
        ),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    scope: Mapped[TemplateScope] = mapped_column(enum_column(TemplateScope))
    domain_id: Mapped[int | None] = mapped_column(
        ForeignKey("domains.id", ondelete="CASCADE"), default=None
    )
    mailing_list_id: Mapped[int | None] = mapped_column(
        ForeignKey("mailing_lists.id", ondelete="CASCADE"), default=None
    )
    #: Mailman's template name, e.g. ``list:member:regular:footer``
    name: Mapped[str] = mapped_column(String(64))
    language: Mapped[str] = mapped_column(String(16), default="")
    #: the template text itself (Jinja2), or empty when ``uri`` is used
    text: Mapped[str] = mapped_column(Text, default="")
    #: Mailman's REST ``uris`` resource: an http(s)/file URI to fetch the text from
    uri: Mapped[str] = mapped_column(String(1024), default="")
    username: Mapped[str] = mapped_column(String(255), default="")
    password: Mapped[str] = mapped_column(String(255), default="")


class TemplateFetch(Base):
    """What an http(s) template URI answered: the text kept for rendering.

    One row per URI as fetched (its ``$variables`` filled in), Mailman's file cache.  The
    ``template-fetch`` job fills and refreshes it; notices and list snapshots only read it,
    so no network request ever runs while a post is being decided.  A failed refresh keeps
    ``text`` (and ``fetched_at``) and records ``error``.
    """

    __tablename__ = "template_fetches"

    id: Mapped[int] = mapped_column(primary_key=True)
    uri: Mapped[str] = mapped_column(String(1024), unique=True)
    #: the text last fetched ("" after a first answer of 404: Mailman's empty template)
    text: Mapped[str] = mapped_column(Text, default="")
    #: when ``text`` was fetched; None: never fetched successfully (nothing to render)
    fetched_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    #: when the job fetches it again (cache_life after a success, a retry after a failure)
    refresh_at: Mapped[datetime] = mapped_column(UTCDateTime)
    attempted_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    #: why the last attempt failed ("" when it succeeded)
    error: Mapped[str] = mapped_column(Text, default="")
