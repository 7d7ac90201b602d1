"""``mtaplugin exim``: answers the queries of Exim's ACLs and routers (contrib/exim/).

Exim asks with ``${readsocket{PATH}{REQUEST\\n}...}``: one request per connection, one
line, every argument base64 (Exim's ``${str2b64:...}``) so that no address, header or body
byte needs quoting.  The answer is one line without a newline (Exim's readsocket reads
until the server closes), read by the ACL with ``${substr...}``:

``RCPT <recipient>``
    ``LIST`` (a list address: the ACL accepts it), ``PASS`` (not ours: the ACL goes on),
    ``REJECT <5xx reply>`` or ``DEFER <4xx reply>``.

``DATA <sender> <recipients> <client address> <helo> <auth id> <queue id> <headers> <body>``
    The whole post, decided for every list recipient at once, before Exim says 250:
    ``ACCEPT <;addr;addr...`` (accepted posts are in the outbox, expanded and decorated;
    holds are stored; the list recipients named are done, and the router drops them),
    ``NONE`` (no list recipient), ``REJECT <5xx reply>``, ``DEFER <4xx reply>``.
    ``recipients`` is Exim's ``$recipients`` (``a, b``); ``headers`` is
    ``$message_headers_raw``; ``body`` is the spool data file (``-D``), whose first line is
    its own name.

``LIST <address>``
    ``yes`` when the address names a list (the condition of the router that sends undecided
    posts to the LMTP front end or the pipe), ``no``, or ``DEFER <4xx reply>``: not a
    boolean, so the router's condition fails and Exim defers the address.
"""

from __future__ import annotations

import base64
import binascii
import logging
import socketserver
import threading
from collections.abc import Callable
from pathlib import Path

from mtaplugin.engine import ListEngine
from mtaplugin.errors import TryLater
from mtaplugin.frontends import postfix_tables
from mtaplugin.frontends.common import answer_of, crlf
from mtaplugin.frontends.sockets import LISTEN_BACKLOG, open_to_mta, unix_server
from mtaplugin.i18n import _
from mtaplugin.lists.domain_set import ListDomains
from mtaplugin.posting.verdict import (
    Accept,
    Discard,
    PermanentReply,
    Reply,
    TemporaryReply,
    Verdict,
)
from mtaplugin.vocabulary import addresses
from mtaplugin.vocabulary.envelope import Envelope
from mtaplugin.wiring import World, list_engine

log = logging.getLogger(__name__)


class BadRequest(ValueError):
    pass


def _b64(value: bytes) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise BadRequest(_("an argument is not base64")) from None


def _text(value: bytes) -> str:
    return _b64(value).decode("utf-8", "surrogateescape")


def _refusal(reply: Reply) -> str:
    word = "REJECT" if isinstance(reply, PermanentReply) else "DEFER"
    return f"{word} {reply}"


def message_from_spool(headers: bytes, data_file: bytes) -> bytes:
    """The post from Exim's header text and spool data file (``<id>-D`` first line)."""
    first, _nl, rest = data_file.partition(b"\n")
    body = rest if first.endswith(b"-D") else data_file
    return crlf(headers.rstrip(b"\r\n") + b"\n\n" + body)


def split_recipients(value: str) -> list[str]:
    """Exim's ``$recipients``: addresses separated by a comma and a space."""
    return [r.strip() for r in value.split(", ") if r.strip()]


def _done(verdict: Verdict, recipients: list[str]) -> str:
    """The ACCEPT line: the list recipients the decision covered, as an Exim list."""
    outcomes = verdict.outcomes if isinstance(verdict, Accept | Discard) else ()
    if not outcomes:
        return "NONE"
    decided = {o.recipient.strip("<>").lower() for o in outcomes}
    names = [r for r in recipients if r.lower() in decided]
    return "ACCEPT <;" + ";".join(names)


def _elsewhere(address: str, known: ListDomains | None) -> bool:
    """``address`` is in no list domain, as the kept answers say (False without them, or
    when the domain must be asked and the database cannot answer: the engine then
    decides as without them)."""
    if known is None:
        return False
    readings = addresses.candidates(address)
    try:
        return not readings or readings[0].mail_host not in known
    except TryLater:
        return False


