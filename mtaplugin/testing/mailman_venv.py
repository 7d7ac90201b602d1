"""GNU Mailman 3.3.10 in a throw-away virtualenv, for the tests that compare with it
(never a dependency of mtaplugin, never imported by it): made once under
:data:`mtaplugin.testing.debpkg.CACHE` and reused."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

from mtaplugin.testing.debpkg import CACHE

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
    root = CACHE / f"mailman-{VERSION}-{_VARIANT}-venv"
    done = root / ".installed"
    if done.exists():
        return root
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f"mailman-{VERSION}-{_VARIANT}-venv.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists():
            return root
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(root)], check=True)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        subprocess.run(
            [str(root / "bin/pip"), "install", "--quiet", f"mailman=={VERSION}", *PINS],
            check=True,
            env=env,
        )
        done.touch()
    return root


def configure(var: Path) -> Path:
    """A mailman.cfg for a private Mailman with its state under ``var``."""
    var.mkdir(parents=True, exist_ok=True)
    cfg = var / "mailman.cfg"
    cfg.write_text(CONFIG.format(var=var))
    return cfg
