"""Which recipients are list addresses: the answer at RCPT, and the lists a transaction
addresses at end of message."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection

from mtaplugin.commands import dispatch
from mtaplugin.i18n import _
from mtaplugin.lists import roster
from mtaplugin.posting import addresses
from mtaplugin.posting.addresses import Subaddress
from mtaplugin.posting.envelope import Envelope
from mtaplugin.posting.verdict import RecipientCheck, permanent


@dataclass(frozen=True)
class Target:
    """A list recipient of the transaction: as the MTA gave it, and the list it names."""

    recipient: str
    found: roster.FoundList

    @property
    def subaddress(self) -> Subaddress:
        return self.found.address.subaddress


def resolve(db: roster.DB, recipient: str) -> RecipientCheck:
    """The RCPT answer: a list address (or one of its sub-addresses) is accepted; an
    address in a list domain that names no list gets 550 5.1.1; anything else passes."""
    readings = addresses.candidates(recipient)
    if not readings:
        return RecipientCheck()
    found = roster.lookup_lists(db, readings)
    if found:
        hit = found[0]
        refusal = dispatch.check_recipient(db, hit, recipient)
        return RecipientCheck(refusal, hit.list_id, hit.address.subaddress)
    if roster.domain_exists(db, readings[0].mail_host):
        return RecipientCheck(
            permanent(
                "5.1.1",
                _("<{address}>: no such list at {domain}").format(
                    address=addresses.strip_brackets(recipient),
                    domain=readings[0].mail_host,
                ),
            )
        )
    return RecipientCheck()


def targets(conn: Connection, envelope: Envelope) -> tuple[list[Target], list[str]]:
    """The list recipients, and the recipients that repeat one of them (``<Team@x>``
    beside ``<team@x>``): those are removed from the message and not decided twice."""
    found_targets: list[Target] = []
    repeats: list[str] = []
    seen: set[tuple[int, Subaddress, str]] = set()
    for rcpt in envelope.recipients:
        readings = addresses.candidates(rcpt)
        found = roster.lookup_lists(conn, readings) if readings else []
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
