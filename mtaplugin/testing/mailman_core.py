"""A private GNU Mailman 3.3.10 core for the tests (never a dependency of mtaplugin, never
imported by it): its REST API served by gunicorn as Mailman serves it, its state (SQLite,
queues) under a directory of the test's, and Python scripts run under Mailman's own
interpreter for what Mailman does only in its runners (holding a post, archiving).

``hyperkitty=(base_url, key)`` turns on the ``mailman-hyperkitty`` archiver plugin (the
one a stock suite runs), installed beside the cached Mailman virtualenv (on its Python
path, not into it: :func:`mailman_hyperkitty`), so that the archive runner hands each
post to HyperKitty's archiving API as on a real site.
"""

from __future__ import annotations

import email
import mailbox
import os
import signal
import subprocess
import tempfile
import textwrap
from email.message import Message
from email.policy import compat32
from pathlib import Path
from typing import Any

from mtaplugin.testing import free_port, wait_for_port
from mtaplugin.testing.debpkg import CACHE
from mtaplugin.testing.mailman_venv import CONFIG, mailman_venv
from mtaplugin.testing.venvs import clean_env, made_once

#: the archiver plugin of a stock Mailman 3 suite (an sdist only: built once, kept in CACHE)
MAILMAN_HYPERKITTY = "1.2.1"

_SERVE = """
import sys
from mailman.core.initialize import initialize
initialize(sys.argv[1])
from mailman.rest.gunicorn import make_gunicorn_server
make_gunicorn_server().run()
"""

#: a post held on a list by Mailman's own code (as its incoming runner would hold it)
HOLD = r"""
import sys
from email import message_from_string
from mailman.core.initialize import initialize
initialize(sys.argv[1])
from mailman.app.moderator import hold_message
from mailman.config import config
from mailman.email.message import Message
from mailman.interfaces.listmanager import IListManager
from zope.component import getUtility
name = sys.argv[2] if len(sys.argv) > 2 else "dev@example.com"
message_id = sys.argv[3] if len(sys.argv) > 3 else "<held-1@example.net>"
mlist = getUtility(IListManager).get(name)
msg = message_from_string(
    f"From: stranger@example.net\nTo: {name}\nSubject: Held for you\n"
    f"Message-ID: {message_id}\n\nHello, anyone?\n", Message)
hold_message(mlist, msg, {}, "The message is not from a list member")
config.db.commit()
"""

#: the posts in the files named after the configuration, each injected into its list's
#: incoming queue (``LIST FILE`` pairs); then the incoming, pipeline and archive runners
#: each go through their queue as under Mailman's master: posts are moderated (held, say)
#: or accepted, and archived (the outgoing runner does not run: nothing is sent)
DELIVER = r"""
import sys
from mailman.core.initialize import initialize
initialize(sys.argv[1])
from mailman.app.inject import inject_message
from mailman.bin.runner import make_runner
from mailman.config import config
from mailman.email.message import Message
from mailman.interfaces.listmanager import IListManager
from email import message_from_binary_file
from zope.component import getUtility
pairs = sys.argv[2:]
for name, path in zip(pairs[::2], pairs[1::2]):
    with open(path, "rb") as f:
        msg = message_from_binary_file(f, Message)
    inject_message(getUtility(IListManager).get(name), msg)
config.db.commit()
for name in ("in", "pipeline", "archive"):
    runner = make_runner(name, None, None)
    while runner.switchboard.files:
        runner._one_iteration()
    runner._clean_up()
"""

#: the messages in one of Mailman's queues (``virgin``: the notices Mailman made, ``out``:
#: the posts to send; the runners that would send them do not run here), printed as
#: mbox; the queue is left as it is
QUEUED = r"""
import os, pickle, sys
from mailman.core.initialize import initialize
initialize(sys.argv[1])
from mailman.config import config
queue = config.switchboards[sys.argv[2]]
for filebase in queue.files:
    with open(os.path.join(queue.queue_directory, filebase + ".pck"), "rb") as f:
        msg = pickle.load(f)
    sys.stdout.write("From mailman@localhost Thu Jan  1 00:00:00 1970\n")
    sys.stdout.write(msg.as_string().replace("\nFrom ", "\n>From ") + "\n\n")
"""


