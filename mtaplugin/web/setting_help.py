"""Labels, one sentence of help and the unit of each list setting, keyed by its REST name.

PLACEHOLDER on the docs branch, with the shape the ui branch writes (the lead takes ui's
file at merge): ``docs/reference/settings.md`` is generated from :data:`SETTING_HELP` and
says "(no help yet)" for a setting that has no entry.  The texts are in the source language
and translated at render time (``_(entry.help)``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SettingHelp:
    label: str
    help: str
    unit: str | None = None


SETTING_HELP: dict[str, SettingHelp] = {
    "display_name": SettingHelp(
        "Display name", "The list's name as people see it, in notices and digests."
    ),
    "subject_prefix": SettingHelp(
        "Subject prefix",
        "Put before the Subject of every post the members get; %d is the post's number.",
    ),
    "max_message_size": SettingHelp(
        "Largest post",
        "A larger post is held for a moderator; 0 means no limit.",
        "KiB",
    ),
    "max_days_to_hold": SettingHelp(
        "Days a held post is kept",
        "A held post no moderator acted on is discarded after this many days; 0 keeps it.",
        "days",
    ),
    "digest_size_threshold": SettingHelp(
        "Digest size",
        "When the posts waiting reach this size, the digest goes out at once; 0: never by size.",
        "KiB",
    ),
}
