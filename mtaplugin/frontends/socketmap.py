"""``mtaplugin lookup``: answers Postfix's table lookups from the list database.

Postfix asks over its socketmap protocol (socketmap_table(5)): a netstring
``"<map> <key>"``, answered with ``"OK <value>"``, ``"NOTFOUND "`` or ``"TEMP <reason>"``.
Maps:

- ``domains``: is ``key`` a domain that holds lists (``relay_domains``)?
- ``recipients``: can mtaplugin take list mail now?  ``DUNNO`` (an access-table action:
  go on with the next restriction) when the list database answers, ``TEMP`` when it does
  not.  Postfix asks it only for list domains (the restriction class of
  contrib/postfix/main.cf); while mtaplugin is down the lookup fails and Postfix answers
  ``451 4.3.0`` for list mail only.

The ``domains`` map is asked for every recipient Postfix resolves, so for each member's
copy of a post (the member's domain: no list domain).  Rather than a query per copy, the
server keeps each answer a few seconds (:mod:`mtaplugin.lists.domain_set`): one query per
distinct domain in that time.  When a domain must be asked and the database cannot
answer, the answer is TEMP, as before.

Why not Postfix's own ``sqlite:`` table: its client sets no busy timeout, so a lookup that
meets one of mtaplugin's commits fails and the Postfix process dies (``fatal:
dict_sqlite_lookup``).  Here every lookup waits for the lock like the rest of mtaplugin and
answers TEMP (Postfix: 4xx, try again) when the database cannot answer in time.
"""

from __future__ import annotations

import logging
import socketserver
import threading
from collections.abc import Callable

from sqlalchemy import Engine

from mtaplugin.db import connection_scope
from mtaplugin.errors import TryLater
from mtaplugin.frontends.postfix_tables import keep_tables
from mtaplugin.frontends.sockets import LISTEN_BACKLOG, open_to_mta, unix_server
from mtaplugin.lists import roster
from mtaplugin.lists.domain_set import ListDomains
from mtaplugin.wiring import World

log = logging.getLogger(__name__)

MAX_REQUEST = 10_000


def _netstring(text: str) -> bytes:
    data = text.encode("utf-8", "replace")
    return str(len(data)).encode() + b":" + data + b","


def answer(engine: Engine, request: str, known: ListDomains | None = None) -> str:
    """The reply to one request; ``known``: the list domains kept by the server (else
    the ``domains`` map asks the database)."""
    name, _sp, key = request.partition(" ")
    if name not in ("domains", "recipients"):
        return f"PERM unknown map {name!r}"
    key = key.strip().lower().rstrip(".")
    if not key:
        return "NOTFOUND "
    try:
        if name == "domains" and known is not None:
            return f"OK {key}" if key in known else "NOTFOUND "
        with connection_scope(engine) as conn:
            if name == "recipients":
                # (a read of the list database, which a "SELECT 1" would not be on SQLite)
                roster.domain_exists(conn, key.rpartition("@")[2])
                return "OK DUNNO"
            return f"OK {key}" if roster.domain_exists(conn, key) else "NOTFOUND "
    except TryLater as exc:
        return f"TEMP {exc}"[:500]


class _Handler(socketserver.StreamRequestHandler):
    server: _Server

    def handle(self) -> None:
        while True:
            length = b""
            while True:
                ch = self.rfile.read(1)
                if not ch:
                    return  # Postfix closed the connection
                if ch == b":":
                    break
                if not ch.isdigit() or len(length) > 6:
                    return
                length += ch
            size = int(length or b"0")
            if size > MAX_REQUEST:
                return
            payload = self.rfile.read(size)
            if self.rfile.read(1) != b",":
                return
            reply = answer(
                self.server.engine, payload.decode("utf-8", "replace"), self.server.domains
            )
            self.wfile.write(_netstring(reply))
            self.wfile.flush()


class _Server(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True
    request_queue_size = LISTEN_BACKLOG

    def __init__(self, path: str, engine: Engine) -> None:
        self.engine = engine
        self.domains = ListDomains(engine)
        super().__init__(path, _Handler)


def serve(world: World, ready: Callable[[], None] | None = None) -> None:
    sock = world.settings.lookup.socket
    if world.settings.lookup.tables_dir:
        threading.Thread(
            target=keep_tables, args=(world,), name="postfix-tables", daemon=True
        ).start()
    with unix_server(sock), _Server(sock.path, world.db) as server:
        open_to_mta(sock)  # Postfix's processes run as "postfix"
        log.info("lookup server listening on %s", sock)
        if ready is not None:
            ready()
        server.serve_forever()
