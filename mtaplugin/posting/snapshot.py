"""A list's snapshot: what the posting rules read about a list, as plain data.

A post's decision reads the list's settings, the sender's roles, the regular-delivery
roster, the bans and the header matches.  :mod:`mtaplugin.lists.cache` loads them from SQL
and keeps one :class:`ListSnapshot` per list and process while the list's ``generation``
has not moved.  This module holds only the data: no SQL, so the pure posting core can use
it.  It carries the list's settings, typed as the list's row (plain values copied from it
once per generation: :mod:`mtaplugin.lists.settings`), which is why it lives here, above
:mod:`mtaplugin.model`, and not in :mod:`mtaplugin.vocabulary` (its row-free parts are in
:mod:`mtaplugin.vocabulary.snapshot`).

Snapshots are read-only and shared between the milter's threads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from mtaplugin.vocabulary.bans import BanList
from mtaplugin.vocabulary.context import Templates
from mtaplugin.vocabulary.snapshot import HeaderRule, Recipient, Roles
from mtaplugin.vocabulary.topics import Topic, TopicChoice

if TYPE_CHECKING:
    from mtaplugin.model import MailingList

_NO_ROLES: Roles = MappingProxyType({})
_NO_CHOICES: Mapping[str, TopicChoice] = MappingProxyType({})


@dataclass(frozen=True)
class ListSnapshot:
    pk: int
    generation: int
    #: the list's settings: from the cache, plain values copied from its row at this
    #: generation (:class:`mtaplugin.lists.settings.ListSettings`: every column, the
    #: derived addresses, no relationship, no session); read it, never write it
    mlist: MailingList
    #: email → the roles it holds on the list, each with its own moderation action
    roles: Mapping[str, Roles]
    #: members due for regular delivery
    regular: tuple[Recipient, ...]
    #: owners and moderators (where -owner mail goes)
    staff: tuple[str, ...]
    #: banned addresses, this list's and the site's: exact ones, and ``^regex`` ones
    bans: BanList = field(default_factory=BanList)
    #: the list's header matches, in position order
    header_matches: tuple[HeaderRule, ...] = ()
    #: the list's web page, from its domain's base_url ("" when the domain has none)
    listinfo_url: str = ""
    #: the header and footer templates that decorate its posts
    templates: Templates = field(default_factory=Templates)
    #: the list's topics, compiled (empty unless ``topics_enabled``)
    topics: tuple[Topic, ...] = ()
    #: email → the topics a member chose (only members who chose some; empty unless
    #: ``topics_enabled``)
    topic_choices: Mapping[str, TopicChoice] = field(default_factory=lambda: _NO_CHOICES)
    #: members who asked for an acknowledgement of their posts (``acknowledge_posts``)
    acknowledge: frozenset[str] = frozenset()
    #: regular members who want no list copy of a post that names them in To:/Cc:
    no_list_copy: frozenset[str] = frozenset()
    #: how many members are due for a digest (0: the post is not kept for a digest)
    digest_members: int = 0
    #: the other lists (``list@domain``) the nonmember settings name as ``@list`` entries,
    #: worked out once per list version (None: not worked out, read them from ``mlist``)
    at_lists: frozenset[str] | None = None
    #: the notice texts stored for the list (template rows), as the decisions of this
    #: list version look them up (:func:`mtaplugin.notices.templates.overrides_kept`:
    #: a template row changed moves the generation, so a new snapshot starts empty)
    notice_texts: dict[tuple[int | None, str, str], Any] = field(
        default_factory=dict, compare=False, repr=False
    )

    def roles_of(self, email: str) -> Roles:
        return self.roles.get(email, _NO_ROLES)

    def is_banned(self, email: str) -> bool:
        return self.bans.matches(email)
