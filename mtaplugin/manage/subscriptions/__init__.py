"""Subscription and unsubscription workflows, as state machines persisted in SQL.

The one way in and out of a list's membership: the email commands, the ``-join``/
``-leave``/``-confirm`` addresses, the web's subscribe, confirmation, one-click and admin
pages (one member or a mass (un)subscription), REST (``POST /members``, the member and
roster DELETEs, the ``requests`` resources) and the CLI all call these entry points.
Each waiting step is a :class:`~mtaplugin.model.PendingRequest` in the one store
(:mod:`mtaplugin.manage.pending`):

=========== ============ ===================================================================
step        token_owner  waits for
=========== ============ ===================================================================
confirm     subscriber   the person to reply to ``list-confirm+TOKEN@`` (or send
                         ``confirm TOKEN``, or press the web page's button); expires after
                         ``pending_life`` (``[rules] pending_request_life``, 3 days)
moderate    moderator    a moderator's accept/reject/discard/defer (web, REST, CLI, an
                         authenticated reply); expires after ``moderator_life`` (180 days)
=========== ============ ===================================================================

Policies (``subscription_policy`` / ``unsubscription_policy``) name their steps in one
table (:data:`~.steps.STEPS`): ``open`` acts at once, ``confirm`` waits for the person,
``moderate`` for a moderator, ``confirm_then_moderate`` for both, in that order.  An
address that was never verified, or a request made by someone who has not shown the
address is theirs (the public web page: ``must_confirm``), is confirmed first whatever the
policy.  An invitation sends ``list:user:action:invite`` and subscribes when the invitee
accepts, without moderation.

Every join refuses a banned address (:func:`mtaplugin.manage.bans.is_banned`).  The last
step sends what the list says (``send_welcome_message``, ``send_goodbye_message``,
``admin_notify_mchanges``), unless the caller overrides it (the CLI's ``--welcome-msg``,
``--goodbye-msg``, ``--admin-notify``); a request waiting for a moderator notifies the
list's owners and moderators (or the site owner).  Tokens are single use and replaced at
every step, so a token seen by the subscriber cannot approve the moderation step.
Everything a step does (the member row, the notices in the outbox, the audit entry) is in
the caller's transaction.
"""

from mtaplugin.manage.pending import Lifetimes
from mtaplugin.manage.subscriptions.batches import batch_token, notify_batch
from mtaplugin.manage.subscriptions.moderate import (
    MODERATOR_ACTIONS,
    confirm,
    get_pending,
    moderate,
    pending_requests,
)
from mtaplugin.manage.subscriptions.steps import (
    DEFAULTS,
    STEPS,
    AlreadyMember,
    AlreadyPending,
    Banned,
    NotAMember,
    Status,
    Step,
    WorkflowSettings,
)
from mtaplugin.manage.subscriptions.subscribe import (
    MassSubscription,
    mass_subscribe,
    request_subscription,
)
from mtaplugin.manage.subscriptions.unsubscribe import mass_unsubscribe, request_unsubscription

__all__ = [
    "DEFAULTS",
    "MODERATOR_ACTIONS",
    "STEPS",
    "AlreadyMember",
    "AlreadyPending",
    "Banned",
    "Lifetimes",
    "MassSubscription",
    "NotAMember",
    "Status",
    "Step",
    "WorkflowSettings",
    "batch_token",
    "confirm",
    "get_pending",
    "mass_subscribe",
    "mass_unsubscribe",
    "moderate",
    "notify_batch",
    "pending_requests",
    "request_subscription",
    "request_unsubscription",
]
