"""``mtaplugin users add|passwd|list``: web log-in accounts.

The password is asked for on the terminal, or read as the first line of stdin when stdin
is not a terminal (``echo "$PW" | mtaplugin users add ann@example.org``); never as an
argument, where ``ps`` would show it.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import Any

from mtaplugin import config
from mtaplugin.errors import InvalidInput
from mtaplugin.i18n import _


def _read_password() -> str:
    if sys.stdin.isatty():
        first = getpass.getpass(_("Password: "))
        if getpass.getpass(_("Again: ")) != first:
            raise InvalidInput("password", _("the two passwords differ"))
        return first
    return sys.stdin.readline().rstrip("\r\n")


def _scope(settings: config.Settings) -> Any:
    from mtaplugin.db import make_engine, session_scope, sessionmaker_for

    return session_scope(
        sessionmaker_for(make_engine(settings.database.url, settings.database.timeout))
    )


def cmd_users_add(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.manage import users

    password = _read_password()
    with _scope(settings) as s:
        users.add_user(s, args.email, password, args.display_name, args.site_admin)
    print(_("created the user {email}").format(email=args.email))
    return 0


def cmd_users_passwd(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.manage import users

    password = _read_password()
    with _scope(settings) as s:
        users.set_password(s, args.email, password)
    print(_("new password for {email}").format(email=args.email))
    return 0


def cmd_users_list(args: argparse.Namespace, settings: config.Settings) -> int:
    from sqlalchemy import select

    from mtaplugin.model import Address, User

    with _scope(settings) as s:
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


def register(sub: argparse._SubParsersAction[Any]) -> None:
    users = sub.add_parser("users", help=_("web log-in accounts"))
    actions = users.add_subparsers(dest="action", required=True, metavar="ACTION")
    p = actions.add_parser("add", help=_("add a user with a password (read from stdin)"))
    p.set_defaults(handler=cmd_users_add)
    p.add_argument("email")
    p.add_argument("--display-name", default="")
    p.add_argument("--site-admin", action="store_true", help=_("may administer everything"))
    p = actions.add_parser("passwd", help=_("set a user's password (read from stdin)"))
    p.set_defaults(handler=cmd_users_passwd)
    p.add_argument("email")
    p = actions.add_parser("list", help=_("list the users' addresses"))
    p.set_defaults(handler=cmd_users_list)
