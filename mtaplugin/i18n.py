"""Translatable text.

Every message meant for a person goes through ``_()``.  Catalogs live in
``mtaplugin/notices/locale/<lang>/LC_MESSAGES/mtaplugin.mo`` (Babel); without a catalog the
English source text is used.
"""

from __future__ import annotations

import gettext
from functools import cache
from pathlib import Path

LOCALE_DIR = Path(__file__).parent / "notices" / "locale"
DOMAIN = "mtaplugin"


@cache
def translation(language: str) -> gettext.NullTranslations:
    return gettext.translation(DOMAIN, LOCALE_DIR, languages=[language], fallback=True)


def _(text: str) -> str:
    """Mark ``text`` for translation; translated into the process's default language."""
    return translation("en").gettext(text)
