"""Translatable text.

Every message meant for a person goes through ``_()``, which translates into the language
of the current context: :func:`using` sets it for a block (a notice to a German member is
built inside ``with using("de"):``), and :func:`set_default_language` sets the process's
default (``site.default_language``, used for SMTP replies and the CLI).

Catalogs are Babel/gettext ``.po`` files in ``mtaplugin/locale/<lang>/LC_MESSAGES/
mtaplugin.po``.  They are read at run time with :mod:`babel.messages.pofile` and compiled
in memory once per process, so an editable install (``pip install -e``) needs no build step
and a corrected ``.po`` takes effect at the next start.  Fuzzy and empty entries are not
used (the English source text is).  ``python -m mtaplugin.i18n.tools update`` extracts the
``_()`` calls and the Jinja2 notice templates and merges new messages into every catalog.
"""

from __future__ import annotations

import gettext
import io
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache
from pathlib import Path

LOCALE_DIR = Path(__file__).parent.parent / "locale"
DOMAIN = "mtaplugin"
#: the languages whose catalogs ship with mtaplugin (English is the source language)
SOURCE_LANGUAGE = "en"
#: the languages shipped with complete catalogs (``en`` too, so that a site can reword)
SHIPPED_LANGUAGES = (
    "ca",
    "cs",
    "da",
    "de",
    "en",
    "es",
    "fi",
    "fr",
    "hu",
    "it",
    "ja",
    "nl",
    "pl",
    "pt_BR",
    "ru",
    "sv",
    "zh_CN",
)

_current: ContextVar[str | None] = ContextVar("mtaplugin_language", default=None)
_default = [SOURCE_LANGUAGE]


def catalog_path(language: str) -> Path:
    return LOCALE_DIR / language / "LC_MESSAGES" / f"{DOMAIN}.po"


def available_languages() -> tuple[str, ...]:
    """The source language and every language with a catalog, sorted (the locale
    directory is read again only when its entries change: every notice asks)."""
    try:
        stamp = LOCALE_DIR.stat().st_mtime_ns
    except OSError:
        return (SOURCE_LANGUAGE,)
    return _languages_in(LOCALE_DIR, stamp)


@cache
def _languages_in(locale_dir: Path, _stamp: int) -> tuple[str, ...]:
    found = {SOURCE_LANGUAGE}
    found.update(p.name for p in locale_dir.iterdir() if catalog_path(p.name).is_file())
    return tuple(sorted(found))


def check_language(value: object, field: str = "preferred_language") -> str:
    """``value`` as a language code that has a catalog here; :class:`InvalidInput` naming
    ``field`` and the available languages otherwise (a list or member language without a
    catalog would silently get notices in another language)."""
    from mtaplugin.errors import InvalidInput

    code = str(value or "").strip()
    available = available_languages()
    if code not in available:
        message = _("unknown language {value!r}; available: {choices}")
        raise InvalidInput.not_one_of(field, message, code, available)
    return code


#: region or script subtags of Chinese written in Traditional characters: a reader who asks
#: for one of them is not given the Simplified (``zh_CN``) catalog
_TRADITIONAL_CHINESE = frozenset({"tw", "hk", "mo", "hant"})


def match_language(tag: str | None, available: Iterable[str] | None = None) -> str | None:
    """The catalog in ``available`` that serves the language tag ``tag``, or None.

    Tags are compared without regard to case or ``-``/``_`` (``zh-cn``, ``zh_CN.UTF-8`` and
    ``ZH-CN`` are ``zh_CN``); a regional tag falls back to its language (``de-CH`` → ``de``),
    and a bare language to its one regional catalog (``zh`` → ``zh_CN``, ``pt`` → ``pt_BR``;
    Traditional Chinese tags such as ``zh-TW`` do not get ``zh_CN``)."""
    code = (tag or "").split(".", 1)[0].split("@", 1)[0].strip().replace("-", "_").lower()
    if not code:
        return None
    languages = available_languages() if available is None else available
    by_key = {lang.lower(): lang for lang in languages}
    if code in by_key:
        return by_key[code]
    base, _sep, rest = code.partition("_")
    if base in by_key:
        return by_key[base]
    if base == "zh" and _TRADITIONAL_CHINESE & set(rest.split("_")):
        return None
    regional = sorted(lang for key, lang in by_key.items() if key.partition("_")[0] == base)
    return regional[0] if regional else None


def normalize_language(language: str | None) -> str:
    """``de_DE.UTF-8`` / ``de-de`` → ``de`` when only ``de`` ships, ``zh-cn`` → ``zh_CN``;
    unknown → the default."""
    return match_language(language, available_languages()) or _default[0]


@cache
def translation(language: str) -> gettext.NullTranslations:
    """The translations of ``language`` (a NullTranslations when it has no catalog)."""
    path = catalog_path(language)
    if not path.is_file():
        return gettext.NullTranslations()
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po
    from babel.support import Translations

    with path.open("rb") as fh:
        catalog = read_po(fh, locale=language, domain=DOMAIN)
    buf = io.BytesIO()
    write_mo(buf, catalog)
    buf.seek(0)
    return Translations(buf, domain=DOMAIN)


def set_default_language(language: str) -> None:
    """The process's language when no :func:`using` block says otherwise."""
    _default[0] = SOURCE_LANGUAGE  # so that an unknown language falls back to English
    _default[0] = normalize_language(language)


def current_language() -> str:
    return _current.get() or _default[0]


@contextmanager
def using(language: str | None) -> Iterator[str]:
    """Translate ``_()`` into ``language`` inside the block; yields the language used."""
    lang = normalize_language(language)
    token = _current.set(lang)
    try:
        yield lang
    finally:
        _current.reset(token)


def _(text: str) -> str:
    """Mark ``text`` for translation and translate it into the current language."""
    return translation(current_language()).gettext(text)


def N_(text: str) -> str:
    """Mark ``text`` for translation without translating it (module-level tables whose
    texts are translated when they are shown, in the reader's language)."""
    return text
