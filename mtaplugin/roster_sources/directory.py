"""What a directory answered, or why it could not answer, for both kinds of source."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DirectoryEntry:
    email: str
    name: str = ""


@dataclass(frozen=True)
class DirectoryAnswer:
    entries: tuple[DirectoryEntry, ...]
    #: entries left out: no address, a malformed address, a group member that is gone
    skipped: int = 0


class DirectoryError(Exception):
    """The directory could not give a complete answer (down, refused the bind, timed out,
    truncated its answer, a broken query).  The text never holds the bind password."""


def scrub(text: str, secret: str) -> str:
    """``text`` with ``secret`` blanked out (belt and braces: no error text a library
    builds should ever carry the password into a log or a REST answer)."""
    return text.replace(secret, "***") if secret else text
