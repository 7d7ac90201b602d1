"""Mailman 2.1's numbers (option values, the bits of ``user_options``; from its
``Defaults.py`` and ``MemberAdaptor.py``), what each becomes here, and the reading of a
``config.pck`` value (a flag, a number, lines, a time)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from mtaplugin.enums import (
    Action,
    DeliveryStatus,
    DigestFrequency,
    DMARCMitigateAction,
    FilterAction,
    NewsgroupModeration,
    Personalization,
    ReplyToMunging,
    ResponseAction,
    RosterVisibility,
    SubscriptionPolicy,
)

#: ``user_options`` bits (Defaults.py)
DISABLE_DELIVERY = 1
DONT_RECEIVE_OWN_POSTS = 2
ACKNOWLEDGE_POSTS = 4
DISABLE_MIME = 8
CONCEAL_SUBSCRIPTION = 16
RECEIVE_NONMATCHING_TOPICS = 64
MODERATE = 128
DONT_RECEIVE_DUPLICATES = 256

#: ``delivery_status`` codes (MemberAdaptor.py)
DELIVERY_STATUS = {
    0: DeliveryStatus.enabled,
    1: DeliveryStatus.unknown,
    2: DeliveryStatus.by_user,
    3: DeliveryStatus.by_moderator,
    4: DeliveryStatus.by_bounces,
}
MEMBER_MODERATION_ACTION = {0: Action.hold, 1: Action.reject, 2: Action.discard}
#: generic_nonmember_action: 2.1's "accept" lets the post on to the other rules (defer)
NONMEMBER_ACTION = {0: Action.defer, 1: Action.hold, 2: Action.reject, 3: Action.discard}
DMARC_ACTION = {
    0: DMARCMitigateAction.no_mitigation,
    1: DMARCMitigateAction.munge_from,
    2: DMARCMitigateAction.wrap_message,
    3: DMARCMitigateAction.reject,
    4: DMARCMitigateAction.discard,
}
FILTER_ACTION = {
    0: FilterAction.discard,
    1: FilterAction.reject,
    2: FilterAction.forward,
    3: FilterAction.preserve,
}
ROSTER = {0: RosterVisibility.public, 1: RosterVisibility.members, 2: RosterVisibility.moderators}
SUBSCRIBE_POLICY = {
    0: SubscriptionPolicy.open,
    1: SubscriptionPolicy.confirm,
    2: SubscriptionPolicy.moderate,
    3: SubscriptionPolicy.confirm_then_moderate,
}
#: unsubscribe_policy: 1 = the moderators approve; 0 = the member confirms by mail
UNSUBSCRIBE_POLICY = {0: SubscriptionPolicy.confirm, 1: SubscriptionPolicy.confirm_then_moderate}
REPLY_TO = {
    0: ReplyToMunging.no_munging,
    1: ReplyToMunging.point_to_list,
    2: ReplyToMunging.explicit_header,
}
PERSONALIZE = {0: Personalization.none, 1: Personalization.individual, 2: Personalization.full}
DIGEST_FREQUENCY = {
    0: DigestFrequency.yearly,
    1: DigestFrequency.monthly,
    2: DigestFrequency.quarterly,
    3: DigestFrequency.weekly,
    4: DigestFrequency.daily,
}
NEWS_MODERATION = {
    0: NewsgroupModeration.none,
    1: NewsgroupModeration.open_moderated,
    2: NewsgroupModeration.moderated,
}
AUTORESPOND_REQUESTS = {
    0: ResponseAction.none,
    1: ResponseAction.respond_and_discard,
    2: ResponseAction.respond_and_continue,
}
#: header_filter_rules actions: 0 defer, 2 reject, 3 discard, 6 accept, 7 hold; 1
#: (approve), 4 (subscribe) and 5 (unsubscribe) have no counterpart
HEADER_ACTION: dict[int, Action | None] = {
    0: None,
    2: Action.reject,
    3: Action.discard,
    6: Action.accept,
    7: Action.hold,
}


def flag(value: Any) -> bool:
    return bool(value)


def number(value: Any, default: int = 0) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def lines_of(value: Any) -> list[str]:
    if isinstance(value, str):
        return [line.strip() for line in value.splitlines() if line.strip()]
    if isinstance(value, (list, tuple)):
        return [str(v).strip() for v in value if str(v).strip()]
    return []


def when(value: Any) -> datetime | None:
    if isinstance(value, (int, float)) and value > 0:
        try:
            return datetime.fromtimestamp(float(value), UTC)
        except (OverflowError, OSError, ValueError):
            return None
    return None
