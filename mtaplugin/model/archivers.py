"""What the external archivers wait for: archived posts not yet handed to HyperKitty,
mail-archive.com or the archiving command (:mod:`mtaplugin.archivers.queue`)."""

from __future__ import annotations

from sqlalchemy import Index, LargeBinary, String
from sqlalchemy.orm import Mapped, mapped_column

from mtaplugin.model.base import Base, HandOffColumns


class ArchiverHandOff(HandOffColumns, Base):
    """One archived post for one external archiver (its archive copy).  Queued in the
    transaction that archived the post; the ``archivers`` job hands it over and deletes
    the row (or marks it ``failed`` with ``last_error`` when the archiver refused it for
    good or it waited too long)."""

    __tablename__ = "archiver_queue"
    __table_args__ = (Index("ix_archiver_queue_due", "failed", "next_attempt_at"),)

    #: the archiver's name, as ``/lists/{list}/archivers`` shows it
    archiver: Mapped[str] = mapped_column(String(64))
    message: Mapped[bytes] = mapped_column(LargeBinary)
