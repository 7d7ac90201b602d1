"""Postfix tables of the list domains, kept by the lookup server (``lookup.tables_dir``).

Postfix must know which domains hold lists also while mtaplugin is down: ``relay_domains``
is consulted for every recipient in a domain Postfix does not deliver itself, so a table
that depends on mtaplugin (the socketmap) would defer *all* such mail during an outage.
These tables are ordinary Postfix files (``postmap``), opened by Postfix before it enters
its chroot, and they keep their last contents whatever happens to mtaplugin:

- ``domains``: each list domain with the restriction class that defers list mail while
  mtaplugin cannot take it (``relay_domains`` ignores the value);
- ``transport``: each list domain with the transport for list mail no milter decided
  (mtaplugin's LMTP front end), so that such mail waits in Postfix's queue instead of
  being delivered undecided.

A table is rewritten, and ``postmap`` run, only when the set of domains changed; Postfix's
daemons notice the new file and restart themselves.  When the database cannot answer, the
tables stay as they are.
"""

from __future__ import annotations

import logging
import os
import subprocess
import threading
from collections.abc import Iterable
from pathlib import Path

from sqlalchemy import select

from mtaplugin.db import connection_scope
from mtaplugin.errors import TryLater
from mtaplugin.model import Domain
from mtaplugin.wiring import World

log = logging.getLogger(__name__)


class TableError(RuntimeError):
    """``postmap`` failed."""


def render(domains: Iterable[str], value: str) -> str:
    """The table's source: one ``domain value`` line each, sorted, lower case."""
    lines = sorted({d.strip().lower().rstrip(".") for d in domains if d.strip()})
    head = "# Written by mtaplugin (lookup.tables_dir): the list domains.  Do not edit.\n"
    return head + "".join(f"{d} {value}\n" for d in lines)


def write_table(path: Path, text: str, table_type: str, postmap: str = "postmap") -> bool:
    """Make ``path`` say ``text`` and rebuild its ``table_type`` database; False (nothing
    done) when it already did.  The source is replaced atomically, then ``postmap``
    rebuilds the database under its own lock."""
    try:
        if path.read_text() == text and _built(path, table_type):
            return False
    except FileNotFoundError:
        pass
    write_source(path, text)
    proc = subprocess.run(
        [postmap, f"{table_type}:{path}"], capture_output=True, text=True, timeout=60
    )
    if proc.returncode != 0:
        raise TableError(f"{postmap} {table_type}:{path}: {proc.stderr.strip()}")
    return True


def write_source(path: Path, text: str) -> bool:
    """Make ``path`` say ``text``, replaced atomically (a reader sees the old file or the
    new one); False when it already did."""
    try:
        if path.read_text() == text:
            return False
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.chmod(tmp, 0o644)  # the MTA's processes read it; domain names are no secret
    os.replace(tmp, path)
    return True


def _built(path: Path, table_type: str) -> bool:
    """Whether the database postmap makes from ``path`` exists and is not older."""
    suffix = {"hash": ".db", "btree": ".db", "cdb": ".cdb", "lmdb": ".lmdb", "dbm": ".dir"}
    db = path.with_name(path.name + suffix.get(table_type, ".db"))
    try:
        return db.stat().st_mtime >= path.stat().st_mtime
    except FileNotFoundError:
        return table_type in ("texthash", "inline")


def list_domains(world: World) -> list[str]:
    with connection_scope(world.db) as conn:
        hosts = list(conn.scalars(select(Domain.mail_host)))
        # mail for list@alias_domain is list mail too (Mailman's alias_domain)
        aliases = conn.scalars(select(Domain.alias_domain).where(Domain.alias_domain.is_not(None)))
        return hosts + [a for a in aliases if a]


def update(world: World) -> bool:
    """Bring both tables up to date with the list database; True when one changed."""
    lookup = world.settings.lookup
    where = Path(lookup.tables_dir)
    hosts = list_domains(world)
    changed = False
    for name, value in (("domains", lookup.domains_value), ("transport", lookup.transport)):
        changed |= write_table(
            where / name, render(hosts, value), lookup.table_type, lookup.postmap
        )
    return changed


def keep_tables(world: World, stop: threading.Event | None = None) -> None:
    """Update the tables now and every ``lookup.tables_interval`` seconds, until ``stop``."""
    stop = stop or threading.Event()
    while True:
        try:
            if update(world):
                log.info("postfix tables in %s updated", world.settings.lookup.tables_dir)
        except TryLater as exc:
            log.warning("postfix tables kept as they are: %s", exc)
        except (OSError, TableError, subprocess.SubprocessError) as exc:
            log.error("postfix tables: %s", exc)
        if stop.wait(world.settings.lookup.tables_interval):
            return
