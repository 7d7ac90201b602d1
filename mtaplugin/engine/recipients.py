"""Which recipients are list addresses: the answer at RCPT, and the lists a transaction
addresses at end of message."""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection

from mtaplugin.commands import dispatch
from mtaplugin.i18n import _
from mtaplugin.lists import roster
from mtaplugin.posting.verdict import RecipientCheck, permanent
from mtaplugin.vocabulary import addresses
from mtaplugin.vocabulary.addresses import ListAddress, Subaddress
from mtaplugin.vocabulary.envelope import Envelope


@dataclass(frozen=True)
class Target:
    """A list recipient of the transaction: as the MTA gave it, and the list it names."""

    recipient: str
    found: roster.FoundList

    @property
    def subaddress(self) -> Subaddress:
        return self.found.address.subaddress


def resolve(db: roster.DB, recipient: str, now: datetime) -> RecipientCheck:
    """The RCPT answer: a list address (or one of its sub-addresses) is accepted; an
    address in a list domain that names no list gets 550 5.1.1; anything else passes.
    (The engine asks :func:`in_list_domain` first, then :func:`answer`.)"""
    readings = addresses.candidates(recipient)
    if not readings or not roster.domain_exists(db, readings[0].mail_host):
        return RecipientCheck()
    return answer(db, recipient, readings, now)[0]


def answer(
    db: roster.DB | roster.KeptConnections,
    recipient: str,
    readings: list[ListAddress],
    now: datetime,
) -> tuple[RecipientCheck, roster.FoundList | None]:
    """The RCPT answer for a recipient in a list domain (``readings``: its readings as a
    list address, :func:`~mtaplugin.vocabulary.addresses.candidates`), and the list it names:
    a list address (or one of its sub-addresses) is accepted; any other address gets
    550 5.1.1.  ``now``: the engine's clock (a confirmation token is live until then)."""
    found = roster.lookup_lists(db, readings)
    if found:
        hit = found[0]
        if not isinstance(db, roster.KeptConnections):
            refusal = dispatch.check_recipient(db, hit, recipient, now)
        elif dispatch.recipient_needs_check(hit):
            # a confirmation token to look up: on a connection of the pool
            with db.engine.connect() as conn:
                refusal = dispatch.check_recipient(conn, hit, recipient, now)
        else:
            refusal = None
        return RecipientCheck(refusal, hit.list_id, hit.address.subaddress), hit
    refusal = permanent(
        "5.1.1",
        _("<{address}>: no such list at {domain}").format(
            address=addresses.strip_brackets(recipient), domain=readings[0].mail_host
        ),
    )
    return RecipientCheck(refusal), None


def in_list_domain(recipient: str, domains: Container[str]) -> list[ListAddress]:
    """The readings of ``recipient`` as a list address when its domain is one of
    ``domains`` (the list domains; asking may raise :class:`~mtaplugin.errors.TryLater`),
    else none: no query for a recipient in any other domain."""
    readings = addresses.candidates(recipient)
    if readings and readings[0].mail_host in domains:
        return readings
    return []


def targets(
    db: Callable[[], Connection],
    envelope: Envelope,
    domains: Container[str],
    known: Mapping[str, roster.FoundList],
) -> tuple[list[Target], list[str]]:
    """The list recipients, and the recipients that repeat one of them (``<Team@x>``
    beside ``<team@x>``): those are removed from the message and not decided twice.
    ``known``: the lists the transaction's RCPT lookups found (by recipient), which are
    not looked up again (their generation was read a moment ago); ``db()``: the decision's
    transaction, asked for only to look up a recipient the RCPT lookups did not find."""
    found_targets: list[Target] = []
    repeats: list[str] = []
    seen: set[tuple[int, Subaddress, str]] = set()
    for rcpt in envelope.recipients:
        hit = known.get(rcpt)
        if hit is None:
            readings = in_list_domain(rcpt, domains)
            found = roster.lookup_lists(db(), readings) if readings else []
            if not found:
                continue
            hit = found[0]
        key = (hit.pk, hit.address.subaddress, hit.address.extension)
        if key in seen:
            repeats.append(rcpt)
            continue
        seen.add(key)
        found_targets.append(Target(rcpt, hit))
    return found_targets, repeats
