"""Reading a Mailman 3 REST answer's values: times, enums, flags, durations and the
preferences Mailman keeps per user, address and membership (shared by the list plan,
:mod:`mtaplugin.importers.mailman3`, and the users, :mod:`mtaplugin.importers.mm3users`)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, TypeVar

from mtaplugin.enums import DeliveryMode, DeliveryStatus
from mtaplugin.model import Address, User

_E = TypeVar("_E", bound=StrEnum)

PREFERENCES = (
    "acknowledge_posts",
    "hide_address",
    "preferred_language",
    "receive_list_copy",
    "receive_own_postings",
    "delivery_mode",
    "delivery_status",
)


def when(value: Any) -> datetime | None:
    """Mailman's naive ISO 8601 time (UTC)."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def enum(kind: type[_E], value: Any) -> _E | None:
    try:
        return kind(str(value)) if value is not None else None
    except ValueError:
        return None


def flag(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


_MAILMAN_DURATION = re.compile(r"^(\d+)d(\d+(?:\.\d+)?)s$")


def mailman_duration(value: Any) -> Any:
    """Mailman serves a duration with seconds as ``1d43200.0s``; here that is ``1d43200s``
    (whole seconds).  Anything else unchanged."""
    if isinstance(value, str):
        match = _MAILMAN_DURATION.match(value.strip())
        if match:
            return f"{match[1]}d{round(float(match[2]))}s"
    return value


def preferences(row: User | Address | Any, prefs: dict[str, Any]) -> bool:
    changed = False
    for key in PREFERENCES:
        if key not in prefs:
            continue
        value: Any = prefs[key]
        if key == "delivery_mode":
            value = enum(DeliveryMode, value)
        elif key == "delivery_status":
            value = enum(DeliveryStatus, value)
        elif key == "preferred_language":
            value = str(value) if value else None
        else:
            value = flag(value)
        if getattr(row, key) != value:
            setattr(row, key, value)
            changed = True
    return changed


def same_time(old: datetime | None, new: datetime | None) -> bool:
    if old is None or new is None:
        return old is new
    return old.replace(tzinfo=None) == new.astimezone(UTC).replace(tzinfo=None)
