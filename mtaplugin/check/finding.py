"""One finding of ``mtaplugin check``: how bad, what was checked, what was found, and what
the admin does about it."""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass
from typing import Any


class Level(enum.IntEnum):
    """How bad a finding is; ``error`` makes ``mtaplugin check`` exit 1."""

    ok = 0
    warning = 1
    error = 2


@dataclass(frozen=True)
class Finding:
    level: Level
    #: what was checked, a short stable name (``milter.socket``, ``database.schema``)
    check: str
    #: what was found, for the admin
    found: str
    #: what to do; empty when nothing needs doing
    fix: str = ""

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["level"] = self.level.name
        return data


def ok(check: str, found: str) -> Finding:
    return Finding(Level.ok, check, found)


def warning(check: str, found: str, fix: str) -> Finding:
    return Finding(Level.warning, check, found, fix)


def error(check: str, found: str, fix: str) -> Finding:
    return Finding(Level.error, check, found, fix)


def worst(findings: list[Finding]) -> Level:
    return max((f.level for f in findings), default=Level.ok)
