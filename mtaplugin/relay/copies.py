"""What leaves for each recipient of an outbox row (:mod:`mtaplugin.relay.deliver`): the
envelope sender of each transaction (:class:`Senders`: the row's own, or VERPed per
member) and the copy each recipient gets (:class:`Copies`: the row's bytes, or one made per
member as it leaves; sealed when the row is a list copy)."""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol

from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.bounces import verp
from mtaplugin.copies.transforms import DIGEST_OWN_STEPS, OWN_STEPS, own_copy
from mtaplugin.lists import roster
from mtaplugin.lists.roster import Reader
from mtaplugin.mailauth.service import SealInfo
from mtaplugin.model import MailingList
from mtaplugin.outbox.store import Row
from mtaplugin.posting.transform_context import TransformContext


class Sealer(Protocol):
    """ARC-seals and DKIM-signs a list copy as it leaves
    (:class:`mtaplugin.mailauth.service.Deliverability`)."""

    def seal(self, db: Session, info: SealInfo, raw: bytes) -> bytes: ...


class Senders:
    """The envelope sender of each transaction of a row: the row's own (the list's
    -bounces address), or for a VERPed list post each member's VERPed one -- written by
    the MTA (``outbox.xverp``: one transaction for many members) or here (one member
    per transaction)."""

    def __init__(self, row: Row, verped: bool, xverp: bool) -> None:
        self.row = row
        self.verped = verped
        #: the MTA VERPs each recipient of a shared copy (own copies go one by one anyway)
        self.xverp = verped and xverp and row.personalize is None

    @property
    def one_per_recipient(self) -> bool:
        return self.verped and not self.xverp

    def mail_from(self, recipient: str) -> str:
        if self.verped:
            return verp.encode(self.row.mail_from, recipient.lower())
        return self.row.mail_from


class Copies:
    """The copy each recipient of a row gets: the row's own bytes, or (a list post whose
    members get their own copies) one made per member as it leaves; then sealed, when the
    row is a list copy and the delivery has a sealer.  A shared copy is made once."""

    def __init__(
        self,
        sessions: sessionmaker[Session],
        sealer: Sealer | None,
        secret_key: str,
        row: Row,
    ) -> None:
        self.sessions = sessions
        self.sealer = sealer
        self.row = row
        self.context = own_copy_context(sessions, secret_key, row) if row.personalize else None
        self._readers: dict[str, Reader] | None = None
        self._shared: bytes | None = None

    def reader(self, email: str) -> Reader:
        """The member's name and language (read once per row, for ``$user_name``,
        ``$user_language`` and ``personalize = full``)."""
        if self._readers is None:
            with self.sessions() as session:
                pk = self.row.mailing_list_id
                self._readers = roster.readers(session, pk) if pk is not None else {}
        return self._readers.get(email, Reader("", ""))

    @property
    def own(self) -> bool:
        """Each member gets a copy of its own (one recipient per transaction)."""
        return self.context is not None

    def for_recipient(self, email: str) -> bytes:
        if self.context is None and self._shared is not None:
            return self._shared
        raw = self.row.raw
        if self.context is not None:
            who = self.reader(email)
            member = replace(
                self.context, member=email, member_name=who.name, member_language=who.language
            )
            digest = self.row.personalize is not None and self.row.personalize.digest
            raw = own_copy(member, raw, DIGEST_OWN_STEPS if digest else OWN_STEPS)
        if self.row.seal is not None and self.sealer is not None:
            with self.sessions() as session:
                raw = self.sealer.seal(session, self.row.seal, raw)
        if self.context is None:
            self._shared = raw
        return raw


def own_copy_context(
    sessions: sessionmaker[Session], secret_key: str, row: Row
) -> TransformContext | None:
    """What each member's copy of ``row`` is made with (None: its list is gone; then the
    archive copy goes as it is)."""
    # Imported here: mtaplugin.copies.paths puts things in the outbox.
    from mtaplugin.copies import paths as copies

    info = row.personalize
    if info is None or row.mailing_list_id is None:
        return None
    with sessions() as session:
        mlist = session.get(MailingList, row.mailing_list_id)
        if mlist is None:
            return None
        ctx = copies.session_context(
            session, mlist, info.post_number, should_mitigate=info.should_mitigate
        )
        session.expunge(mlist)
    return replace(ctx, unsubscribe_secret=secret_key)
