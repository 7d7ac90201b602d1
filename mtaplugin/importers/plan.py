"""What an import should make of a list: its settings, rosters, bans, header matches
and templates (:func:`mtaplugin.importers.apply.apply` makes the database match)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from mtaplugin.enums import Action, DeliveryMode, DeliveryStatus, MemberRole, SubscriptionMode


@dataclass
class MemberPlan:
    """One membership to have after the import."""

    email: str
    role: MemberRole
    display_name: str = ""
    delivery_mode: DeliveryMode | None = None
    delivery_status: DeliveryStatus | None = None
    language: str | None = None
    moderation_action: Action | None = None
    acknowledge_posts: bool | None = None
    receive_own_postings: bool | None = None
    hide_address: bool | None = None
    receive_list_copy: bool | None = None
    receive_nonmatching_topics: bool = False
    topics: list[str] = field(default_factory=list)
    bounce_score: int = 0
    last_bounce_received: datetime | None = None
    #: subscribed as the user (following its preferred address) or as this address;
    #: None leaves it as it is
    subscription_mode: SubscriptionMode | None = None
    #: the user (32 hex digits) the membership belongs to, when the user exists here
    user_id: str | None = None
    #: Mailman 2.1's clear-text password of the member: its user here gets a hash of it
    #: (:func:`mtaplugin.passwords.carried_hash`) unless it has a password already
    password: str = field(default="", repr=False)


@dataclass
class HeldPlan:
    """A post waiting for a moderator (carried from Mailman 3)."""

    message_id: str
    sender: str
    subject: str
    reason: str
    raw: bytes
    hold_date: datetime | None = None


@dataclass
class PendingPlan:
    """A (un)subscription request waiting in Mailman, carried with its token so that the
    confirmation Mailman mailed still works here."""

    token: str
    #: "subscription" or "unsubscription"
    kind: str
    #: whose step it waits for: "subscriber" (a confirmation) or "moderator"
    owner: str
    email: str
    display_name: str = ""
    requested_at: datetime | None = None


@dataclass
class Plan:
    """What the list should look like after the import."""

    fqdn_listname: str
    #: the list's columns and their new values (enums as enums, days as timedeltas)
    settings: dict[str, Any] = field(default_factory=dict)
    members: list[MemberPlan] = field(default_factory=list)
    bans: list[str] = field(default_factory=list)
    #: (header, pattern, action or None for the list's default)
    header_matches: list[tuple[str, str, Action | None]] = field(default_factory=list)
    #: (Mailman template name, language or "" for any) -> text
    templates: dict[tuple[str, str], str] = field(default_factory=dict)
    #: Mailman template name -> (URI the text is fetched from, user name, password)
    template_uris: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    #: posts waiting for a moderator, added unless one with the same Message-ID waits
    held: list[HeldPlan] = field(default_factory=list)
    #: (un)subscription requests, added unless one with the same token is here
    pending: list[PendingPlan] = field(default_factory=list)
    #: what did not carry over, in words
    notes: list[str] = field(default_factory=list)
