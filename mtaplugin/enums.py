"""The enumerations of list settings and member preferences, with Mailman's names (the SQL
model stores them; :mod:`mtaplugin.enums` is the same module under its old name).

Values are stored and served by **name**, as Mailman's REST 3.1 dialect does.
"""

from __future__ import annotations

from enum import StrEnum


class Action(StrEnum):
    """What happens to a post (Mailman's ``Action``)."""

    hold = "hold"
    reject = "reject"
    discard = "discard"
    accept = "accept"
    defer = "defer"


class MemberRole(StrEnum):
    member = "member"
    owner = "owner"
    moderator = "moderator"
    nonmember = "nonmember"


class DeliveryMode(StrEnum):
    regular = "regular"
    plaintext_digests = "plaintext_digests"
    mime_digests = "mime_digests"
    summary_digests = "summary_digests"


class DeliveryStatus(StrEnum):
    enabled = "enabled"
    by_user = "by_user"
    by_bounces = "by_bounces"
    by_moderator = "by_moderator"
    unknown = "unknown"


class SubscriptionMode(StrEnum):
    as_address = "as_address"
    as_user = "as_user"


class SubscriptionPolicy(StrEnum):
    open = "open"
    confirm = "confirm"
    moderate = "moderate"
    confirm_then_moderate = "confirm_then_moderate"


class ReplyToMunging(StrEnum):
    no_munging = "no_munging"
    point_to_list = "point_to_list"
    explicit_header = "explicit_header"
    explicit_header_only = "explicit_header_only"


class ArchivePolicy(StrEnum):
    never = "never"
    private = "private"
    public = "public"


class ArchiveRenderingMode(StrEnum):
    text = "text"
    markdown = "markdown"


class ResponseAction(StrEnum):
    none = "none"
    respond_and_discard = "respond_and_discard"
    respond_and_continue = "respond_and_continue"


class DigestFrequency(StrEnum):
    yearly = "yearly"
    monthly = "monthly"
    quarterly = "quarterly"
    weekly = "weekly"
    daily = "daily"


class DMARCMitigateAction(StrEnum):
    no_mitigation = "no_mitigation"
    munge_from = "munge_from"
    wrap_message = "wrap_message"
    reject = "reject"
    discard = "discard"


class FilterAction(StrEnum):
    discard = "discard"
    reject = "reject"
    forward = "forward"
    preserve = "preserve"


class Personalization(StrEnum):
    none = "none"
    individual = "individual"
    full = "full"


class RosterVisibility(StrEnum):
    public = "public"
    members = "members"
    moderators = "moderators"


class NewsgroupModeration(StrEnum):
    none = "none"
    open_moderated = "open_moderated"
    moderated = "moderated"


class UnrecognizedBounceDisposition(StrEnum):
    discard = "discard"
    administrators = "administrators"
    site_owner = "site_owner"


class RequestType(StrEnum):
    held_message = "held_message"
    subscription = "subscription"
    unsubscription = "unsubscription"
    password_reset = "password_reset"
    moderation_reply = "moderation_reply"
    #: a VERP probe sent before bounces disable a member (its token is in the return path)
    probe = "probe"
    #: a web sign-up waiting for its address to be verified (the account exists after)
    registration = "registration"
    #: one more address of an account, waiting for its verification link
    address_verification = "address_verification"


class TokenOwner(StrEnum):
    no_one = "no_one"
    subscriber = "subscriber"
    moderator = "moderator"


class OutboxStatus(StrEnum):
    queued = "queued"
    sent = "sent"
    failed = "failed"


class BounceContext(StrEnum):
    normal = "normal"
    probe = "probe"


class BounceKind(StrEnum):
    """What a bounce says of the address (RFC 3463/3464 status classes).  Only ``hard``
    raises a member's bounce score; the others are recorded and shown."""

    #: a permanent failure of the mailbox or its domain (5.1.x, 5.2.x, 5.0.0, 5.3.x...)
    hard = "hard"
    #: a permanent refusal for policy or content (5.7.x: spam block, DMARC, blocklist):
    #: the address works, the receiving site refused this mail
    policy = "policy"
    #: a delay notification or transient failure (Action: delayed, 4.x.x)
    delayed = "delayed"


class TemplateScope(StrEnum):
    site = "site"
    domain = "domain"
    list = "list"
