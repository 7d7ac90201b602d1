"""Bounce scores, as Mailman 3 keeps them: what one bounce does to a member, and what the
periodic check does to a member whose delivery bounces disabled.  Pure decisions; the
database side is :mod:`mtaplugin.bounces.processing` and :mod:`mtaplugin.bounces.warnings`.

One bounce (a :class:`~mtaplugin.model.BounceEvent` of kind ``hard``; policy refusals and
delay notices change nothing):

- raises the member's score by one, at most once per day (the day of the last bounce
  counted); a score whose last bounce is older than ``bounce_info_stale_after`` starts
  again at 1;
- at ``bounce_score_threshold`` disables delivery, or, with ``[bounces] verp_probes``,
  sends a probe first, and then only the probe's own bounce disables;
- counts nothing for a member whose delivery is already off (disabled by bounces, by
  themselves or by a moderator): they get no mail, so a late bounce says nothing new.

Then, every ``bounce_you_are_disabled_warnings_interval``, a warning, until
``bounce_you_are_disabled_warnings`` were sent; one interval after the last one, removal.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from mtaplugin.enums import BounceContext, BounceKind


class Act(StrEnum):
    """What a bounce makes happen besides the score."""

    #: nothing more
    none = "none"
    #: send the member a VERP probe (the score reached the threshold, probes are on)
    probe = "probe"
    #: disable the member's delivery (``by_bounces``)
    disable = "disable"


@dataclass(frozen=True)
class Standing:
    """A member's bounce record."""

    score: int
    last_bounce_received: datetime | None
    #: whether the member's delivery is on (the member-level status: enabled or unset)
    delivering: bool


@dataclass(frozen=True)
class Rules:
    """The list's bounce settings (and the site's ``verp_probes``)."""

    threshold: int
    stale_after: timedelta
    probes: bool


@dataclass(frozen=True)
class Decision:
    score: int
    last_bounce_received: datetime | None
    #: whether the score went up (the owners hear of it with
    #: ``bounce_notify_owner_on_bounce_increment``)
    counted: bool
    act: Act = Act.none


def decide(
    standing: Standing, at: datetime, kind: BounceKind, context: BounceContext, rules: Rules
) -> Decision:
    """What a bounce received ``at`` does to a member of ``standing``."""
    unchanged = Decision(standing.score, standing.last_bounce_received, counted=False)
    if kind is not BounceKind.hard or not standing.delivering:
        return unchanged
    if context is BounceContext.probe:
        # Only a probe's bounce proves the address dead after the score said so.
        return Decision(standing.score, standing.last_bounce_received, False, Act.disable)
    last = standing.last_bounce_received
    if standing.score > 0 and last is not None and at.date() <= last.date():
        return unchanged
    score = 1 if last is None or last + rules.stale_after < at else standing.score + 1
    newest = at if last is None or at > last else last
    if score < rules.threshold:
        return Decision(score, newest, True)
    return Decision(score, newest, True, Act.probe if rules.probes else Act.disable)


class Step(StrEnum):
    """What the periodic check does to a member whose delivery bounces disabled."""

    wait = "wait"
    warn = "warn"
    remove = "remove"


def warning_step(
    sent: int, last_sent: datetime | None, now: datetime, warnings: int, interval: timedelta
) -> Step:
    """After ``sent`` warnings, the last at ``last_sent``: another one, removal, or wait."""
    if last_sent is not None and now < last_sent + interval:
        return Step.wait
    return Step.remove if sent >= warnings else Step.warn
