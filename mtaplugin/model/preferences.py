"""Delivery preferences, kept on members, addresses and users.

A preference left NULL falls through: member → address → user → system default, as in
Mailman (MM:model/member.py ``_lookup``).
"""

from __future__ import annotations

from sqlalchemy import Boolean, String
from sqlalchemy.orm import Mapped, mapped_column

from mtaplugin.enums import DeliveryMode, DeliveryStatus
from mtaplugin.model.base import enum_column

SYSTEM_PREFERENCES: dict[str, object] = {
    "acknowledge_posts": False,
    "hide_address": True,
    "preferred_language": "en",
    "receive_list_copy": True,
    "receive_own_postings": True,
    "delivery_mode": DeliveryMode.regular,
    "delivery_status": DeliveryStatus.enabled,
}

PREFERENCE_KEYS = tuple(SYSTEM_PREFERENCES)


class PreferencesMixin:
    acknowledge_posts: Mapped[bool | None] = mapped_column(Boolean, default=None)
    hide_address: Mapped[bool | None] = mapped_column(Boolean, default=None)
    preferred_language: Mapped[str | None] = mapped_column(String(16), default=None)
    receive_list_copy: Mapped[bool | None] = mapped_column(Boolean, default=None)
    receive_own_postings: Mapped[bool | None] = mapped_column(Boolean, default=None)
    delivery_mode: Mapped[DeliveryMode | None] = mapped_column(
        enum_column(DeliveryMode), default=None
    )
    delivery_status: Mapped[DeliveryStatus | None] = mapped_column(
        enum_column(DeliveryStatus), default=None
    )
