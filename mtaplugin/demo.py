"""``make demo``: a working list on this machine, in a minute.

Everything lives under ``./var/``: the SQLite database, the settings file, a private
Postfix instance on 127.0.0.1 (built from ``contrib/postfix/``) wired to ``mtaplugin
serve`` (the milter, the REST API and the worker), and a Maildir per member where the
members' copies land.  Nothing of the system's own Postfix is touched.

``python -m mtaplugin.demo --check`` brings it all up, posts once, checks that every member
got a copy and that an unknown list address is refused at RCPT, and stops again.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import signal
import smtplib
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import select

from mtaplugin import config, wiring
from mtaplugin.db import upgrade
from mtaplugin.errors import AlreadyExists
from mtaplugin.i18n import _
from mtaplugin.manage import domains, lists, members, users
from mtaplugin.model import HeldMessage
from mtaplugin.model.enums import MemberRole

if TYPE_CHECKING:
    from mtaplugin.testing.lab import Lab

DOMAIN = "example.org"
LIST = f"demo@{DOMAIN}"
OWNER = "owner@example.com"
#: logs in to the web UI and moderates the demo list (a new password every start)
MODERATOR = "moderator@example.com"
VISITOR = "visitor@example.com"
MEMBERS = ("Alice Example <alice@example.net>", "bob@example.net", "carol@example.com")
SMTP_PORT = 2525
REINJECT_PORT = 10026
API_LISTEN = "127.0.0.1:8001"


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _searchable_by_postfix(path: Path) -> bool:
    """Postfix's processes reach the demo's queue directory and tables under ``path``."""
    return (
        subprocess.run(
            ["runuser", "-u", "postfix", "--", "test", "-x", str(path)], check=False
        ).returncode
        == 0
    )


def _secret_key(var: Path) -> str:
    """The demo's site.secret_key (signs one-click links), kept across restarts."""
    path = var / "demo" / "secret_key"
    if not path.exists():
        path.write_text(secrets.token_urlsafe(32) + "\n")
        os.chmod(path, 0o600)
    return path.read_text().strip()


def write_settings(var: Path, api_listen: str, reinject_port: int = REINJECT_PORT) -> Path:
    path = var / "mtaplugin.toml"
    sockets = var / "demo" / "postfix" / "queue" / "mtaplugin"
    path.write_text(
        f"""\
# Written by `make demo`.  Every key is documented in docs/configuration.md.
[database]
url = "sqlite:///{var / "mtaplugin.db"}"

# contrib/postfix as docs/postfix.md installs it: the sockets under Postfix's queue
# directory (its smtpd is chrooted there, as on Debian), the list-domain tables that keep
# an outage of mtaplugin to list mail, and the LMTP front end for what no milter decided
[milter]
socket = "unix:{sockets / "milter.sock"}"

[lookup]
socket = "unix:{sockets / "lookup.sock"}"
tables_dir = "{var / "demo" / "tables"}"

[lmtp]
enabled = true
socket = "unix:{sockets / "lmtp.sock"}"

[api]
listen = "{api_listen}"

[web]
# the links the web UI mails (password reset, sign-up) point here, never at a Host: header
base_url = "http://{api_listen}"

[outbox]
host = "127.0.0.1"
port = {reinject_port}
# the demo's Postfix re-injection listener takes XVERP (contrib/postfix/master.cf)
xverp = true

[site]
site_owner = "{OWNER}"
secret_key = "{_secret_key(var)}"
"""
    )
    return path


@dataclass(frozen=True)
class Passwords:
    """The web UI's log-ins of the demo: new passwords at every start."""

    moderator: str
    owner: str


def populate(world: wiring.World, web_url: str = "") -> Passwords:
    """The demo domain, list, members, moderator and owner; returns their new passwords
    (the owner's pages, the list's settings and members, answer 403 to the moderator)."""
    upgrade(world.settings.database.url)
    passwords = Passwords(secrets.token_urlsafe(9), secrets.token_urlsafe(9))
    with world.sessions.begin() as s:
        with contextlib.suppress(AlreadyExists):
            domains.create(s, DOMAIN, "mtaplugin demo")
        # The list pages and one-click unsubscribe links point at the demo's web UI.
        domains.get(s, DOMAIN).base_url = web_url
        try:
            mlist = lists.create(s, LIST, description="The mtaplugin demo list")
        except AlreadyExists:
            mlist = lists.get(s, LIST)
        for line, role in [(OWNER, MemberRole.owner)] + [(m, MemberRole.member) for m in MEMBERS]:
            name, _lt, rest = line.partition(" <")
            email = rest.rstrip(">") if rest else line
            with contextlib.suppress(AlreadyExists):
                members.add(s, mlist, email, role, display_name=name if rest else "")
        with contextlib.suppress(AlreadyExists):
            members.add(s, mlist, MODERATOR, MemberRole.moderator)
        for email, password, name in (
            (MODERATOR, passwords.moderator, "Demo moderator"),
            (OWNER, passwords.owner, "Demo owner"),
        ):
            if users.user_by_email(s, email) is None:
                users.add_user(s, email, password, name)
            else:
                users.set_password(s, email, password)
    world.close()
    return passwords


