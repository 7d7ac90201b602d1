"""What an external archiver answers when it did not take a post."""

from __future__ import annotations


class HandOffError(Exception):
    """The archiver did not take the post: ``temporary`` (down, busy, exit code not 0:
    try again later) or refused for good."""

    def __init__(self, message: str, *, temporary: bool) -> None:
        super().__init__(message)
        self.temporary = temporary
