"""The members' copy of a list version, prepared once: what the copy all members share
takes from the list alone (:class:`~mtaplugin.posting.transform_context.Prepared`).

A post's copy is made from the list's snapshot (:mod:`mtaplugin.lists.cache`: one per
list and version, replaced when the list's ``generation`` moves: its settings, its
templates, its domain's web address).  What does not depend on the post -- the List-*
fields, the decoration texts, the subject prefix, which steps can change anything on this
list -- is made here once per snapshot and kept with it; each post's copy then only does
what depends on the post.  The copy is the same, byte for byte, as one made without it
(``tests/unit/test_copy_plan.py``).
"""

from __future__ import annotations

from mtaplugin.copies import transforms
from mtaplugin.copies.transforms import (
    archived_at,
    decorate,
    dmarc_mitigation,
    headers,
)
from mtaplugin.enums import ArchivePolicy, ReplyToMunging
from mtaplugin.posting import content_filter
from mtaplugin.posting.snapshot import ListSnapshot
from mtaplugin.posting.transform_context import Prepared, Step, TransformContext

#: list pk → (the snapshot, what was prepared for it): the newest snapshot's, one a list
_BY_LIST: dict[int, tuple[ListSnapshot, Prepared]] = {}


def for_snapshot(snap: ListSnapshot) -> Prepared:
    """What the shared copy takes from ``snap``'s list version, made at its first post.
    (Snapshots are read-only and replaced, never changed: another snapshot of the list,
    a newer one or one a released hold built, is prepared again.)"""
    entry = _BY_LIST.get(snap.pk)
    if entry is not None and entry[0] is snap:
        return entry[1]
    made = prepare(TransformContext(snap.mlist, snap.listinfo_url, templates=snap.templates))
    _BY_LIST[snap.pk] = (snap, made)  # (threads: the last one made stays; both are equal)
    return made


def prepare(ctx: TransformContext) -> Prepared:
    """What the shared copy takes from ``ctx``'s list, its web address and its templates."""
    mlist = ctx.mlist
    texts = decorate.texts(ctx)
    idle: set[Step] = set()  # the steps that return at once for every post of the list
    if not mlist.filter_content:
        idle.add(content_filter.content_filter)
    if mlist.reply_goes_to_list is ReplyToMunging.no_munging and not mlist.first_strip_reply_to:
        idle.add(headers.reply_to)
    if not mlist.topics_enabled:
        idle.add(headers.topics)
    if not mlist.subject_prefix.strip():
        idle.add(headers.subject_prefix)
    if mlist.archive_policy is ArchivePolicy.never:
        idle.add(archived_at.archive_fields)
    if texts == ("", ""):
        idle.add(decorate.decorate)
    if mlist.anonymous_list or mlist.dmarc_mitigate_action not in dmarc_mitigation.TRANSFORMING:
        idle.add(dmarc_mitigation.mitigate)
    return Prepared(
        subject_prefix=mlist.subject_prefix.strip(),
        list_fields=tuple(headers.list_fields(ctx)),
        texts=texts,
        archive_steps=tuple(s for s in transforms.ARCHIVE_STEPS if s not in idle),
        member_steps=tuple(s for s in transforms.MEMBER_STEPS if s not in idle),
    )
