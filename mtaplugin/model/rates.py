"""How many posts a sender and a list offered lately, for the ``[rules]`` rate limits
(:mod:`mtaplugin.engine.rates`): one row per key and ten-minute window, counted in the
decision's own transaction, so every milter process and every mail host sharing the
database sees the same counts."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from mtaplugin.model.base import Base, UTCDateTime


class PostRate(Base):
    """Posts counted for ``key`` (``sender:<address>`` or ``list:<list id>``) in the
    ten-minute window starting at ``window_start``."""

    __tablename__ = "post_rates"

    key: Mapped[str] = mapped_column(String(400), primary_key=True)
    window_start: Mapped[datetime] = mapped_column(UTCDateTime, primary_key=True)
    posts: Mapped[int] = mapped_column(Integer, default=0)
