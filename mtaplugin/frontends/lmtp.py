"""``mtaplugin lmtp``: the LMTP front end (Exim's ``lmtp`` transport, or any MTA's).

Each recipient gets its own answer after DATA (RFC 2033 §4.2): ``250`` when the post was
taken (accepted into the outbox already expanded and decorated, held, or discarded), the
rule's ``550`` when it was refused, ``451`` when the database cannot answer.  Recipients
that are not list addresses are refused at RCPT.  The server is thin: every decision is
the engine's (:mod:`mtaplugin.frontends.common`).
"""

from __future__ import annotations

import asyncio
import logging
import signal
from functools import partial
from typing import Any

from aiosmtpd.controller import UnixSocketUnthreadedController, UnthreadedController
from aiosmtpd.lmtp import LMTP
from aiosmtpd.smtp import Envelope as SmtpEnvelope
from aiosmtpd.smtp import Session as SmtpSession

from mtaplugin.config import Socket, UnixSocket
from mtaplugin.engine import ListEngine
from mtaplugin.frontends.common import decide_one, refusal
from mtaplugin.frontends.sockets import open_to_mta, prepare, unix_server
from mtaplugin.vocabulary.envelope import Envelope
from mtaplugin.wiring import World, list_engine

log = logging.getLogger(__name__)


class LmtpHandler:
    """aiosmtpd handler: RCPT and DATA answers from the engine (run in worker threads, as
    the engine blocks on the database)."""

    def __init__(self, engine: ListEngine) -> None:
        self.engine = engine

    async def _run(self, func: Any, *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(None, partial(func, *args))

    async def handle_RCPT(
        self,
        server: LMTP,
        session: SmtpSession,
        envelope: SmtpEnvelope,
        address: str,
        rcpt_options: list[str],
    ) -> str:
        reply = await self._run(refusal, self.engine, address)
        if reply is not None:
            return str(reply)
        envelope.rcpt_tos.append(address)
        return "250 2.1.5 OK"

    async def handle_DATA(self, server: LMTP, session: SmtpSession, envelope: SmtpEnvelope) -> str:
        raw = bytes(envelope.original_content or b"")
        # The LMTP client is the MTA, not the poster's server: no client address or
        # login to pass on (authentication comes from a trusted Authentication-Results).
        # The MTA's own Received: is on top (it queued the post before delivering it).
        base = Envelope(mail_from=f"<{envelope.mail_from or ''}>", local_received=1)
        lines = []
        for rcpt in envelope.rcpt_tos:
            answer = await self._run(decide_one, self.engine, base, rcpt, raw)
            if answer.reply is None:
                lines.append(f"250 2.0.0 <{rcpt}> {answer.what}")
            else:
                lines.append(str(answer.reply))
            log.info("lmtp <%s> -> <%s>: %s", envelope.mail_from, rcpt, lines[-1])
        # One reply line per recipient, in RCPT order; aiosmtpd sends the string as is.
        return "\r\n".join(lines)


class _UnixLmtp(UnixSocketUnthreadedController):
    def factory(self) -> LMTP:
        return LMTP(self.handler, **self.SMTP_kwargs)


class _InetLmtp(UnthreadedController):
    def factory(self) -> LMTP:
        return LMTP(self.handler, **self.SMTP_kwargs)


def make_controller(
    socket: Socket, engine: ListEngine, loop: asyncio.AbstractEventLoop, max_size: int
) -> _UnixLmtp | _InetLmtp:
    """The server for ``socket``, not started (a stale unix socket is removed)."""
    handler = LmtpHandler(engine)
    params: dict[str, Any] = {"server_hostname": "mtaplugin", "data_size_limit": max_size}
    if isinstance(socket, UnixSocket):
        prepare(socket)
        return _UnixLmtp(handler, unix_socket=socket.path, loop=loop, **params)
    return _InetLmtp(handler, hostname=socket.host, port=socket.port, loop=loop, **params)


def serve(world: World) -> None:
    lmtp = world.settings.lmtp
    engine = list_engine(world)
    loop = asyncio.new_event_loop()
    with unix_server(lmtp.socket):
        controller = make_controller(lmtp.socket, engine, loop, lmtp.max_bytes)
        controller.begin()  # type: ignore[no-untyped-call]  # aiosmtpd leaves it unannotated
        open_to_mta(lmtp.socket)  # the MTA's delivery user connects
        log.info("lmtp listening on %s", lmtp.socket)
        engine.start()
        loop.add_signal_handler(signal.SIGTERM, loop.stop)
        loop.add_signal_handler(signal.SIGINT, loop.stop)
        try:
            loop.run_forever()
        finally:
            controller.end()  # type: ignore[no-untyped-call]
            engine.close()
