"""An in-memory :class:`~mtaplugin.news.NewsServer` for the unit tests: groups of numbered
articles, and errors to raise on demand.  (The real INN runs in tests/integration.)"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from mtaplugin.news import GroupStatus, NewsError


@dataclass
class FakeNews:
    #: group name -> {article number: article}
    groups: dict[str, dict[int, bytes]] = field(default_factory=dict)
    #: raised by the next GROUP (then cleared)
    group_error: NewsError | None = None
    #: article number -> error ARTICLE raises for it (then cleared)
    article_errors: dict[int, NewsError] = field(default_factory=dict)
    #: called before ARTICLE answers (a racing runner can run here)
    before_article: Callable[[int], None] | None = None
    sessions: int = 0
    fetched: list[int] = field(default_factory=list)
    _selected: str = ""

    def add(self, group: str, article: bytes) -> int:
        arts = self.groups.setdefault(group, {})
        number = max(arts, default=0) + 1
        arts[number] = article
        return number

    def __call__(self) -> FakeNews:
        """The factory the gateway takes: one session."""
        return self

    def __enter__(self) -> FakeNews:
        self.sessions += 1
        return self

    def __exit__(self, *exc: object) -> None:
        self._selected = ""

    def post(self, article: bytes) -> None:
        raise NewsError("posting not allowed", temporary=False)

    def group(self, name: str) -> GroupStatus:
        if self.group_error is not None:
            error, self.group_error = self.group_error, None
            raise error
        if name not in self.groups:
            raise NewsError(f"411 no such group {name}", temporary=False)
        self._selected = name
        arts = self.groups[name]
        return GroupStatus(len(arts), min(arts, default=1), max(arts, default=0))

    def article(self, number: int) -> bytes | None:
        if number in self.article_errors:
            raise self.article_errors.pop(number)
        if self.before_article is not None:
            hook, self.before_article = self.before_article, None
            hook(number)
        self.fetched.append(number)
        return self.groups[self._selected].get(number)
