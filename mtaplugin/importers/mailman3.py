"""A Mailman 3 list (read by :mod:`mtaplugin.importers.mm3rest`) made into a :class:`Plan`.

The plan is pure: its REST ``config`` is read with the REST API's own parsers, as an
``mtaplugin import json`` document would be, and :func:`mtaplugin.importers.apply.apply`
writes it in one transaction.  Domains, site bans and site template URIs are written by
:func:`mtaplugin.importers.mm3site.apply_site`, users with their addresses, verification,
preferences and password hashes by :mod:`mtaplugin.importers.mm3users`, each comparing
before it writes, so a second run changes nothing.
"""

from __future__ import annotations

from typing import Any

import falcon

from mtaplugin import passwords
from mtaplugin.api.resources.config import ATTRIBUTES
from mtaplugin.enums import DeliveryMode, DeliveryStatus, SubscriptionMode
from mtaplugin.errors import InvalidInput
from mtaplugin.i18n import _
from mtaplugin.importers.mm3rest import ListData, user_id_of
from mtaplugin.importers.mm3site import carried_uri
from mtaplugin.importers.mm3values import enum, flag, mailman_duration, when
from mtaplugin.importers.plan import HeldPlan, MemberPlan, PendingPlan, Plan
from mtaplugin.manage import members
from mtaplugin.vocabulary.addresses import normalize_email

#: what Mailman's ``config`` says of the list itself rather than a setting: the attributes
#: REST serves read-only here, and Mailman's ``member_count``, ``self_link`` and watermark
_IDENTITY = (set(ATTRIBUTES.readable) - set(ATTRIBUTES.writable)) | {
    "member_count",
    "self_link",
    "usenet_watermark",
}
#: counters carried as they are, so digest volumes and numbers go on
_COUNTERS = ("volume", "next_digest_number", "usenet_watermark")


def settings_of(config: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    """The list's columns from Mailman's ``config``, each read with the REST API's parser;
    a setting this side does not have, or refuses, is a note."""
    settings: dict[str, Any] = {}
    for name, value in sorted(config.items()):
        if name in _IDENTITY or name == "http_etag":
            continue
        if name == "moderator_password":
            # a passlib hash (Mailman serves the hash); kept when it can be checked here
            if isinstance(value, str) and value:
                if passwords.PASSWORDS.identify(value) is None:
                    notes.append(_("moderator_password: a hash this side cannot check; not set"))
                else:
                    settings[name] = value
            continue
        if name not in ATTRIBUTES.writable:
            notes.append(
                _("{name} = {value!r}: no such setting here, not carried").format(
                    name=name, value=value
                )
            )
            continue
        try:
            values = list(value) if isinstance(value, list) else [mailman_duration(value)]
            settings.update(ATTRIBUTES.parse({name: values}, complete=False))
        except falcon.HTTPError as e:
            notes.append(
                _("{name} = {value!r} refused here ({why}); the default is kept").format(
                    name=name, value=value, why=e.description
                )
            )
    for name in _COUNTERS:
        if isinstance(config.get(name), int):
            settings[name] = config[name]
    return settings


def _member(member: dict[str, Any], prefs: dict[str, Any], notes: list[str]) -> MemberPlan | None:
    email = str(member.get("email", ""))
    try:
        plan = MemberPlan(
            normalize_email(email, "email"),
            members.parse_role(str(member.get("role", "member"))),
            display_name=str(member.get("display_name") or ""),
        )
    except InvalidInput as e:
        notes.append(_("member {email!r} not carried: {why}").format(email=email, why=e.problem))
        return None
    action = member.get("moderation_action")
    if action is not None:
        plan.moderation_action = members.parse_action(str(action))
    plan.delivery_mode = enum(DeliveryMode, prefs.get("delivery_mode"))
    plan.delivery_status = enum(DeliveryStatus, prefs.get("delivery_status"))
    language = prefs.get("preferred_language")
    plan.language = str(language) if language else None
    for name in ("acknowledge_posts", "receive_own_postings", "hide_address", "receive_list_copy"):
        setattr(plan, name, flag(prefs.get(name)))
    plan.bounce_score = int(member.get("bounce_score") or 0)
    plan.last_bounce_received = when(member.get("last_bounce_received"))
    plan.subscription_mode = enum(SubscriptionMode, member.get("subscription_mode"))
    plan.user_id = user_id_of(member.get("user"))
    return plan


def plan(data: ListData, *, move_held: bool = False) -> Plan:
    """What ``data`` should become here (pure).  ``move_held``: the held posts are
    discarded in Mailman after the import (``--move-held``), so no note asks for it."""
    result = Plan(normalize_email(data.fqdn_listname, "list"))
    result.settings = settings_of(data.config, result.notes)
    for member, prefs in data.members:
        wanted = _member(member, prefs, result.notes)
        if wanted is not None:
            result.members.append(wanted)
    result.bans = list(data.bans)
    for match in data.header_matches:
        action = match.get("action")
        result.header_matches.append(
            (
                str(match.get("header", "")),
                str(match.get("pattern", "")),
                members.parse_action(str(action)) if action else None,
            )
        )
    for uri in data.uris:
        if carried_uri(uri, result.notes):
            result.template_uris[str(uri["name"])] = (
                str(uri["uri"]),
                str(uri.get("username") or ""),
                str(uri.get("password") or ""),
            )
    for held in data.held:
        result.held.append(
            HeldPlan(
                str(held.get("message_id") or ""),
                str(held.get("sender") or ""),
                str(held.get("subject") or ""),
                str(held.get("reason") or ""),
                str(held.get("msg") or "").encode("utf-8", "surrogateescape"),
                when(held.get("hold_date")),
            )
        )
    if data.held and not move_held:
        result.notes.append(
            _(
                "{n} held post(s) copied: moderate them here after switching, and discard "
                "them in Mailman (or import with --move-held)"
            ).format(n=len(data.held))
        )
    for request in data.requests:
        carried = pending_of(request, result.notes)
        if carried is not None:
            result.pending.append(carried)
    return result


def pending_of(request: dict[str, Any], notes: list[str]) -> PendingPlan | None:
    """A pending request as Mailman's REST API serves it, or None (with a note) when it
    cannot be carried."""
    token = str(request.get("token") or "").strip().lower()
    owner = str(request.get("token_owner") or "")
    shown = str(request.get("email") or "?")
    try:
        email = normalize_email(shown, "email")
    except InvalidInput:
        email = ""
    if not email or not token or len(token) > 64 or owner not in ("subscriber", "moderator"):
        notes.append(
            _(
                "the pending request of {email} (token {token}) cannot be carried; "
                "decide it in Mailman"
            ).format(email=shown, token=token or "?")
        )
        return None
    return PendingPlan(
        token,
        str(request.get("type") or "subscription"),
        owner,
        email,
        str(request.get("display_name") or ""),
        when(request.get("when")),
    )
