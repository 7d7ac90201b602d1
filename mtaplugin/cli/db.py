"""``mtaplugin db upgrade|current``: the database schema."""

from __future__ import annotations

import argparse

from mtaplugin import config
from mtaplugin.cli.common import Subparsers, group, leaf
from mtaplugin.i18n import _


def cmd_db_upgrade(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.db import upgrade

    upgrade(settings.database.url)
    print(_("database is at the newest revision: {url}").format(url=_safe_url(settings)))
    return 0


def cmd_db_current(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.db import current_revision, make_engine

    print(current_revision(make_engine(settings.database.url)) or _("(empty database)"))
    return 0


def _safe_url(settings: config.Settings) -> str:
    from sqlalchemy.engine import make_url

    return make_url(settings.database.url).render_as_string(hide_password=True)


def register(sub: Subparsers) -> None:
    db = group(sub, "db", _("the database"))
    leaf(db, "upgrade", cmd_db_upgrade, _("create or migrate the schema"))
    leaf(db, "current", cmd_db_current, _("show the schema revision"))
