"""What an external archiver answers when it did not take a post."""

from __future__ import annotations

from mtaplugin.vocabulary.retry import HandOffFailed


class HandOffError(HandOffFailed):
    """The archiver did not take the post: ``temporary`` (down, busy, exit code not 0:
    try again later) or refused for good."""
