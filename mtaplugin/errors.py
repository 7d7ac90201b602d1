"""The exceptions of mtaplugin, and what each means to the person who sees it.

    MtapluginError
    ├── ConfigError            a setting is wrong; names the key (refused at start)
    ├── TryLater               4xx: the database or DNS cannot answer now; nothing changed
    │   └── DatabaseUnavailable
    ├── NotAllowed             the one asking may not do this (403); nothing changed
    └── InvalidInput           a CLI/REST value is wrong; names the field; nothing changed
        ├── NotFound           the named domain, list, member... does not exist
        └── AlreadyExists      it exists already

The SMTP front ends map ``TryLater`` to a 451 reply; the CLI prints the message and exits 1.
"""

from __future__ import annotations

from collections.abc import Iterable


class MtapluginError(Exception):
    """Base class of every error that mtaplugin raises on purpose."""


class ConfigError(MtapluginError):
    def __init__(self, key: str, problem: str) -> None:
        super().__init__(f"{key}: {problem}")
        self.key = key
        self.problem = problem


class TryLater(MtapluginError):
    """A temporary failure: the sender should retry (SMTP 4xx)."""


class DatabaseUnavailable(TryLater):
    pass


class DatabaseBusy(DatabaseUnavailable):
    """SQLite's write lock could not be had ("database is locked"): the transaction was
    rolled back and may be run again at once."""


class NotAllowed(MtapluginError):
    """A rule of who may do what, kept in ``manage/`` so that the web and REST share it."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


class InvalidInput(MtapluginError):
    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem

    @classmethod
    def not_one_of(
        cls, field: str, message: str, value: object, choices: Iterable[str]
    ) -> InvalidInput:
        """``value`` refused for ``field`` with ``message`` (a translated text with
        ``{value!r}`` and ``{choices}``), which names the choices."""
        return cls(field, message.format(value=value, choices=", ".join(choices)))


class NotFound(InvalidInput):
    pass


class AlreadyExists(InvalidInput):
    pass
