"""One milter connection: collects the transaction, asks the engine, applies the verdict.

This is a thin adapter.  No list logic lives here: every decision is the engine's.
"""

from __future__ import annotations

import ipaddress
import logging
from dataclasses import dataclass, field

import Milter

from mtaplugin.config import InetSocket, Socket, UnixSocket
from mtaplugin.config.values import TrustAuth
from mtaplugin.engine import Found, ListEngine
from mtaplugin.errors import ConfigError
from mtaplugin.i18n import _
from mtaplugin.posting.verdict import (
    Accept,
    Discard,
    PermanentReply,
    Reject,
    Reply,
    TempFail,
    Verdict,
)
from mtaplugin.vocabulary.draft import AddHeader, ChangeHeader, DeleteHeader, InsertHeader
from mtaplugin.vocabulary.envelope import Envelope

log = logging.getLogger(__name__)

#: what the milter may do, negotiated with the MTA (without ADDRCPT/DELRCPT the calls fail)
FLAGS = (
    Milter.ADDHDRS
    | Milter.CHGHDRS
    | Milter.CHGBODY
    | Milter.ADDRCPT
    | Milter.DELRCPT
    | Milter.CHGFROM
)


#: replacebody() sends at most this much per call (libmilter's MILTER_CHUNK_SIZE)
_BODY_CHUNK = 65535


def _milter_value(value: str | None) -> str | None:
    """A header value for the MTA: folded lines end in LF (libmilter's convention), and
    8-bit bytes (kept as surrogate escapes) go back as they came."""
    if value is None:
        return None
    if not value.isascii():
        value = value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return value.replace("\r\n", "\n")


def _escape(text: str) -> str:
    # libmilter's smfi_setreply treats % as a format character.
    return text.replace("%", "%%")


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def trusts_auth(socket: Socket, trust: TrustAuth) -> bool:
    """Whether the milter on ``socket`` believes the SMTP AUTH login (``{auth_authen}``)
    the connecting MTA passes.

    libmilter does not tell the milter who connected: whoever can connect to the socket
    can send any macro, so the login is only as trustworthy as the socket's access.  A
    unix socket is open only to its owner and the MTA's group (0660, ``socket_group``);
    an ``inet:`` socket is open to every local user (or, off loopback, to the network), so
    its logins are believed only when ``milter.trust_auth = "always"`` says so, and never
    off loopback."""
    if trust is TrustAuth.never:
        return False
    if isinstance(socket, UnixSocket):
        return True
    if trust is TrustAuth.always:
        assert isinstance(socket, InetSocket)
        if not _is_loopback(socket.host):
            raise ConfigError(
                "milter.trust_auth",
                _(
                    "the milter listens on {socket}, not on a loopback address: anyone who "
                    "can reach it could claim an SMTP AUTH login; use a unix socket, a "
                    'loopback address, or trust_auth = "unix"'
                ).format(socket=socket),
            )
        return True
    return False


@dataclass
class Counts:
    """What the MTA sent one milter connection (``milter.log_connections`` logs it when the
    connection ends): its transactions, how many of them stepped aside at DATA (no list
    recipient: nothing more of them was sent), and the header, body and end-of-message
    callbacks that came in."""

    transactions: int = 0
    stepped_aside: int = 0
    headers: int = 0
    body_chunks: int = 0
    ends_of_message: int = 0
    #: the MTA's queue ids of the transactions (only while logging them)
    queue_ids: list[str] = field(default_factory=list)

    def line(self) -> str:
        return (
            f"milter connection: transactions={self.transactions}"
            f" stepped_aside={self.stepped_aside} headers={self.headers}"
            f" body_chunks={self.body_chunks} ends_of_message={self.ends_of_message}"
            f" queue_ids={','.join(self.queue_ids) or '-'}"
        )


