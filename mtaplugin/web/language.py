"""The language of a page: the user's preference, else the browser's Accept-Language,
else ``site.default_language``; only languages with a catalog (or English) are chosen."""

from __future__ import annotations

from functools import cache

from mtaplugin import i18n


@cache
def available() -> frozenset[str]:
    """English and every language with a catalog (``.po`` read at run time, or ``.mo``)."""
    langs = {"en"}
    if i18n.LOCALE_DIR.is_dir():
        for p in i18n.LOCALE_DIR.iterdir():
            catalog = p / "LC_MESSAGES" / i18n.DOMAIN
            if catalog.with_suffix(".po").is_file() or catalog.with_suffix(".mo").is_file():
                langs.add(p.name)
    return frozenset(langs)


def parse_accept_language(header: str) -> list[str]:
    """Language tags by preference (q values), e.g. ``de-CH,de;q=0.9,en;q=0.5``."""
    ranked: list[tuple[float, int, str]] = []
    for n, item in enumerate(header.split(",")):
        tag, _semi, params = item.strip().partition(";")
        tag = tag.strip().lower()
        if not tag or tag == "*":
            continue
        q = 1.0
        for param in params.split(";"):
            key, _eq, value = param.strip().partition("=")
            if key.strip() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        if q > 0:
            ranked.append((-q, n, tag))
    return [tag for _q, _n, tag in sorted(ranked)]


def choose(preference: str | None, accept_language: str, default: str) -> str:
    langs = available()
    candidates = [preference] if preference else []
    candidates += parse_accept_language(accept_language)
    for tag in candidates:
        if not tag:
            continue
        found = i18n.match_language(tag, langs)
        if found:
            return found
    return default if default in langs else "en"
