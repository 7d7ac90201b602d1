"""Notices of bounce processing: to the owners when a member's bounce score goes up
(``list:admin:notice:increment``), their delivery is disabled (``...:disable``) or they are
removed (``...:removal``); to the member, the warnings that their delivery is disabled
(``list:user:notice:warning``) and the probe (``list:user:notice:probe``).

Each returns the raw message; the owners' notices are in the list's language, the member's
in theirs.  The caller puts them in the outbox with the list's ``-bounces`` address as the
envelope sender (a probe: its VERP token address)."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy.orm import Session

from mtaplugin.i18n import N_, _
from mtaplugin.model import MailingList
from mtaplugin.notices import build
from mtaplugin.notices.membership import MemberNotice
from mtaplugin.notices.templates import rendered


def _to_owners(kind: str, title: str) -> Callable[[Session | None, MailingList, str, int], bytes]:
    """The owners' notice ``list:admin:notice:<kind>``; ``title`` (marked with ``N_``) is
    its subject when the template has none, with ``{member}`` and ``{list}`` filled in."""

    def notice(session: Session | None, mlist: MailingList, member: str, score: int) -> bytes:
        body, subject = rendered(
            f"list:admin:notice:{kind}",
            mlist.preferred_language,
            lambda: _(title).format(member=member, list=mlist.display_name or mlist.list_name),
            session=session,
            mlist=mlist,
            member=member,
            user_email=member,
            score=score,
            threshold=mlist.bounce_score_threshold,
        )
        return build(mlist.owner_address, mlist.owner_address, subject, body)

    return notice


increment = _to_owners("increment", N_("{member}'s bounce score on {list} went up"))
disable = _to_owners("disable", N_("{member}'s delivery disabled on {list}"))
removal = _to_owners("removal", N_("{member} removed from {list} because of bounces"))


#: ``list:user:notice:warning``: from the list's -request address, so that a reply with
#: ``set delivery on`` switches delivery back on
warning = MemberNotice(
    "list:user:notice:warning", N_("Your delivery from the {name} mailing list is disabled")
)


def probe(
    session: Session | None, mlist: MailingList, email: str, language: str, token: str
) -> bytes:
    """``list:user:notice:probe``: from the list's owners, so that a reply reaches a person."""
    body, subject = rendered(
        "list:user:notice:probe",
        language,
        lambda: _("{list} mailing list probe message").format(
            list=mlist.display_name or mlist.list_name
        ),
        session=session,
        mlist=mlist,
        user_email=email,
        token=token,
    )
    return build(mlist.owner_address, email, subject, body)
