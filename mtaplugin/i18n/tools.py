"""Maintain the translation catalogs.

    python -m mtaplugin.i18n.tools extract   write mtaplugin/locale/mtaplugin.pot
    python -m mtaplugin.i18n.tools update    extract, then merge the template into every
                                             mtaplugin/locale/<lang>/LC_MESSAGES/mtaplugin.po
    python -m mtaplugin.i18n.tools check     list the messages a catalog lacks (exit 1)
    python -m mtaplugin.i18n.tools init LANG start a catalog for a new language

The messages are the ``_()`` calls of the package (Babel's Python extractor) and the
``{% trans %}`` blocks of the notice templates (Jinja2's Babel extractor), and every string
of the data files of :data:`DATA_MESSAGES` (the settings pages' help).  The test
harness (``mtaplugin/testing``) speaks to developers only and is not extracted.  Nothing is
compiled: :mod:`mtaplugin.i18n` reads the ``.po`` files at run time.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_dir, extract_python
from babel.messages.pofile import read_po, write_po

from mtaplugin.i18n import DOMAIN, LOCALE_DIR, SOURCE_LANGUAGE, catalog_path

PACKAGE_DIR = Path(__file__).parent.parent
TEMPLATE_PATH = LOCALE_DIR / f"{DOMAIN}.pot"
METHOD_MAP = [
    ("testing/**.py", "ignore"),
    ("migrations/**.py", "ignore"),
    ("**.py", "python"),
    ("notices/templates/*.txt", "jinja2.ext:babel_extract"),
    ("web/templates/*.html", "jinja2.ext:babel_extract"),
]
#: data files (TOML) whose every string value is a message
DATA_MESSAGES = ["web/setting_help.toml"]
OPTIONS = {
    "notices/templates/*.txt": {"extensions": "jinja2.ext.i18n"},
    "web/templates/*.html": {"extensions": "jinja2.ext.i18n"},
}


def extract() -> Catalog:
    catalog = Catalog(project="mtaplugin", domain=DOMAIN, fuzzy=False)
    for filename, lineno, message, comments, context in extract_from_dir(
        PACKAGE_DIR,
        METHOD_MAP,
        OPTIONS,
        keywords={"_": None, "N_": None, "gettext": None},
        strip_comment_tags=True,
    ):
        catalog.add(message, None, [(filename, lineno)], auto_comments=comments, context=context)
    # The web pages translate with ``gettext(req, "...")`` (the request's language): there the
    # message is the second argument.
    for path in sorted((PACKAGE_DIR / "web").rglob("*.py")):
        with path.open("rb") as fh:
            found = list(extract_python(fh, {"gettext": None}, [], {}))
        page = str(path.relative_to(PACKAGE_DIR))
        for line, _funcname, args, notes in found:
            text = args[1] if isinstance(args, tuple) and len(args) > 1 else None
            if isinstance(text, str) and text:
                catalog.add(text, None, [(page, line)], auto_comments=notes)
    for name in DATA_MESSAGES:
        for line, text in data_messages(PACKAGE_DIR / name):
            catalog.add(text, None, [(name, line)])
    return catalog


def data_messages(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every ``key = "text"`` line of a TOML data file."""
    found = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        _key, equals, value = line.partition(" = ")
        if equals and value.startswith('"'):
            found.append((number, tomllib.loads(f"v = {value}")["v"]))
    return found


def _read(path: Path, language: str) -> Catalog:
    with path.open("rb") as fh:
        return read_po(fh, locale=language, domain=DOMAIN)


def _write(path: Path, catalog: Catalog) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as fh:
        write_po(fh, catalog, width=100, omit_header=False, sort_output=False)


def shipped_languages() -> list[str]:
    return sorted(
        p.name for p in LOCALE_DIR.iterdir() if p.is_dir() and catalog_path(p.name).is_file()
    )


def missing(language: str, template: Catalog | None = None) -> list[str]:
    """The msgids of the template that ``language``'s catalog does not translate."""
    template = template or extract()
    catalog = _read(catalog_path(language), language)
    gaps = []
    for message in template:
        if not message.id:
            continue
        found = catalog.get(message.id)
        if found is None or not found.string or found.fuzzy:
            gaps.append(str(message.id))
    return gaps


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    command = argv[0]
    template = extract()
    if command == "extract":
        _write(TEMPLATE_PATH, template)
        print(f"{len(template)} messages in {TEMPLATE_PATH}")
        return 0
    if command == "init":
        language = argv[1]
        catalog = Catalog(locale=language, domain=DOMAIN, project="mtaplugin")
        catalog.update(template)
        _write(catalog_path(language), catalog)
        return 0
    if command == "update":
        _write(TEMPLATE_PATH, template)
        for language in shipped_languages():
            catalog = _read(catalog_path(language), language)
            catalog.update(template, no_fuzzy_matching=True)
            _write(catalog_path(language), catalog)
            print(f"{language}: {len(missing(language, template))} untranslated")
        return 0
    if command == "check":
        bad = 0
        for language in shipped_languages():
            if language == SOURCE_LANGUAGE:
                continue
            gaps = missing(language, template)
            for msgid in gaps:
                print(f"{language}: missing {msgid!r}")
            bad += len(gaps)
        return 1 if bad else 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
