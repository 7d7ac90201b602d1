"""What the engine, the worker and a released hold do with DNS and keys.

One object per process, built from the settings by :func:`mtaplugin.wiring.build`:

- :meth:`Deliverability.authenticate`: how the post was authenticated when it came in --
  our own DKIM/SPF/DMARC/ARC checks (``authentication.verify_incoming``: the post's own
  Authentication-Results are then never read), or else the topmost
  Authentication-Results of a trusted verifier, recorded with :mod:`authres`;
- :meth:`Deliverability.dmarc_policy`: the From: domain's DMARC policy, looked up once per
  post and only when one of the lists addressed mitigates.  When DNS cannot answer,
  ``dns.on_failure`` decides: ``tempfail`` raises :class:`~mtaplugin.errors.TryLater`
  (the post gets 4xx and comes back; nothing leaves unmitigated) or ``mitigate``
  (Mailman's way: as if the domain published ``p=reject``);
- :meth:`Deliverability.seal`: the last step of every copy that leaves -- the ARC set that
  records the incoming results, then the DKIM signature of the list domain.  The keys
  (``mtaplugin dkim keygen``) are read from SQL and kept for :data:`KEY_TTL` seconds.

A list copy that is made later (a personalized copy in the worker, a released hold) keeps
what it needs to be sealed in a :class:`SealInfo`: the list domain and the results text.

:func:`install` hooks our code into the two libraries that have no other hook point
(dkimpy's RSA signing, pyspf's DNS lookups).  Nothing is patched on import: the
composition root (:func:`mtaplugin.wiring.build`) calls :func:`install` once per process
(idempotent); without it an SPF check refuses to run and dkimpy signs RSA by its own code.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection
from sqlalchemy.orm import Session

from mtaplugin.enums import DMARCMitigateAction
from mtaplugin.mailauth import dmarc, openssl_rsa, resolver, signing, verify
from mtaplugin.mailauth.resolver import Resolver
from mtaplugin.mailauth.results import AuthResults, read_trusted
from mtaplugin.model import MailingList
from mtaplugin.vocabulary import addresses
from mtaplugin.vocabulary.envelope import Envelope, Post

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)

#: seconds a list domain's DKIM key (or the absence of one) is kept in memory
KEY_TTL = 30.0


def install() -> None:
    """Hook mail authentication into dkimpy and pyspf, once per process (idempotent):
    :func:`~mtaplugin.mailauth.openssl_rsa.install_openssl_rsa` (RSA signatures through
    OpenSSL, the same bytes ten times faster) and
    :func:`~mtaplugin.mailauth.resolver.install_spf_adapter` (SPF lookups through our
    :class:`~mtaplugin.mailauth.resolver.Resolver`, without which SPF cannot be checked)."""
    openssl_rsa.install_openssl_rsa()
    resolver.install_spf_adapter()


@dataclass(frozen=True)
class SealInfo:
    """What a copy made later needs for its ARC set and DKIM signature."""

    mail_host: str
    #: the Authentication-Results value the ARC set records ("" when none)
    results: str = ""

    def as_record(self) -> dict[str, str]:
        return {"seal_host": self.mail_host, "seal_results": self.results}

    @classmethod
    def from_record(cls, record: dict[str, Any] | None) -> SealInfo | None:
        if not record or not record.get("seal_host"):
            return None
        return cls(str(record["seal_host"]), str(record.get("seal_results", "")))


#: where a key is read: a session or connection, or a function that gives one when needed
Source = Session | Connection | Callable[[], Session | Connection]


class KeyCache:
    """The list domains' signing keys, read from SQL at most every :data:`KEY_TTL`
    seconds per domain (a new key takes effect within that time)."""

    def __init__(self, ttl: float = KEY_TTL, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self.clock = clock
        self._keys: dict[str, tuple[float, signing.SigningKey | None]] = {}
        self._lock = threading.Lock()

    def get(self, db: Source, mail_host: str) -> signing.SigningKey | None:
        """``db``: a session or connection, or a function that gives one (called only to
        read the key)."""
        now = self.clock()
        with self._lock:
            hit = self._keys.get(mail_host)
        if hit is not None and hit[0] > now:
            return hit[1]
        if callable(db):
            db = db()
        if isinstance(db, Session):
            key = signing.key_for(db, mail_host)
        else:
            with Session(bind=db) as session:
                key = signing.key_for(session, mail_host)
        with self._lock:
            self._keys[mail_host] = (now + self.ttl, key)
        return key


def _mitigates(mlist: MailingList) -> bool:
    return mlist.dmarc_mitigate_action is not DMARCMitigateAction.no_mitigation


class ListSigner:
    """Seals and signs a list's copy when the list domain has a key (else returns it as
    it is); :meth:`signs` tells beforehand, so that an unsigned copy is never written out
    only to be handed back."""

    def __init__(self, service: Deliverability, db: Source, results: Callable[[], str]) -> None:
        self.service = service
        self.db = db
        self.results = results

    def signs(self, mlist: MailingList) -> bool:
        return self.service.keys.get(self.db, mlist.mail_host) is not None

    def __call__(self, mlist: MailingList, raw: bytes) -> bytes:
        if not self.signs(mlist):
            return raw
        return self.service.seal(self.db, SealInfo(mlist.mail_host, self.results()), raw)


class Deliverability:
    def __init__(
        self,
        resolver: Resolver | None = None,
        *,
        authserv_id: str = "",
        verify_incoming: bool = False,
        trusted_authserv_ids: Iterable[str] = (),
        on_failure: str = "tempfail",
        arc_seal: bool = True,
        keys: KeyCache | None = None,
    ) -> None:
        self.resolver = resolver or Resolver()
        self.authserv_id = authserv_id or socket.getfqdn() or "localhost"
        self.verify_incoming = verify_incoming
        self.trusted = frozenset(i.lower() for i in trusted_authserv_ids)
        self.on_failure = on_failure
        self.arc_seal = arc_seal
        self.keys = keys or KeyCache()

    # --- coming in -----------------------------------------------------------------------
    def authenticate(self, post: Post, envelope: Envelope) -> AuthResults | None:
        """The post's authentication results: checked here when ``verify_incoming`` (the
        post's own Authentication-Results are then never read), else those of a trusted
        verifier's topmost headers (None when there are none)."""
        if not self.verify_incoming:
            if not self.trusted:
                return None
            from_domain = addresses.split(post.from_address)[1]
            return read_trusted(post, from_domain, self.trusted, envelope.local_received)
        return verify.check(post.raw, envelope, self.resolver)

    def results_text(self, results: AuthResults | None) -> str:
        return results.header(self.authserv_id) if results is not None else ""

    def dmarc_policy(
        self, from_address: str, lists: Iterable[MailingList]
    ) -> dmarc.DmarcPolicy | None:
        """The From: domain's policy when one of ``lists`` mitigates (else None, and no
        lookup).  Raises TryLater when DNS cannot answer and ``on_failure`` is tempfail."""
        if "@" not in from_address or not any(_mitigates(m) for m in lists):
            return None
        return dmarc.lookup_policy(
            self.resolver, from_address.rpartition("@")[2], on_failure=self.on_failure
        )

    # --- going out -----------------------------------------------------------------------
    def seal(self, db: Source, info: SealInfo, raw: bytes) -> bytes:
        """``raw`` with the ARC set (recording ``info.results``) and the DKIM signature of
        the list domain; as it is when the domain has no key."""
        key = self.keys.get(db, info.mail_host)
        if key is None:
            return raw
        if not self.arc_seal:
            return signing.dkim_sign(raw, key)
        results = info.results or f"{self.authserv_id}; none"
        return signing.seal_and_sign(raw, key, self.authserv_id, results)

    def signer(self, db: Source, results: Callable[[], str]) -> ListSigner:
        """A signer for :mod:`mtaplugin.copies.paths` (one post, one database connection);
        ``results`` is asked only when the list domain has a key."""
        return ListSigner(self, db, results)
