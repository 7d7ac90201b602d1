"""Mailman 2.1's rosters: members (regular and digest, with their ``user_options``
bits, names, languages, delivery status, topics and bounce records), owners, moderators,
and the addresses of the ``*_these_nonmembers`` settings as nonmembers."""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime
from typing import Any

from mtaplugin.enums import Action, DeliveryMode, DeliveryStatus, MemberRole
from mtaplugin.importers.mm2pickle import BounceRecord
from mtaplugin.importers.mm2values import (
    ACKNOWLEDGE_POSTS,
    CONCEAL_SUBSCRIPTION,
    DELIVERY_STATUS,
    DISABLE_DELIVERY,
    DISABLE_MIME,
    DONT_RECEIVE_DUPLICATES,
    DONT_RECEIVE_OWN_POSTS,
    MEMBER_MODERATION_ACTION,
    MODERATE,
    RECEIVE_NONMATCHING_TOPICS,
    lines_of,
    number,
)
from mtaplugin.importers.plan import MemberPlan, Plan
from mtaplugin.passwords import MAX_LENGTH


def members(config: dict[str, Any], plan: Plan) -> None:
    regular: dict[str, Any] = config.get("members", {}) or {}
    digest: dict[str, Any] = config.get("digest_members", {}) or {}
    options: dict[str, Any] = config.get("user_options", {}) or {}
    names: dict[str, Any] = config.get("usernames", {}) or {}
    languages: dict[str, Any] = config.get("language", {}) or {}
    statuses: dict[str, Any] = config.get("delivery_status", {}) or {}
    interests: dict[str, Any] = config.get("topics_userinterest", {}) or {}
    bounces: dict[str, Any] = config.get("bounce_info", {}) or {}
    secrets: dict[str, Any] = config.get("passwords", {}) or {}
    moderated = MEMBER_MODERATION_ACTION.get(
        number(config.get("member_moderation_action")), Action.hold
    )
    default_action = plan.settings.get("default_member_action", Action.defer)
    seen: set[str] = set()
    for email in [*regular, *digest]:
        key = email.lower()
        if key in seen:
            continue
        seen.add(key)
        bits = number(options.get(email, options.get(key, 0)))
        member = MemberPlan(key, MemberRole.member, display_name=str(names.get(email, "") or ""))
        if email in regular:
            member.delivery_mode = DeliveryMode.regular
        else:
            member.delivery_mode = (
                DeliveryMode.plaintext_digests if bits & DISABLE_MIME else DeliveryMode.mime_digests
            )
        status = statuses.get(email)
        if isinstance(status, (list, tuple)) and status:
            member.delivery_status = DELIVERY_STATUS.get(number(status[0]), DeliveryStatus.unknown)
        elif bits & DISABLE_DELIVERY:
            member.delivery_status = DeliveryStatus.unknown
        if member.delivery_status is DeliveryStatus.enabled:
            member.delivery_status = None
        language = languages.get(email)
        if (
            isinstance(language, str)
            and language
            and language != plan.settings.get("preferred_language")
        ):
            member.language = language
        if bits & MODERATE:
            member.moderation_action = moderated
        elif default_action is not Action.defer:
            member.moderation_action = Action.defer
        member.acknowledge_posts = True if bits & ACKNOWLEDGE_POSTS else None
        member.receive_own_postings = False if bits & DONT_RECEIVE_OWN_POSTS else None
        member.hide_address = True if bits & CONCEAL_SUBSCRIPTION else None
        member.receive_list_copy = False if bits & DONT_RECEIVE_DUPLICATES else None
        member.receive_nonmatching_topics = bool(bits & RECEIVE_NONMATCHING_TOPICS)
        chosen = interests.get(email)
        if isinstance(chosen, (list, tuple)):
            member.topics = [str(t).strip().replace(" ", "_") for t in chosen]
        record = bounces.get(email)
        if isinstance(record, BounceRecord):
            member.bounce_score = round(record.score)
            if record.date is not None:
                with contextlib.suppress(ValueError):
                    member.last_bounce_received = datetime(*record.date, tzinfo=UTC)
        secret = secrets.get(email, secrets.get(key))
        if isinstance(secret, str) and 0 < len(secret) <= MAX_LENGTH:
            member.password = secret
        plan.members.append(member)
    for role, key in ((MemberRole.owner, "owner"), (MemberRole.moderator, "moderator")):
        for email in lines_of(config.get(key, [])):
            plan.members.append(MemberPlan(email.lower(), role))
    # A nonmember named twice (or in two lists) gets the first list's action, as 2.1
    # checked accept, hold, reject, discard in that order.
    listed: set[tuple[str, MemberRole]] = set()
    for action, key in (
        (Action.defer, "accept_these_nonmembers"),
        (Action.hold, "hold_these_nonmembers"),
        (Action.reject, "reject_these_nonmembers"),
        (Action.discard, "discard_these_nonmembers"),
    ):
        for email in lines_of(config.get(key, [])):
            if email.startswith(("^", "@")) or (email.lower(), MemberRole.nonmember) in listed:
                continue
            listed.add((email.lower(), MemberRole.nonmember))
            plan.members.append(
                MemberPlan(email.lower(), MemberRole.nonmember, moderation_action=action)
            )
