"""Which copies of a list post are VERPed: their envelope sender names the member
(``list-bounces+anne=example.org@host``, :func:`mtaplugin.bounces.verp.encode`), so that a
bounce says whose address failed even when the DSN cannot be parsed.

The site decides, as in Mailman (``[bounces]``):

- ``verp_personalized_deliveries``: a post whose members get their own copies
  (personalized lists, one-click unsubscribe links) is VERPed; each copy is made for one
  member anyway, so this costs nothing more.
- ``verp_delivery_interval = N``: every Nth post of a list goes VERPed to all its
  members: the post that brings the list's post count (``post_id``) to a multiple of N,
  as Mailman's to-outgoing handler reads ``post_id`` after counting the post.  ``1``
  VERPs every copy.  With N > 1 each post is counted exactly, in its own transaction
  (as with ``%d`` in the subject prefix), not in the batches of
  :mod:`mtaplugin.lists.counters`.

Every other copy (and every notice, and -owner mail) leaves with the list's plain
-bounces address.  A VERPed post is never fanned out in place by the milter: Postfix
ignores the ESMTP arguments of a milter's CHGFROM (so no ``XVERP`` there), and one
envelope sender per member needs one transaction per member; the outbox sends it
(docs/members.md, "The envelope sender and VERP").
"""

from __future__ import annotations

from dataclasses import dataclass

from mtaplugin.config import BouncesSettings


@dataclass(frozen=True)
class VerpPolicy:
    #: VERP the members' own copies (``bounces.verp_personalized_deliveries``)
    personalized: bool = False
    #: VERP every Nth post of a list (``bounces.verp_delivery_interval``; 0: never)
    interval: int = 0

    @classmethod
    def from_settings(cls, bounces: BouncesSettings) -> VerpPolicy:
        return cls(bounces.verp_personalized_deliveries, bounces.verp_delivery_interval)

    @property
    def needs_exact_number(self) -> bool:
        """Every Nth post (N > 1) needs the post's exact number: the engine counts such
        posts at once, in the post's own transaction, not in batches."""
        return self.interval > 1

    def verped(self, number: int | None, own_copies: bool) -> bool:
        """Whether the list post numbered ``number`` (its number as the subject prefix's
        ``%d`` shows it; None: no list post) goes VERPed; ``own_copies``: each member
        gets a copy of its own."""
        if number is None:
            return False
        if own_copies and self.personalized:
            return True
        return self.interval > 0 and (number + 1) % self.interval == 0