class ListMilter(Milter.Base):
    """One MTA connection.  Every step that needs no answer is negotiated away
    (``SMFIP_NR_*``); the end of headers is not sent at all (``SMFIP_NOEOH``: the blank
    line is put back at end of message).  RCPT answers (an unknown list address is
    refused there), and so does DATA: a transaction without a list recipient answers
    ACCEPT there, and the MTA sends this milter nothing more of it (docs/benchmarks.md,
    "Mail for other domains")."""

    #: believe the MTA's ``{auth_authen}`` (:func:`trusts_auth`)
    trust_auth = False
    #: log :class:`Counts` when the connection ends (``milter.log_connections``)
    log_connections = False

    def __init__(self, engine: ListEngine) -> None:
        self.engine = engine
        self.envelope = Envelope()
        self.head: list[bytes] = []
        self.body_chunks: list[bytes] = []
        #: the lists this transaction's recipients name (its RCPT lookups)
        self.found: Found = {}
        self.client_address = ""
        self.client_name = ""
        self.helo = ""
        self.counts = Counts()

    def _refuse(self, reply: Reply) -> int:
        """Set the reply; REJECT for a permanent one, TEMPFAIL for a temporary one."""
        self.setreply(str(reply.code), reply.enhanced, _escape(reply.text))
        return Milter.REJECT if isinstance(reply, PermanentReply) else Milter.TEMPFAIL

    # --- connection ---------------------------------------------------------------------
    @Milter.noreply
    def connect(self, hostname: str, family: int, hostaddr: object) -> int:
        # (kept: a held post records the client, and SPF checks it when
        # authentication.verify_incoming is on)
        self.client_name = hostname or ""
        if isinstance(hostaddr, tuple) and hostaddr:
            self.client_address = str(hostaddr[0])
        return Milter.CONTINUE

    @Milter.noreply
    def hello(self, helo: str) -> int:
        self.helo = helo or ""
        return Milter.CONTINUE

    # --- transaction --------------------------------------------------------------------
    @Milter.noreply
    def envfrom(self, mailfrom: str, *params: str) -> int:
        self.envelope = Envelope(
            mail_from=mailfrom,
            client_address=self.client_address,
            client_name=self.client_name,
            helo=self.helo,
            auth_user=(self.getsymval("{auth_authen}") or "") if self.trust_auth else "",
        )
        self.head = []
        self.body_chunks = []
        self.found = {}
        self.counts.transactions += 1
        return Milter.CONTINUE

    def envrcpt(self, to: str, *params: str) -> int:
        check = self.engine.check_recipient(to, self.found)
        if check.reply is not None:
            return self._refuse(check.reply)
        self.envelope.recipients.append(to)
        return Milter.CONTINUE

    def data(self) -> int:
        """Every recipient is known: without a list recipient the milter steps aside
        (ACCEPT: no header, body or end of message of this transaction is sent to it)."""
        if self.log_connections:
            self.counts.queue_ids.append(self.getsymval("i") or "-")
        if self.found:
            return Milter.CONTINUE
        self.counts.stepped_aside += 1
        return Milter.ACCEPT

    @Milter.noreply
    def header(self, name: str, value: str) -> int:
        self._header(name, value.encode("utf-8", "surrogateescape"))
        return Milter.CONTINUE

    def header_bytes(self, name: str, value: bytes) -> int:
        """What libmilter calls for each header field (pymilter's :meth:`header` would
        decode the value only for it to be encoded again)."""
        self._header(name, value)
        return Milter.NOREPLY if self._protocol & Milter.P_NR_HDR else Milter.CONTINUE

    def _header(self, name: str, value: bytes) -> None:
        self.counts.headers += 1
        self.head.append(b"%s: %s\r\n" % (name.encode("utf-8", "surrogateescape"), value))

    @Milter.noreply
    def body(self, chunk: bytes) -> int:
        self.counts.body_chunks += 1
        self.body_chunks.append(chunk)
        return Milter.CONTINUE

    def eom(self) -> int:
        self.counts.ends_of_message += 1
        self.envelope.queue_id = self.getsymval("i") or ""
        raw = b"".join(self.head) + b"\r\n" + b"".join(self.body_chunks)
        self.head = []
        self.body_chunks = []
        return self._apply(self.engine.decide(self.envelope, raw, found=self.found))

    def _apply(self, verdict: Verdict) -> int:
        match verdict:
            case Accept(edits=edits):
                # Postfix applies each edit as it arrives; a milter that dies half way
                # leaves the post accepted with the edits made so far (default_action=
                # accept, contrib/postfix), its list address queued for the LMTP front
                # end, which decides it again.  So, in this order: the members first (a
                # kill among them: those members get a copy twice, none is lost); the
                # header edits only once every member has the post (they add List-Post,
                # and the LMTP front end discards a post carrying it as a loop); the
                # list address last.
                for email in edits.add_recipients:
                    self.addrcpt(f"<{email}>")
                for op in edits.header_ops:
                    match op:
                        case ChangeHeader(name, index, value):
                            self.chgheader(name, index, _milter_value(value))
                        case DeleteHeader(name, index):
                            self.chgheader(name, index, None)
                        case InsertHeader(name, value, position):
                            self.addheader(name, _milter_value(value) or "", position)
                        case AddHeader(name, value):
                            self.addheader(name, _milter_value(value) or "")
                if edits.body is not None:
                    for start in range(0, len(edits.body), _BODY_CHUNK):
                        self.replacebody(edits.body[start : start + _BODY_CHUNK])
                if edits.mail_from is not None:
                    self.chgfrom(f"<{edits.mail_from}>")
                for rcpt in edits.del_recipients:
                    self.delrcpt(rcpt)
                return Milter.ACCEPT
            case Discard():
                return Milter.DISCARD
            case Reject(reply=reply):
                return self._refuse(reply)
            case TempFail(reply=reply):
                return self._refuse(reply)
        raise AssertionError(f"unknown verdict {verdict!r}")

    def abort(self) -> int:
        self.head = []
        self.body_chunks = []
        return Milter.CONTINUE

    def close(self) -> int:
        if self.log_connections:
            log.info("%s", self.counts.line())
        return Milter.CONTINUE


def milter_class(
    socket: Socket, trust: TrustAuth = TrustAuth.unix, log_connections: bool = False
) -> type[ListMilter]:
    """The milter class for ``socket``; it believes SMTP AUTH logins as :func:`trusts_auth`
    says (a :class:`ConfigError` for a setting that would trust the network) and logs each
    connection's :class:`Counts` when ``log_connections``."""
    attributes = {"trust_auth": trusts_auth(socket, trust), "log_connections": log_connections}
    return type(ListMilter.__name__, (ListMilter,), attributes)
