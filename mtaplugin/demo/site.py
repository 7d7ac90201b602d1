"""The demo's site: its settings file and its domain, list, members and log-ins."""

from __future__ import annotations

import contextlib
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from mtaplugin import wiring
from mtaplugin.db import upgrade
from mtaplugin.enums import MemberRole
from mtaplugin.errors import AlreadyExists
from mtaplugin.manage import domains, lists, members, users

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


def member_emails() -> list[str]:
    return [m.partition("<")[2].rstrip(">") or m for m in MEMBERS]