def mailman_hyperkitty() -> Path:
    """A directory holding the ``mailman_hyperkitty`` package, for Mailman's Python path;
    built once with the Mailman virtualenv's pip (its dependencies, ``requests`` and
    Mailman, are in that virtualenv)."""
    root = CACHE / f"mailman-hyperkitty-{MAILMAN_HYPERKITTY}"
    pip = mailman_venv() / "bin/pip"
    return made_once(
        root,
        lambda: subprocess.run(
            [str(pip), "install", "--quiet", "--no-deps", "--upgrade", "--target", str(root),
             f"mailman-hyperkitty=={MAILMAN_HYPERKITTY}"],
            check=True, env=clean_env(), timeout=600,
        ),
    )  # fmt: skip


class MailmanCore:
    """Mailman under ``var``: :meth:`start` serves its REST API (``admin_user`` restadmin,
    ``admin_pass`` restpass) on a free port; :meth:`script` runs Python under Mailman's
    interpreter with the configuration file as its first argument."""

    def __init__(self, var: Path, hyperkitty: tuple[str, str] | None = None) -> None:
        self.venv = mailman_venv()
        self.var = var
        self.port = free_port()
        self.plugin = mailman_hyperkitty() if hyperkitty else None
        var.mkdir(parents=True, exist_ok=True)
        self.config = var / "mailman.cfg"
        text = CONFIG.format(var=var / "var") + textwrap.dedent(f"""
            [webservice]
            hostname: 127.0.0.1
            port: {self.port}
            workers: 2
            show_tracebacks: no
            """)
        if hyperkitty:
            base_url, key = hyperkitty
            plugin_cfg = var / "mailman-hyperkitty.cfg"
            plugin_cfg.write_text(f"[general]\nbase_url: {base_url}\napi_key: {key}\n")
            text += textwrap.dedent(f"""
                [archiver.hyperkitty]
                class: mailman_hyperkitty.Archiver
                enable: yes
                configuration: {plugin_cfg}
                """)
        self.config.write_text(text)
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The REST API's 3.1 root."""
        return f"http://127.0.0.1:{self.port}/3.1"

    def env(self) -> dict[str, str]:
        env = clean_env()
        if self.plugin is not None:
            env["PYTHONPATH"] = str(self.plugin)
        return env

    def start(self, wait: bool = True) -> MailmanCore:
        """Start serving the REST API; ``wait=False``: do not wait until it answers
        (:meth:`wait` does), to get something else done meanwhile."""
        with open(self.var / "gunicorn.log", "ab") as log:
            self.proc = subprocess.Popen(
                [str(self.venv / "bin/python"), "-c", textwrap.dedent(_SERVE), str(self.config)],
                stdout=subprocess.DEVNULL,
                stderr=log,
                start_new_session=True,
                env=self.env(),
            )
        return self.wait() if wait else self

    def wait(self) -> MailmanCore:
        try:
            wait_for_port(self.port, timeout=120)
        except TimeoutError:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        if self.proc is None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        self.proc = None

    def script(self, code: str, *argv: str, timeout: float = 300) -> str:
        """Run ``code`` under Mailman's Python (``sys.argv[1]``: the configuration file);
        its standard output."""
        done = subprocess.run(
            [str(self.venv / "bin/python"), "-c", textwrap.dedent(code), str(self.config), *argv],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=self.env(),
        )
        if done.returncode != 0:
            raise RuntimeError(f"Mailman script failed: {done.stderr[-4000:]}")
        return done.stdout

    def queued(self, queue: str) -> list[Message]:
        """The messages in Mailman's queue ``queue`` (``virgin``, ``out``...)."""
        with tempfile.TemporaryDirectory() as work:
            path = Path(work) / "queue.mbox"
            path.write_text(self.script(QUEUED, queue))
            return [email.message_from_bytes(m.as_bytes(), policy=compat32)
                    for m in mailbox.mbox(str(path))]  # fmt: skip

    def client(self) -> Any:
        """A mailmanclient ``Client`` on the REST API."""
        from mailmanclient import Client

        return Client(self.url, "restadmin", "restpass")
