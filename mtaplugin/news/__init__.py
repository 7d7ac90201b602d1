"""The Usenet gateway (Mailman 2.1's ``gateway_to_news`` / ``gateway_to_mail``): a list's
posts to its linked newsgroup, the group's articles to the list, moderated newsgroups.

The gateway talks to the site's NNTP server through a :class:`NewsServer`: the real one is
:class:`mtaplugin.news.nntp.NntpClient` (RFC 3977 over a socket).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from mtaplugin.vocabulary.retry import HandOffFailed

if TYPE_CHECKING:
    from mtaplugin.config import Settings


class NewsError(HandOffFailed):
    """The NNTP server refused or could not be reached.  ``temporary``: try again later
    (connection refused, 4xx such as 441 posting failed for now, 400 service
    unavailable); else the article will never be taken as it is (a 5xx, no such group)."""


@dataclass(frozen=True)
class GroupStatus:
    """The answer to GROUP: the estimated count and the first and last article numbers
    (``last < first`` for an empty group)."""

    count: int
    first: int
    last: int


class NewsServer(Protocol):
    """One session with the site's NNTP server (a context manager: QUIT on exit)."""

    def __enter__(self) -> NewsServer: ...

    def __exit__(self, *exc: object) -> None: ...

    def post(self, article: bytes) -> None:
        """POST the article (headers and body, CRLF or LF line ends); raises NewsError."""
        ...

    def group(self, name: str) -> GroupStatus:
        """Select the group; raises NewsError (411 no such group: not temporary)."""
        ...

    def article(self, number: int) -> bytes | None:
        """The article with this number in the selected group; None when there is none
        (423); raises NewsError for anything else."""
        ...


def connect(settings: Settings) -> NewsServer:
    """A session with the site's NNTP server (the ``[nntp]`` settings), to use as a
    context manager.  Raises :class:`NewsError` (not temporary) when ``nntp.host`` is
    empty: the gateway is off for the whole site."""
    from mtaplugin.news.nntp import NntpClient

    nntp = settings.nntp
    if not nntp.host:
        raise NewsError(
            "no news server is configured (nntp.host is empty): the gateway is off",
            temporary=False,
        )
    return NntpClient(
        nntp.host,
        nntp.port,
        user=nntp.user,
        password=nntp.password,
        tls=nntp.tls,
        timeout=nntp.timeout,
    )
