"""Who gets an accepted post, and the topics it matched: pure code over the list's snapshot.

- an urgent post (:mod:`mtaplugin.posting.rules.urgent`) goes to every member of the list,
  whatever their delivery mode or status, and whatever topics they chose (Mailman 2.1);
- any other post goes to the regular-delivery members (the poster only with
  ``receive_own_postings``), narrowed by their topics (:mod:`mtaplugin.vocabulary.topics`);
- then a member who set ``receive_list_copy`` off and is named in the post's To:, Cc:,
  Resent-To: or Resent-Cc: gets no list copy: they have the poster's own (Mailman's
  "avoid duplicates").

Nothing here costs anything for a list without topics, urgent posts or members who
avoid duplicates: the snapshot says so up front.
"""

from __future__ import annotations

from dataclasses import dataclass

from mtaplugin.enums import MemberRole
from mtaplugin.posting.snapshot import ListSnapshot
from mtaplugin.vocabulary.envelope import Post
from mtaplugin.vocabulary.snapshot import delivery_emails
from mtaplugin.vocabulary.topics import narrow, post_topics

#: the headers whose addresses already have the post (Mailman 3's avoid_duplicates)
NAMED_IN = ("To", "Cc", "Resent-To", "Resent-Cc")


@dataclass(frozen=True)
class Audience:
    members: tuple[str, ...]
    #: the names of the list's topics the post matched (its X-Topics:)
    topics: tuple[str, ...] = ()
    #: an urgent post: every member got it at once (so it goes into no digest)
    urgent: bool = False


def every_member(snapshot: ListSnapshot) -> tuple[str, ...]:
    """Every member of the list (role member), whatever their delivery settings."""
    return tuple(sorted(e for e, roles in snapshot.roles.items() if MemberRole.member in roles))


def named_addresses(post: Post) -> set[str]:
    return {a.lower() for _n, a in post.named(*NAMED_IN) if "@" in a}


def audience(snapshot: ListSnapshot, post: Post, sender: str, urgent: bool = False) -> Audience:
    mlist = snapshot.mlist
    hits = (
        post_topics(post, snapshot.topics, mlist.topics_bodylines_limit) if snapshot.topics else ()
    )
    if urgent:
        not_own = {r.email for r in snapshot.regular if not r.receive_own_postings}
        members = tuple(m for m in every_member(snapshot) if m != sender or m not in not_own)
    else:
        members = delivery_emails(snapshot.regular, sender)
        if snapshot.topic_choices:
            members = narrow(members, snapshot.topic_choices, hits)
    if snapshot.no_list_copy:
        named = named_addresses(post) & snapshot.no_list_copy
        if named:
            members = tuple(m for m in members if m not in named)
    return Audience(members, hits, urgent)
