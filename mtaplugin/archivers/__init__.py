"""The archivers of a list, as Mailman 3 names them: the built-in archive
(``mtaplugin``, :mod:`mtaplugin.archive`) and the external ones an archived post is
handed to after the SMTP transaction (:mod:`mtaplugin.archivers.queue`):

- ``hyperkitty``: HyperKitty's archiver API (:mod:`mtaplugin.archivers.hyperkitty`);
- ``mail-archive``: a copy by mail to mail-archive.com, public lists only
  (:mod:`mtaplugin.archivers.mail_archive`);
- ``mhonarc``: a command (MHonArc or any other) fed the post
  (:mod:`mtaplugin.archivers.pipe`).

An archiver is on for a list when the site enables it (``[archivers]``, with what it
needs: an address, a command, a URL) and the list does not turn it off
(``/lists/{list}/archivers``, which, like Mailman 3.3.10's, shows and sets only the
archivers the site enables).  The list's own choices are kept in
``MailingList.archivers``; an archiver it never set is on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mtaplugin.enums import ArchivePolicy

if TYPE_CHECKING:  # the posting core (copies' headers) reads this module: no SQL here
    from mtaplugin.config import ArchiversSettings
    from mtaplugin.model import MailingList

BUILTIN = "mtaplugin"
HYPERKITTY = "hyperkitty"
MAIL_ARCHIVE = "mail-archive"
MHONARC = "mhonarc"
#: the archivers a post is handed to by the ``archivers`` job
EXTERNAL = (HYPERKITTY, MAIL_ARCHIVE, MHONARC)
#: every archiver ``/lists/{list}/archivers`` shows
NAMES = tuple(sorted((BUILTIN, *EXTERNAL)))


def site_enabled(site: ArchiversSettings) -> dict[str, bool]:
    """Which archivers the site enables (and gives what they need)."""
    return {
        BUILTIN: True,
        HYPERKITTY: site.hyperkitty and bool(site.hyperkitty_base_url.strip()),
        MAIL_ARCHIVE: site.mail_archive and bool(site.mail_archive_recipient.strip()),
        MHONARC: site.mhonarc and bool(site.mhonarc_command.strip()),
    }


def list_choice(mlist: MailingList, name: str) -> bool:
    """The list's own choice for archiver ``name`` (True when it never chose)."""
    return bool((mlist.archivers or {}).get(name, True))


def flags(mlist: MailingList, site: ArchiversSettings) -> dict[str, bool]:
    """``/lists/{list}/archivers``: each archiver the site enables, on or off for the list
    (Mailman 3.3.10 shows, and lets a list set, only the archivers its site enables)."""
    on = site_enabled(site)
    return {name: list_choice(mlist, name) for name in NAMES if on[name]}


def builtin_on(mlist: MailingList) -> bool:
    """Whether the built-in archive keeps the list's posts (the list may turn it off)."""
    return list_choice(mlist, BUILTIN)


def handed_to(mlist: MailingList, site: ArchiversSettings) -> list[str]:
    """The external archivers an archived post of ``mlist`` is handed to.  mail-archive.com
    takes only the posts of a public archive (as Mailman's archiver does)."""
    on = flags(mlist, site)
    return [
        name
        for name in EXTERNAL
        if on.get(name, False)
        and (name != MAIL_ARCHIVE or mlist.archive_policy is ArchivePolicy.public)
    ]


__all__ = [
    "BUILTIN",
    "EXTERNAL",
    "HYPERKITTY",
    "MAIL_ARCHIVE",
    "MHONARC",
    "NAMES",
    "builtin_on",
    "flags",
    "handed_to",
    "list_choice",
    "site_enabled",
]