def hold_a_post(port: int, world: wiring.World) -> None:
    """A nonmember's post, held for the moderator (unless one is held already)."""
    with world.sessions() as s:
        waiting = s.scalar(select(HeldMessage.id).where(HeldMessage.sender == VISITOR))
    world.close()
    if waiting is not None:
        return
    msg = EmailMessage()
    msg["From"] = f"A visitor <{VISITOR}>"
    msg["To"] = LIST
    msg["Subject"] = "Held demo post: approve me in the web UI"
    msg.set_content("A nonmember's post is held for the moderator.\n")
    with smtplib.SMTP("127.0.0.1", port, timeout=30) as smtp:
        smtp.sendmail(VISITOR, [LIST], msg.as_bytes())


def web_answers(web_url: str) -> str:
    """ "" when the web UI's list page answers 200, else the problem."""
    try:
        with urllib.request.urlopen(f"{web_url}/lists/demo.{DOMAIN}/", timeout=30) as answer:
            return "" if answer.status == 200 else f"web UI: HTTP {answer.status}"
    except OSError as exc:
        return f"web UI: {exc}"


def member_emails() -> list[str]:
    return [m.partition("<")[2].rstrip(">") or m for m in MEMBERS]


def post_once(port: int, maildir: Path) -> list[str]:
    """Post to the demo list and an unknown list; return the problems found."""
    problems: list[str] = []
    msg = EmailMessage()
    msg["From"] = "Alice Example <alice@example.net>"
    msg["To"] = LIST
    msg["Subject"] = "demo check"
    msg.set_content("Hello from make demo.\n")
    before = {e: _count(maildir, e) for e in member_emails()}
    with smtplib.SMTP("127.0.0.1", port, timeout=30) as smtp:
        smtp.sendmail("alice@example.net", [LIST], msg.as_bytes())
        smtp.mail("alice@example.net")
        code, text = smtp.rcpt(f"nosuchlist@{DOMAIN}")
        if code != 550 or b"5.1.1" not in text:
            problems.append(f"unknown list: expected 550 5.1.1 at RCPT, got {code} {text!r}")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        missing = [e for e in member_emails() if _count(maildir, e) <= before[e]]
        if not missing:
            break
        time.sleep(0.2)
    else:
        problems.append(f"no copy for: {', '.join(missing)}")
    return problems


def check_command(settings: Path, postfix_conf: Path) -> list[str]:
    """The ``mtaplugin check`` an admin runs on the demo."""
    return [
        str(Path(sys.executable).parent / "mtaplugin"),
        "--config",
        str(settings),
        "check",
        "--postfix",
        str(postfix_conf),
    ]


def installation_check(settings: Path, postfix_conf: Path) -> list[str]:
    """``mtaplugin check`` on the running demo: every finding fine, else the problems."""
    from mtaplugin.check import Level, Options, run

    found = run(config.load(settings, environ={}), Options(postfix_dir=postfix_conf))
    return [f"mtaplugin check: {f.check}: {f.found}" for f in found if f.level != Level.ok]


def _count(maildir: Path, email: str) -> int:
    new = maildir / email / "new"
    return len(list(new.iterdir())) if new.is_dir() else 0


