"""What the links of a list's old archive name: Pipermail's article numbers (Mailman 2.1's
``/pipermail/LIST/2019-March/012345.html``), kept at import so that those links lead to
the same post in mtaplugin's archive.  HyperKitty's links need nothing stored: they name
a post by its Message-ID hash, as mtaplugin's archive does."""

from __future__ import annotations

from sqlalchemy import ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from mtaplugin.model.base import Base


class PipermailNumber(Base):
    """Article ``number`` of the list's Pipermail archive is the post ``message_id_hash``."""

    __tablename__ = "pipermail_numbers"

    mailing_list_id: Mapped[int] = mapped_column(
        ForeignKey("mailing_lists.id", ondelete="CASCADE"), primary_key=True
    )
    number: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    message_id_hash: Mapped[str] = mapped_column(String(32))
