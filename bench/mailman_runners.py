"""GNU Mailman 3.3.10 running its list runners behind the bench's private Postfix, for
``bench/vs_mailman.py``: its configuration (on its defaults, or tuned as its
``schema.cfg`` documents), its database seeded with the bench's lists (the members as
copies of rows, bench/mailman_side.py), its start and stop, and its process tree.

Mailman is never a dependency: it runs from the throw-away virtualenv of
``mtaplugin.testing.mailman_venv``.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from mailman_side import _copy_rows

from mtaplugin.testing import free_port, wait_for_port
from mtaplugin.testing.benchdb import tree_pids
from mtaplugin.testing.mailman_venv import mailman_venv
from mtaplugin.testing.postfix import PrivatePostfix
from mtaplugin.testing.process import stop_group

MAILMAN_CFG = """\
[mailman]
layout: here
site_owner: postmaster@{domain}

[paths.here]
var_dir: {var}

[mta]
incoming: mailman.mta.postfix.LMTP
outgoing: mailman.mta.deliver.deliver
lmtp_host: 127.0.0.1
lmtp_port: {lmtp}
smtp_host: 127.0.0.1
smtp_port: {smtp}
configuration: {postfix_cfg}

[webservice]
hostname: 127.0.0.1
port: {rest}
"""

#: what Mailman's schema.cfg documents for throughput: runner slices (a power of 2), more
#: recipients per SMTP transaction (Postfix takes 1000), shorter queue-scan sleeps
MAILMAN_TUNED = """
[mta]
max_recipients: 1000

[runner.in]
instances: 2
sleep_time: 0.1s

[runner.pipeline]
instances: 2
sleep_time: 0.1s

[runner.out]
instances: 4
sleep_time: 0.1s
"""

_MAILMAN_SEED = """
import sys
from mailman.core.initialize import initialize
initialize(sys.argv[1])
from mailman.app.lifecycle import create_list
from mailman.config import config
from mailman.interfaces.domain import IDomainManager
from mailman.interfaces.usermanager import IUserManager
from mailman.utilities.datetime import now
from zope.component import getUtility
getUtility(IDomainManager).add(sys.argv[2])
address = getUtility(IUserManager).create_address(sys.argv[3], "Poster")
address.verified_on = now()
for name in sys.argv[4:]:
    mlist = create_list(name)
    mlist.send_welcome_message = False
    mlist.subscribe(address)
config.db.commit()
"""


class Mailman:
    """Mailman's lists ``bench@`` and ``big@`` of ``domain``, taking posts over LMTP and
    submitting its copies to ``postfix``'s listener at ``smtp_port``."""

    def __init__(self, root: Path, postfix: PrivatePostfix, smtp_port: int, domain: str) -> None:
        self.venv = mailman_venv()
        self.root = root
        self.domain = domain
        self.smtp_port = smtp_port
        self.var = root / "var"
        self.cfg = root / "mailman.cfg"
        self.lmtp_port = free_port()
        self.rest_port = free_port()
        self.postfix = postfix
        self.process: subprocess.Popen[bytes] | None = None
        root.mkdir(parents=True, exist_ok=True)
        postmap = root / "postmap"
        postmap.write_text(f'#!/bin/sh\nexec /usr/sbin/postmap -c {postfix.conf} "$@"\n')
        postmap.chmod(0o755)
        (root / "postfix.cfg").write_text(
            f"[postfix]\npostmap_command: {postmap}\ntransport_file_type: hash\n"
        )

    def configure(self, tuned: bool) -> None:
        text = MAILMAN_CFG.format(
            domain=self.domain,
            var=self.var,
            lmtp=self.lmtp_port,
            smtp=self.smtp_port,
            postfix_cfg=self.root / "postfix.cfg",
            rest=self.rest_port,
        )
        self.cfg.write_text(text + (MAILMAN_TUNED if tuned else ""))

    def seed(
        self,
        poster: str,
        n_members: int,
        n_big: int,
        member: Callable[[int], str],
        big_member: Callable[[int], str],
    ) -> None:
        """The lists, ``poster`` subscribed the Mailman way, the other members as copies of
        its rows (``member(i)`` and ``big_member(i)`` name them)."""
        self.configure(tuned=False)
        python = str(self.venv / "bin" / "python")
        subprocess.run(
            [python, "-c", _MAILMAN_SEED, str(self.cfg), self.domain, poster,
             f"bench@{self.domain}", f"big@{self.domain}"],
            check=True,
            timeout=600,
        )  # fmt: skip
        db = self.var / "data" / "mailman.db"
        _copy_rows(db, f"bench.{self.domain}", n_members, 0, self.domain, email=member)
        _copy_rows(db, f"big.{self.domain}", n_big, 0, self.domain, email=big_member)
        # Postfix's unprivileged daemons read Mailman's maps (Mailman's umask is 007)
        for d in (self.root, self.var, self.var / "data"):
            d.chmod(0o755)
        for name in ("postfix_lmtp", "postfix_domains"):
            for path in self.var.glob(f"data/{name}*"):
                path.chmod(0o644)

    @property
    def maps(self) -> tuple[str, str]:
        data = self.var / "data"
        return f"hash:{data}/postfix_domains", f"hash:{data}/postfix_lmtp"

    def start(self, tuned: bool) -> None:
        self.configure(tuned)
        log = open(self.root / "master.out", "ab")  # noqa: SIM115 - owned by the child
        self.process = subprocess.Popen(
            [str(self.venv / "bin" / "master"), "-C", str(self.cfg)],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=self.root,
        )
        log.close()
        wait_for_port(self.lmtp_port, timeout=180)

    def stop(self) -> None:
        stop_group(self.process, 30)
        self.process = None
        # a runner killed mid-message would leave it for the next start
        for queue in ("in", "pipeline", "out", "retry"):
            shutil.rmtree(self.var / "queue" / queue, ignore_errors=True)

    def tree(self) -> list[int]:
        return tree_pids(self.process.pid) if self.process is not None else []