def answer(engine: ListEngine, request: bytes, known: ListDomains | None = None) -> str:
    """The answer line for one request line; ``known``: the server's kept answers to "is
    this a list domain?" (the router asks ``LIST`` for every recipient it routes, so for
    every member's copy: an address in no list domain costs a query per domain a few
    seconds, not one per copy)."""
    verb, *args = request.strip().split(b" ")
    try:
        if verb in (b"RCPT", b"LIST") and len(args) == 1 and _elsewhere(_text(args[0]), known):
            return "PASS" if verb == b"RCPT" else "no"
        if verb == b"RCPT" and len(args) == 1:
            check = engine.check_recipient(_text(args[0]))
            if check.reply is not None:
                return _refusal(check.reply)
            return "LIST" if check.is_list else "PASS"
        if verb == b"LIST" and len(args) == 1:
            check = engine.check_recipient(_text(args[0]))
            if isinstance(check.reply, TemporaryReply):
                return _refusal(check.reply)
            return "yes" if check.is_list else "no"
        if verb == b"DATA" and len(args) == 8:
            sender, rcpts, client, helo, auth, queue_id = (_text(a) for a in args[:6])
            recipients = split_recipients(rcpts)
            envelope = Envelope(
                mail_from=f"<{sender}>",
                recipients=[f"<{r}>" for r in recipients],
                client_address=client,
                helo=helo,
                auth_user=auth,
                queue_id=queue_id,
                # $message_headers_raw starts with the Received: Exim added at DATA
                local_received=1,
            )
            raw = message_from_spool(_b64(args[6]), _b64(args[7]))
            verdict = engine.decide(envelope, raw, in_place=False)
            if isinstance(verdict, Accept | Discard):
                line = _done(verdict, recipients)
            else:
                line = _refusal(verdict.reply)
            log.info("exim %s from <%s>: %s (%s)", queue_id, sender, line, answer_of(verdict).what)
            return line
    except BadRequest as exc:
        return f"DEFER 451 4.3.5 {exc}"
    return "DEFER 451 4.3.5 " + _("unknown request to the list manager")


class _Handler(socketserver.StreamRequestHandler):
    server: _Server

    def handle(self) -> None:
        limit = self.server.max_request
        request = self.rfile.readline(limit + 1)
        if len(request) > limit:
            line = "DEFER 452 4.3.4 " + _("the post is too large for the list manager")
        else:
            line = answer(self.server.engine, request, self.server.domains)
        # No newline after the answer: Exim's readsocket keeps it, and "no\n" is not "no".
        self.wfile.write(line.encode("utf-8", "replace"))
        self.wfile.flush()


class _Server(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True
    request_queue_size = LISTEN_BACKLOG

    def __init__(self, path: str, engine: ListEngine, max_request: int) -> None:
        self.engine = engine
        self.domains = ListDomains(engine.db)
        self.max_request = max_request
        super().__init__(path, _Handler)


def keep_domains_file(world: World, stop: threading.Event | None = None) -> None:
    """Keep ``exim.domains_file`` listing the list domains (and their alias domains), now
    and every ``lookup.tables_interval`` seconds, until ``stop``.  Exim's routers and ACLs
    ask mtaplugin only about the domains in it, so while mtaplugin is down mail for every
    other domain flows; when the database cannot answer the file keeps its contents."""
    stop = stop or threading.Event()
    path = Path(world.settings.exim.domains_file)
    while True:
        try:
            text = postfix_tables.render(postfix_tables.list_domains(world), "list")
            if postfix_tables.write_source(path, text):
                log.info("exim list domains in %s updated", path)
        except TryLater as exc:
            log.warning("exim list domains kept as they are: %s", exc)
        except OSError as exc:
            log.error("exim list domains: %s", exc)
        if stop.wait(world.settings.lookup.tables_interval):
            return


def serve(world: World, ready: Callable[[], None] | None = None) -> None:
    exim = world.settings.exim
    if exim.domains_file:
        threading.Thread(
            target=keep_domains_file, args=(world,), name="exim-domains", daemon=True
        ).start()
    engine = list_engine(world)
    engine.start()
    try:
        with (
            unix_server(exim.socket),
            _Server(exim.socket.path, engine, exim.max_request_size) as server,
        ):
            open_to_mta(exim.socket)  # Exim runs as Debian-exim
            log.info("exim query server listening on %s", exim.socket)
            if ready is not None:
                ready()
            server.serve_forever()
    finally:
        engine.close()
