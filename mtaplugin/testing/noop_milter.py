"""A milter that decides nothing, for measuring what the milter protocol and pymilter cost
(bench/milter_ceiling.py): it redirects every message to one recipient (``delrcpt`` of
each recipient, ``addrcpt`` of ``--to``), as mtaplugin does for a 1-member list, and makes
nothing else of it.

``--callbacks same``: the callbacks and no-reply flags mtaplugin's own milter negotiates
on a unix socket (the message's header fields and body come in, one Python call each, and
are joined at end of message). ``--callbacks lean``: only RCPT and end of message (no
header field, end of headers or body sent at all): the protocol's floor for a milter that
edits recipients, which a list manager cannot use (it must read the post).
With ``same``, mail with no recipient in ``--list-domain`` steps aside at DATA, as
mtaplugin's milter does (the floor under mtaplugin's cost for mail that is not for a list).
``--decorate``: at end of message also the edits of a decorated copy (List-* header
fields added, Subject: changed, the body sent back with a footer).  ``--sign KEY`` (with
``--decorate``): that copy also ARC-sealed and DKIM-signed by mtaplugin's own signer with
the RSA key in the PEM file KEY (``--dkim-only``: the DKIM-Signature alone),
:mod:`mtaplugin.testing.noop_signer`.  ``--lone-to ADDRESS``: a post to ``lone@`` the list
domain goes to ADDRESS instead of ``--to`` (the benches' lone posts, timed at their own
sink).  ``--journal PATH``: the required-work floor: at end of message, before the
edits and the reply, the post is journaled and committed in the SQLite file PATH (or the
PostgreSQL database of the URL ``postgresql://...``) as mtaplugin commits
(:mod:`mtaplugin.testing.noop_journal`); ``--archiver`` also starts
the archiving drain on it (:mod:`mtaplugin.testing.noop_archiver`) as a child, so the
CPU of the milter's process tree is both.  ``--to`` may be given once per member.
``--processes N``: N milter processes on the socket, as mtaplugin's ``milter.processes``.

    python -m mtaplugin.testing.noop_milter unix:/path/noop.sock --to member@example.org
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import Milter
import milter as libmilter

from mtaplugin.config import UnixSocket
from mtaplugin.frontends.milter.daemon import _run
from mtaplugin.frontends.milter.session import FLAGS
from mtaplugin.frontends.sockets import umask_for
from mtaplugin.mailauth.signing import SigningKey
from mtaplugin.testing import noop_journal, noop_signer

_LIST_HEADERS = (
    ("List-Id", "<bench.lists.bench>"),
    ("List-Help", "<mailto:bench-request@lists.bench?subject=help>"),
    ("List-Owner", "<mailto:bench-owner@lists.bench>"),
    ("List-Post", "<mailto:bench@lists.bench>"),
    ("List-Subscribe", "<mailto:bench-join@lists.bench>"),
    ("List-Unsubscribe", "<mailto:bench-leave@lists.bench>"),
    ("Archived-At", "<https://lists.bench/archive/1>"),
    ("Precedence", "list"),
)
_FOOTER = b"_______________________________________________\r\nbench mailing list\r\n"
_SUBJECT = "[bench] A typical post"


class _Base(Milter.Base):
    #: the members every post goes to
    to: tuple[str, ...] = ()
    decorate = False
    #: (``--callbacks same``) the domain whose recipients make a list post
    list_domain = "lists.bench"
    #: ``--sign``: the key that signs the decorated copy; ``seal``: with the ARC set
    key: SigningKey | None = None
    seal = True
    #: ``--lone-to``: where a post to ``lone@`` the list domain goes
    lone_to = ""
    #: ``--journal``: where each post is committed before the reply
    journal: noop_journal.Journal | None = None

    def __init__(self) -> None:
        self.recipients: list[str] = []
        self.chunks: list[bytes] = []

    def _redirect(self) -> int:
        raw = b"".join(self.chunks)
        if self.journal is not None:
            self.journal.record(raw)
        if self.decorate:
            body = raw[raw.find(b"\r\n\r\n") + 4 :] if raw else b""
            for name, value in _LIST_HEADERS:
                self.addheader(name, value)
            self.chgheader("Subject", 1, _SUBJECT)
            if self.key is not None:
                copy = noop_signer.decorated_copy(raw, _SUBJECT, _LIST_HEADERS, _FOOTER)
                fields = noop_signer.signature_fields(copy, self.key, self.seal)
                for position, (name, value) in enumerate(fields):
                    self.addheader(name, value, position)
            self.replacebody(body + _FOOTER)
        lone = f"<lone@{self.list_domain}>"
        to = (self.lone_to,) if self.lone_to and lone in self.recipients else self.to
        for rcpt in self.recipients:
            self.delrcpt(rcpt)
        for member in to:
            self.addrcpt(f"<{member}>")
        self.recipients = []
        self.chunks = []
        return Milter.ACCEPT


class SameCallbacks(_Base):
    """The callbacks of :class:`mtaplugin.frontends.milter.session.UnixListMilter`."""

    @Milter.noreply
    def connect(self, hostname: str, family: int, hostaddr: object) -> int:
        return Milter.CONTINUE

    @Milter.noreply
    def hello(self, helo: str) -> int:
        return Milter.CONTINUE

    @Milter.noreply
    def envfrom(self, mailfrom: str, *params: str) -> int:
        self.chunks = []
        return Milter.CONTINUE

    def envrcpt(self, to: str, *params: str) -> int:
        self.recipients.append(to)
        return Milter.CONTINUE

    def data(self) -> int:
        """As mtaplugin's: a transaction without a recipient in the list domain steps
        aside (ACCEPT: nothing more of it is sent); a list post goes on."""
        if any(r.lower().rstrip(">").endswith(f"@{self.list_domain}") for r in self.recipients):
            return Milter.CONTINUE
        self.recipients = []
        return Milter.ACCEPT

    @Milter.noreply
    def header(self, name: str, value: str) -> int:
        self.chunks.append(f"{name}: {value}\r\n".encode("utf-8", "surrogateescape"))
        return Milter.CONTINUE

    @Milter.noreply
    def eoh(self) -> int:
        self.chunks.append(b"\r\n")
        return Milter.CONTINUE

    @Milter.noreply
    def body(self, chunk: bytes) -> int:
        self.chunks.append(chunk)
        return Milter.CONTINUE

    def eom(self) -> int:
        return self._redirect()


class LeanCallbacks(_Base):
    """RCPT and end of message only: nothing of the message is sent to the milter."""

    @Milter.nocallback
    def connect(self, hostname: str, family: int, hostaddr: object) -> int:
        return Milter.CONTINUE

    @Milter.nocallback
    def hello(self, helo: str) -> int:
        return Milter.CONTINUE

    @Milter.nocallback
    def envfrom(self, mailfrom: str, *params: str) -> int:
        return Milter.CONTINUE

    def envrcpt(self, to: str, *params: str) -> int:
        self.recipients.append(to)
        return Milter.CONTINUE

    @Milter.nocallback
    def data(self) -> int:
        return Milter.CONTINUE

    @Milter.nocallback
    def header(self, name: str, value: str) -> int:
        return Milter.CONTINUE

    @Milter.nocallback
    def eoh(self) -> int:
        return Milter.CONTINUE

    @Milter.nocallback
    def body(self, chunk: bytes) -> int:
        return Milter.CONTINUE

    @Milter.nocallback
    def unknown(self, cmd: str) -> int:
        return Milter.CONTINUE

    def eom(self) -> int:
        return self._redirect()


def _serve() -> int:
    libmilter.main()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("socket", help="unix:/path")
    parser.add_argument(
        "--to", required=True, action="append", help="a member (every message goes to each)"
    )
    parser.add_argument("--callbacks", choices=("same", "lean"), default="same")
    parser.add_argument("--decorate", action="store_true")
    parser.add_argument("--list-domain", default=_Base.list_domain)
    parser.add_argument("--sign", type=Path, metavar="KEY", help="RSA private key, PEM")
    parser.add_argument("--selector", default="bench")
    parser.add_argument("--dkim-only", action="store_true", help="no ARC set, one signature")
    parser.add_argument("--lone-to", default="", help="where posts to lone@ the list go")
    parser.add_argument(
        "--journal", help="SQLite file or postgresql:// URL: commit each post there"
    )
    parser.add_argument("--archiver", action="store_true", help="drain --journal to an archive")
    parser.add_argument(
        "--processes", type=int, default=1, help="milter processes on the socket (milter.processes)"
    )
    args = parser.parse_args(argv)
    if not args.socket.startswith("unix:"):
        parser.error("a unix: socket")
    if args.sign and not (args.decorate and args.callbacks == "same"):
        parser.error("--sign signs the decorated copy: --decorate --callbacks same")
    if args.journal and args.callbacks != "same":
        parser.error("--journal journals the post: --callbacks same")
    if args.archiver and not args.journal:
        parser.error("--archiver drains --journal")
    base = SameCallbacks if args.callbacks == "same" else LeanCallbacks
    attributes = {"to": tuple(args.to), "decorate": args.decorate, "list_domain": args.list_domain,
                  "lone_to": args.lone_to, "seal": not args.dkim_only}  # fmt: skip
    if args.sign:
        attributes["key"] = noop_signer.load_key(args.sign, args.list_domain, args.selector)
    archiver = None
    if args.journal:
        noop_journal.create(args.journal)
        attributes["journal"] = noop_journal.Journal(args.journal)
        if args.archiver:
            drain = [sys.executable, "-m", "mtaplugin.testing.noop_archiver", args.journal]
            archiver = subprocess.Popen(drain)
    cls = type(base.__name__, (base,), attributes)
    Milter.factory = cls
    Milter.set_flags(FLAGS)
    sock = UnixSocket(args.socket[len("unix:") :])
    os.umask(umask_for(sock))
    try:
        status = _run("noop-milter", sock, 0, _serve, args.processes)
    finally:
        if archiver is not None:
            archiver.terminate()
            archiver.wait(30)
    return status


if __name__ == "__main__":
    sys.exit(main())
