"""What every rule sees and returns."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from mtaplugin.message import Envelope, Post
from mtaplugin.model import MailingList
from mtaplugin.model.enums import Action, MemberRole


@dataclass
class PostContext:
    """One list's view of one post."""

    mlist: MailingList
    post: Post
    envelope: Envelope
    #: the address membership is decided from: the From: header (not Reply-To or Sender)
    sender: str
    #: the sender's roles on this list, with each membership's own moderation action
    roles: dict[MemberRole, Action | None] = field(default_factory=dict)


@dataclass(frozen=True)
class Hit:
    """A rule that matched: what it wants done and why."""

    rule: str
    action: Action
    reason: str


Rule = Callable[[PostContext], Hit | None]
