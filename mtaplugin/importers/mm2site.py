"""A whole Mailman 2.1 site, as ``mtaplugin import mailman2 --site DIR`` reads it: Mailman
2.1's var directory (``/var/lib/mailman``, ``/var/lib/mailman2`` or ``/usr/local/mailman``
as installed), with one directory per list under ``lists/`` holding its ``config.pck``,
and the list's Pipermail mbox, when it kept one, at
``archives/private/LIST.mbox/LIST.mbox``.

A list is named ``LIST@HOST``: its directory's name (Mailman 2.1's internal name) at the
``host_name`` its configuration holds, the domain its mail went to."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mtaplugin.errors import InvalidInput
from mtaplugin.i18n import _
from mtaplugin.vocabulary.addresses import normalize_email


@dataclass(frozen=True)
class SiteList:
    """One list of the site: its internal name, its ``config.pck``, its mbox if any."""

    name: str
    pickle: Path
    archive: Path | None


def site_lists(root: Path) -> tuple[list[SiteList], list[str]]:
    """The lists under ``root/lists`` in name order, and a note for each directory there
    that holds no ``config.pck``."""
    lists_dir = root / "lists"
    if not lists_dir.is_dir():
        raise InvalidInput(
            "site",
            _("{path} has no lists directory: give Mailman 2.1's var directory, "
              "such as /var/lib/mailman").format(path=root),
        )  # fmt: skip
    found: list[SiteList] = []
    notes: list[str] = []
    for directory in sorted(lists_dir.iterdir()):
        if not directory.is_dir():
            continue
        pickle = directory / "config.pck"
        if not pickle.is_file():
            notes.append(_("{path}: no config.pck, skipped").format(path=directory))
            continue
        name = directory.name.lower()
        mbox = root / "archives" / "private" / f"{name}.mbox" / f"{name}.mbox"
        found.append(SiteList(name, pickle, mbox if mbox.is_file() else None))
    if not found:
        raise InvalidInput("site", _("{path} holds no list's config.pck").format(path=lists_dir))
    return found, notes


def address_of(entry: SiteList, configuration: dict[str, Any]) -> str:
    """``LIST@HOST`` for the list ``entry`` whose configuration is ``configuration``."""
    host = str(configuration.get("host_name") or "").strip()
    if not host:
        raise InvalidInput(
            "site",
            _("{path}: the configuration names no host_name: import this list alone, "
              "as LIST@DOMAIN").format(path=entry.pickle),
        )  # fmt: skip
    return normalize_email(f"{entry.name}@{host}", "site")
