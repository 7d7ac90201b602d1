"""What every rule sees and returns, and the table entry that names it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mtaplugin.enums import Action, MemberRole
from mtaplugin.mailauth.identity import SenderIdentity
from mtaplugin.vocabulary.envelope import Envelope, Post

if TYPE_CHECKING:
    from mtaplugin.mailauth.dmarc import DmarcPolicy
    from mtaplugin.model import MailingList
    from mtaplugin.posting.snapshot import ListSnapshot
    from mtaplugin.regexes import Pattern


@dataclass(frozen=True)
class SitePolicy:
    """Site-wide settings the rules read (``[rules]`` in the settings file)."""

    #: Mailman's ``[antispam] header_checks``: (header, regex) pairs checked on every list
    header_checks: tuple[tuple[str, Pattern], ...] = ()
    #: what a header check, or a header match without an action of its own, does
    header_match_action: Action = Action.hold
    #: lines of the body the administrivia rule reads (Mailman's email_commands_max_lines)
    email_commands_max_lines: int = 10
    #: posts one From: address may offer in an hour, all lists together (0: no limit)
    sender_posts_per_hour: int = 0
    #: posts one list may take in an hour (0: no limit)
    list_posts_per_hour: int = 0
    #: lists with more members than this refuse posts from nonmembers (0: no limit)
    nonmember_posts_max_members: int = 0

    @property
    def counts_posts(self) -> bool:
        """Whether a rate limit is on: the engine then reads and writes the counts."""
        return self.sender_posts_per_hour > 0 or self.list_posts_per_hour > 0


@dataclass(frozen=True)
class RecentPosts:
    """Posts counted in the last hour (:mod:`mtaplugin.engine.rates`): by the post's
    From: address on every list, and to this list."""

    sender: int = 0
    list: int = 0


#: the roles that make an address more than a nonmember of the list
SUBSCRIBED = frozenset({MemberRole.member, MemberRole.owner, MemberRole.moderator})


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
    identity: SenderIdentity = field(default_factory=lambda: SenderIdentity(""))
    snapshot: ListSnapshot | None = None
    site: SitePolicy = field(default_factory=SitePolicy)
    #: the list address the post was sent to (as the MTA gave it)
    recipient: str = ""
    #: the From: domain's DMARC policy, looked up when the list mitigates (else None)
    dmarc: DmarcPolicy | None = None
    #: the rule ``urgent``'s finding, kept so the password is checked once per post
    urgent_granted: bool | None = None
    #: the recent post counts, read when a rate limit is on (else None)
    recent: RecentPosts | None = None
    #: the lists named by ``@list`` entries of the nonmember settings that the sender is a
    #: member of (``list@domain``; looked up by the engine)
    member_of: frozenset[str] = frozenset()

    @property
    def is_staff(self) -> bool:
        return MemberRole.owner in self.roles or MemberRole.moderator in self.roles


@dataclass(frozen=True)
class Hit:
    """A rule that matched: what it wants done and why.

    ``Action.defer`` records the hit without deciding: when no later rule decides, any
    recorded hit holds the post (Mailman's final ``any`` link)."""

    rule: str
    action: Action
    reason: str
    #: a ``reject`` that is only for now: the sender's MTA is told 4xx and tries again
    temporary: bool = False


#: A rule's test: ``check(ctx) -> Hit | None``, no I/O.
Check = Callable[[PostContext], Hit | None]

#: A rule's test prepared for one list version and site policy
#: (:mod:`mtaplugin.posting.chain`): what does not depend on the post is read once; None
#: when the list's settings (or the site's) turn the rule off for every post.
Prepare = Callable[["ListSnapshot", SitePolicy], Check | None]


@dataclass(frozen=True)
class Rule:
    """One line of the posting-rule table: the rule's id (as in the docs, the SMTP text
    and ``refusal_texts``), what it does when it hits, and its check.

    ``action`` is the one action the rule takes (``defer``: it only records a reason); None
    when the action comes from a setting, which ``decides`` then names in docs/rules.md's
    words.

    ``prepare``, when set, gives the check to run for one list version (or None: the rule
    is off for that list); it must hit exactly when ``check`` would, with the same reason.
    A rule without one always runs ``check``."""

    id: str
    action: Action | None
    check: Check
    decides: str = ""
    prepare: Prepare | None = None

    @property
    def does(self) -> str:
        """The "Does" column of docs/rules.md's rule table."""
        if self.action is None:
            return self.decides
        return "records" if self.action is Action.defer else self.action.value
