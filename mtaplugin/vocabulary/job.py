"""What a periodic job is.

A job's function gets a :class:`JobContext` (the world and the time the run is for) and
answers how many things it did (held posts discarded, warnings sent, rows removed...),
which ``mtaplugin jobs list`` shows.  It opens its own database transactions through
``ctx.world.sessions``; work that must not be done twice after a kill -9 marks each item
done in the same transaction as the item's effect (a warning row and its counter, a
discarded post and its audit entry), so that a run cut short is simply run again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mtaplugin.wiring import World


@dataclass(frozen=True)
class JobContext:
    world: World
    #: the time of this run (the world's clock, read once)
    now: datetime


@dataclass(frozen=True)
class Job:
    #: the name ``mtaplugin jobs run NAME`` takes, e.g. "bounces", "pending-reminders"
    name: str
    #: how often it runs (across all hosts on one database)
    every: timedelta
    run: Callable[[JobContext], int]
    #: one line for ``mtaplugin jobs list``
    doc: str
