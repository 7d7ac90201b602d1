"""What a periodic job is.

A job's function gets a :class:`JobContext` (the world and the time the run is for) and
answers how many things it did (held posts discarded, warnings sent, rows removed...),
which ``mtaplugin jobs list`` shows.  It opens its own database transactions through
``ctx.world.sessions``; work that must not be done twice after a kill -9 marks each item
done in the same transaction as the item's effect (a warning row and its counter, a
discarded post and its audit entry), so that a run cut short is simply run again.

The world a job is given is the process's :class:`mtaplugin.wiring.World`, but the
vocabulary names only what most jobs use of it, :class:`JobWorld` (the settings, the
sessions and the clock).  A job that needs more says so in its own layer: ``JobContext[W]``
with ``W`` a protocol (or the world itself) that names the rest, e.g. the DKIM check's
resolver.  The worker's registry holds ``Job[World]``: each job's function accepts a
context of the whole world, which mypy checks structurally.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Generic, Protocol

from typing_extensions import TypeVar

if TYPE_CHECKING:
    from sqlalchemy.orm import Session, sessionmaker

    from mtaplugin.clock import Clock
    from mtaplugin.config import Settings


class JobWorld(Protocol):
    """What a job reads from the world it is given (``mtaplugin.wiring.World`` has it)."""

    @property
    def settings(self) -> Settings: ...

    @property
    def sessions(self) -> sessionmaker[Session]: ...

    @property
    def clock(self) -> Clock: ...


#: the world a context carries (read only: a context of the whole world is a context of
#: any protocol the world satisfies)
W_co = TypeVar("W_co", bound=JobWorld, covariant=True, default=JobWorld)
#: the world a job's function needs (a job that needs less runs in a richer world)
W_contra = TypeVar("W_contra", bound=JobWorld, contravariant=True, default=JobWorld)


@dataclass(frozen=True)
class JobContext(Generic[W_co]):
    world: W_co
    #: the time of this run (the world's clock, read once)
    now: datetime


@dataclass(frozen=True)
class Job(Generic[W_contra]):
    #: the name ``mtaplugin jobs run NAME`` takes, e.g. "bounces", "pending-reminders"
    name: str
    #: how often it runs (across all hosts on one database)
    every: timedelta
    run: Callable[[JobContext[W_contra]], int]
    #: one line for ``mtaplugin jobs list``
    doc: str