def running(lab: Lab, web_url: str, passwords: Passwords, maildir: Path) -> dict[str, object]:
    """What ``--print-json`` prints of the running demo, for programs (the text is for
    people, and translated): the web UI (REST under /3.1), the SMTP port, the log-ins,
    where the copies land and mtaplugin's log."""
    return {
        "web": web_url,
        "smtp_port": lab.smtp_port,
        "moderator": [MODERATOR, passwords.moderator],
        "owner": [OWNER, passwords.owner],
        "maildir": str(maildir),
        "log": str(lab.runner.log_file),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mtaplugin-demo", description=__doc__)
    parser.add_argument("--var", default="var", help="where the demo keeps its state")
    parser.add_argument("--check", action="store_true", help="post once, check, stop")
    parser.add_argument("--free-ports", action="store_true", help="pick any free ports")
    parser.add_argument(
        "--print-json",
        action="store_true",
        help="once running, print the site (addresses, ports, log-ins, files) as one JSON line",
    )
    args = parser.parse_args(argv)

    from mtaplugin.testing import free_port
    from mtaplugin.testing.lab import Lab

    if os.geteuid() != 0:
        print(_("make demo must run as root: it starts a private Postfix"), file=sys.stderr)
        return 1
    var = Path(args.var).resolve()
    (var / "demo").mkdir(parents=True, exist_ok=True)
    for d in (var, var / "demo"):
        os.chmod(d, 0o755)
    fixed = not args.free_ports
    smtp_port = SMTP_PORT if fixed and _port_free(SMTP_PORT) else 0
    reinject = REINJECT_PORT if fixed and _port_free(REINJECT_PORT) else free_port()
    api_listen = API_LISTEN if fixed and _port_free(8001) else f"127.0.0.1:{free_port()}"
    settings = write_settings(var, api_listen, reinject)
    world = wiring.build(config.load(settings, environ={}))
    url = world.settings.database.url
    web_url = f"http://{api_listen}"
    passwords = populate(world, web_url)
    if not _searchable_by_postfix(var / "demo"):
        print(
            _(
                "the postfix user cannot read {path}; clone mtaplugin into a directory that "
                "others may traverse (not /root), or run with --var /var/tmp/mtaplugin-demo"
            ).format(path=var / "demo"),
            file=sys.stderr,
        )
        return 1
    maildir = var / "demo" / "maildir"
    lab = Lab(
        root=var / "demo",
        database_url=url,
        command=("--config", str(settings), "serve"),
        maildir=maildir,
        name="mtaplugin-demo",
        # Debian's own main.cf and master.cf (smtpd chrooted) with contrib/postfix added as
        # docs/postfix.md says: `mtaplugin check` finds it wired as a real install
        debian=True,
        smtp_port_wanted=smtp_port,
        reinject_port_wanted=reinject,
        env={"MTAPLUGIN_API_LISTEN": api_listen, "MTAPLUGIN_OUTBOX_PORT": str(reinject)},
    )
    lab.start()
    try:
        if args.check:
            problems = post_once(lab.smtp_port, maildir)
            problems += [p for p in [web_answers(web_url)] if p]
            problems += installation_check(settings, lab.postfix.conf)
            for p in problems:
                print("demo check FAILED:", p, file=sys.stderr)
            if not problems:
                print(_("demo check passed: every member got the post; unknown list refused"))
            return 1 if problems else 0
        port = lab.smtp_port
        hold_a_post(port, world)
        if args.print_json:
            print(json.dumps(running(lab, web_url, passwords, maildir)), flush=True)
        else:
            print(
                _(
                    """
mtaplugin demo is running.

  List        {list}  (members: {members})
  Postfix     127.0.0.1:{port}  (private instance; log: {maillog})
  Milter      {socket}
  Web UI      {web}/  (log in as {moderator}, password {password})
              held posts: {web}/lists/demo.{domain}/held
              the list's owner (settings, members): log in as {owner}, password {owner_password}
              settings: {web}/lists/demo.{domain}/settings
  REST API    {web}/3.1/system/versions  (user restadmin, password restpass)
  Settings    {settings}
  Database    {db}

Post to the list:
  swaks --server 127.0.0.1:{port} --from alice@example.net --to {list} \\
        --header "Subject: hello" --body "Hello, list"

or, in Python:
  python3 -c "import smtplib; smtplib.SMTP('127.0.0.1', {port}).sendmail(\\
'alice@example.net', ['{list}'], b'From: alice@example.net\\r\\nSubject: hi\\r\\n\\r\\nhi')"

The members' copies land in {maildir}/<member>/new/
A post to an unknown list (nosuchlist@{domain}) is refused at RCPT with 550 5.1.1;
a post from a nonmember is held: one is waiting for you in the web UI's held posts.
Each member's copy carries a one-click List-Unsubscribe link to the web UI.

Manage it:  .venv/bin/mtaplugin --config {settings} members list {list}
Stop with Ctrl-C.
"""
                ).format(
                    list=LIST,
                    members=", ".join(member_emails()),
                    port=port,
                    maillog=lab.postfix.maillog,
                    socket=lab.socket,
                    web=web_url,
                    moderator=MODERATOR,
                    password=passwords.moderator,
                    owner=OWNER,
                    owner_password=passwords.owner,
                    settings=settings,
                    db=var / "mtaplugin.db",
                    maildir=maildir,
                    domain=DOMAIN,
                )
            )
            print(
                _("Check the installation (as after installing):\n  {command}\n").format(
                    command=" ".join(check_command(settings, lab.postfix.conf))
                )
            )
        stop = False

        def _stop(signum: int, frame: object) -> None:
            nonlocal stop
            stop = True

        signal.signal(signal.SIGINT, _stop)
        signal.signal(signal.SIGTERM, _stop)
        while not stop:
            if lab.process is not None and lab.process.poll() is not None:
                print(
                    _("mtaplugin serve exited; see {log}").format(log=var / "demo"), file=sys.stderr
                )
                return 1
            time.sleep(0.5)
        return 0
    finally:
        lab.stop()


if __name__ == "__main__":
    sys.exit(main())
