"""``mtaplugin users add|passwd|list``: web log-in accounts.

The password is asked for on the terminal, or read as the first line of stdin when stdin
is not a terminal (``echo "$PW" | mtaplugin users add ann@example.org``); never as an
argument, where ``ps`` would show it.
"""

from __future__ import annotations

import argparse
import getpass
import sys

from mtaplugin import config
from mtaplugin.cli.common import Subparsers, group, leaf, scope
from mtaplugin.errors import InvalidInput
from mtaplugin.i18n import _


def _read_password() -> str:
    if sys.stdin.isatty():
        first = getpass.getpass(_("Password: "))
        if getpass.getpass(_("Again: ")) != first:
            raise InvalidInput("password", _("the two passwords differ"))
        return first
    return sys.stdin.readline().rstrip("\r\n")


def cmd_users_add(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.manage import users

    password = _read_password()
    with scope(settings) as s:
        users.add_user(s, args.email, password, args.display_name, args.site_admin)
    print(_("created the user {email}").format(email=args.email))
    return 0


def cmd_users_passwd(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.manage import users

    password = _read_password()
    with scope(settings) as s:
        users.set_password(s, args.email, password)
    print(_("new password for {email}").format(email=args.email))
    return 0


def cmd_users_list(args: argparse.Namespace, settings: config.Settings) -> int:
    from sqlalchemy import select

    from mtaplugin.model import Address, User

    with scope(settings) as s:
        rows = s.execute(
            select(Address.email, User.is_server_owner, User.password)
            .join(User, User.id == Address.user_id)
            .order_by(Address.email)
        )
        for email, admin, password in rows:
            flags = [_("site admin")] if admin else []
            if not password:
                flags.append(_("no password"))
            print(email + (f"  ({', '.join(flags)})" if flags else ""))
    return 0


def register(sub: Subparsers) -> None:
    users = group(sub, "users", _("web log-in accounts"))
    p = leaf(users, "add", cmd_users_add, _("add a user with a password (read from stdin)"))
    p.add_argument("email")
    p.add_argument("--display-name", default="")
    p.add_argument("--site-admin", action="store_true", help=_("may administer everything"))
    p = leaf(users, "passwd", cmd_users_passwd, _("set a user's password (read from stdin)"))
    p.add_argument("email")
    leaf(users, "list", cmd_users_list, _("list the users' addresses"))
