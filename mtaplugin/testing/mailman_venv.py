"""GNU Mailman 3.3.10 in a throw-away virtualenv, for the tests that compare with it
(never a dependency of mtaplugin, never imported by it): made once under
:data:`mtaplugin.testing.debpkg.CACHE` and reused."""

from __future__ import annotations

from pathlib import Path

from mtaplugin.testing.venvs import throwaway_venv

VERSION = "3.3.10"
#: Mailman 3.3.10 predates SQLAlchemy 2.1, which removed ``select_from(<Select>)``: under
#: 2.1 every REST collection Mailman counts that way (the bans, site-wide and per list)
#: answers 500.  Pinned, and the pin is part of the cached virtualenv's name.
PINS = ("sqlalchemy>=2.0,<2.1",)
_VARIANT = "sa20"

#: [mailman] settings for a private instance: SQLite under VAR, no MTA, no runners needed
CONFIG = """\
[mailman]
layout: here
site_owner: postmaster@example.com

[paths.here]
var_dir: {var}

[mta]
incoming: mailman.mta.null.NullMTA

[archiver.mhonarc]
enable: no
[archiver.mail_archive]
enable: no
[archiver.prototype]
enable: no
"""


def mailman_venv() -> Path:
    """The virtualenv's root, with ``bin/mailman``; installed on first use."""
    return throwaway_venv(f"mailman-{VERSION}-{_VARIANT}", [f"mailman=={VERSION}", *PINS])


def configure(var: Path) -> Path:
    """A mailman.cfg for a private Mailman with its state under ``var``."""
    var.mkdir(parents=True, exist_ok=True)
    cfg = var / "mailman.cfg"
    cfg.write_text(CONFIG.format(var=var))
    return cfg
