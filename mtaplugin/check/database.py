"""The list database: reachable, its schema at the newest revision this mtaplugin knows,
and (SQLite) a file that mtaplugin's user may write, in a directory where it may write its
journal, and that no other user may change or read."""

from __future__ import annotations

import os
import stat

from sqlalchemy import Engine
from sqlalchemy.engine import make_url

from mtaplugin.check import access
from mtaplugin.check.finding import Finding, error, ok, warning
from mtaplugin.config import Settings, sqlite_path
from mtaplugin.i18n import _

UPGRADE = "mtaplugin db upgrade"


def head_revision() -> str:
    """The newest schema revision of this mtaplugin's migrations."""
    from alembic.script import ScriptDirectory

    from mtaplugin.db import alembic_config

    head = ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()
    assert head is not None
    return head


def known_revisions() -> set[str]:
    from alembic.script import ScriptDirectory

    from mtaplugin.db import alembic_config

    return {
        s.revision
        for s in ScriptDirectory.from_config(alembic_config("sqlite://")).walk_revisions()
    }


def safe_url(url: str) -> str:
    return make_url(url).render_as_string(hide_password=True)


def check_schema(engine: Engine, url: str) -> Finding:
    from mtaplugin.db import current_revision, unavailable_as_trylater
    from mtaplugin.errors import TryLater

    name = "database.schema"
    try:
        with unavailable_as_trylater():
            current = current_revision(engine)
    except TryLater as exc:
        return error(
            name,
            f"{safe_url(url)}: {exc}",
            _("start the database server, or correct database.url"),
        )
    head = head_revision()
    if current == head:
        return ok(
            name,
            _("{url}: schema at the newest revision ({revision})").format(
                url=safe_url(url), revision=head
            ),
        )
    if current is None:
        return error(
            name,
            _("{url}: the database has no schema").format(url=safe_url(url)),
            _("run `{command}`").format(command=UPGRADE),
        )
    if current in known_revisions():
        return error(
            name,
            _("{url}: schema at revision {current}, this mtaplugin needs {head}").format(
                url=safe_url(url), current=current, head=head
            ),
            _("stop mtaplugin, back the database up, run `{command}`, start mtaplugin").format(
                command=UPGRADE
            ),
        )
    return error(
        name,
        _("{url}: schema at revision {current}, which this mtaplugin does not know").format(
            url=safe_url(url), current=current
        ),
        _("the database was upgraded by a newer mtaplugin: install that version here too"),
    )


def check_file(settings: Settings, service_user: access.User | None) -> list[Finding]:
    """The SQLite file's permissions (nothing for PostgreSQL).  ``service_user``: the user
    mtaplugin runs as (the owner of its milter socket), when known."""
    path = sqlite_path(settings.database.url)
    if path is None:
        return []
    name = "database.file"
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return [
            error(
                name,
                _("{path} does not exist").format(path=path),
                _("run `{command}`, or correct database.url").format(command=UPGRADE),
            )
        ]
    if st.st_mode & stat.S_IWOTH:
        return [
            error(
                name,
                _("{what}: every local user may change the lists").format(
                    what=access.describe(path)
                ),
                f"chmod o-w {path}",
            )
        ]
    writer = service_user or access.owner(st.st_uid)
    if writer is not None:
        for target in (path, path.parent):
            blocked = access.blocker(writer, target, access.WRITE)
            if blocked is not None:
                return [
                    error(
                        name,
                        _("mtaplugin's user {user} cannot write {path}: {blocked} stops it").format(
                            user=writer.name, path=target, blocked=blocked
                        ),
                        _(
                            "chown {user} {path} and its directory (SQLite writes its "
                            "journal next to the file)"
                        ).format(user=writer.name, path=path),
                    )
                ]
    if st.st_mode & stat.S_IROTH:
        # made by an earlier release, or under a unit without UMask= (security review M8)
        return [
            warning(
                name,
                _(
                    "{what}: every local user may read the DKIM keys, password hashes and "
                    "reset tokens in it"
                ).format(what=access.describe(path)),
                f"chmod o-rwx {path}*",
            )
        ]
    return [ok(name, _("{what}: mtaplugin may write it").format(what=access.describe(path)))]
