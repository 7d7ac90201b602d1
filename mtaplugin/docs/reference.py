"""The reference pages under ``docs/reference/``, generated from the tables the code runs on,
so that they cannot drift from it:

- ``settings.md``: every list setting (:mod:`~mtaplugin.docs.settings_page`);
- ``rules.md``: the posting rules and the default refusal texts
  (:mod:`~mtaplugin.docs.rules_page`);
- ``cli.md``: every ``mtaplugin`` command (:mod:`~mtaplugin.docs.cli_page`);
- ``rest.md``: every REST path and method (:mod:`~mtaplugin.docs.rest_page`);
- ``configuration.md``: every key of the configuration file
  (:mod:`~mtaplugin.docs.config_page`);
- ``jobs.md``: the scheduler's periodic jobs (:mod:`~mtaplugin.docs.jobs_page`).

``python -m mtaplugin.docs.reference`` (``make docs``) writes them; ``--check`` only says
which are stale (exit 1).  ``tests/unit/test_docs_reference.py`` fails when a committed
page differs from what this module writes now.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from mtaplugin.docs.cli_page import cli_page
from mtaplugin.docs.config_page import configuration_page
from mtaplugin.docs.jobs_page import jobs_page
from mtaplugin.docs.markdown import REGENERATE
from mtaplugin.docs.rest_page import rest_page
from mtaplugin.docs.rules_page import rules_page
from mtaplugin.docs.settings_page import settings_page
from mtaplugin.i18n import using

#: Where the pages go, relative to the repository's root.
REFERENCE_DIR = Path("docs") / "reference"


PAGES: dict[str, Callable[[], str]] = {
    "settings.md": settings_page,
    "rules.md": rules_page,
    "cli.md": cli_page,
    "rest.md": rest_page,
    "configuration.md": configuration_page,
    "jobs.md": jobs_page,
}


def render() -> dict[str, str]:
    """Every page's text, in the source language (English)."""
    with using("en"):
        return {name: page() for name, page in PAGES.items()}


def stale(directory: Path) -> list[str]:
    """The pages under ``directory`` that are missing or differ from :func:`render`."""
    return [
        name
        for name, text in render().items()
        if not (directory / name).is_file() or (directory / name).read_text() != text
    ]


def write(directory: Path) -> list[str]:
    """Write every page that changed; returns their names."""
    directory.mkdir(parents=True, exist_ok=True)
    changed = []
    for name, text in render().items():
        path = directory / name
        if not path.is_file() or path.read_text() != text:
            path.write_text(text)
            changed.append(name)
    return changed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mtaplugin.docs.reference",
        description="Write docs/reference/ from the code's own tables.",
    )
    parser.add_argument(
        "--out", type=Path, default=REFERENCE_DIR, help=f"directory (default: {REFERENCE_DIR})"
    )
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 when a page is stale"
    )
    args = parser.parse_args(argv)
    if args.check:
        old = stale(args.out)
        for name in old:
            print(f"{args.out / name} is stale: run `{REGENERATE}`", file=sys.stderr)
        return 1 if old else 0
    for name in write(args.out):
        print(f"wrote {args.out / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
