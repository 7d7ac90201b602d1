"""How a member looks in REST: the entry of ``/members``, the rosters and ``/addresses/…/
memberships``.

Entries are read with one joined SELECT of the columns they show (no ORM objects); the
member's delivery mode is resolved member → address → user → system default, as Mailman
does.

The bounce record is served as Mailman 3.3 serves it: ``bounce_score`` and
``total_warnings_sent`` as numbers, ``last_bounce_received`` as a naive UTC ISO 8601 time
and left out while the member has never bounced, ``last_warning_sent`` always, with
Mailman's ``datetime.min`` (:data:`NEVER`) while no warning was sent.  All four are
read-only (Mailman's PATCH takes none of them).
"""

from __future__ import annotations

from typing import Any

import falcon
from sqlalchemy import Select, func, select
from sqlalchemy.orm import aliased

from mtaplugin.api.dialect import Params, iso, resource
from mtaplugin.api.resources.base import session, url
from mtaplugin.enums import DeliveryMode
from mtaplugin.model import Address, MailingList, Member, User

#: ``last_warning_sent`` of a member never warned: Mailman's ``datetime.min``
NEVER = "0001-01-01T00:00:00"
#: kept by bounce processing; a PATCH naming one is refused with its name
BOUNCE_FIELDS = ("bounce_score", "last_bounce_received", "last_warning_sent", "total_warnings_sent")

MEMBER_USER = aliased(User)
ADDRESS_USER = aliased(User)

_COLUMNS = (
    Member.member_id,
    Member.role,
    Member.display_name,
    Member.moderation_action,
    Member.bounce_score,
    Member.last_bounce_received,
    Member.last_warning_sent,
    Member.total_warnings_sent,
    Member.subscription_mode,
    Member.delivery_mode,
    Member.topics,
    Member.receive_nonmatching_topics,
    Address.email,
    Address.display_name.label("address_name"),
    Address.delivery_mode.label("address_mode"),
    MailingList.list_id,
    func.coalesce(MEMBER_USER.user_id, ADDRESS_USER.user_id).label("user_id"),
    func.coalesce(MEMBER_USER.delivery_mode, ADDRESS_USER.delivery_mode).label("user_mode"),
)


def member_query() -> Select[*tuple[Any, ...]]:
    return (
        select(*_COLUMNS)
        .join(Address, Address.id == Member.address_id)
        .join(MailingList, MailingList.id == Member.mailing_list_id)
        .outerjoin(MEMBER_USER, MEMBER_USER.id == Member.user_id)
        .outerjoin(ADDRESS_USER, ADDRESS_USER.id == Address.user_id)
        .order_by(Member.id)
    )


def member_entry(req: falcon.Request, row: Any) -> dict[str, Any]:
    mode = row.delivery_mode or row.address_mode or row.user_mode or DeliveryMode.regular
    return resource(
        {
            "address": url(req, "addresses", row.email),
            "bounce_score": row.bounce_score,
            "last_bounce_received": iso(row.last_bounce_received),
            "last_warning_sent": iso(row.last_warning_sent) or NEVER,
            "total_warnings_sent": row.total_warnings_sent,
            "delivery_mode": DeliveryMode(mode).value,
            "display_name": row.display_name or row.address_name or None,
            "email": row.email,
            "list_id": row.list_id,
            "member_id": row.member_id,
            "moderation_action": row.moderation_action.value if row.moderation_action else None,
            "role": row.role.value,
            "self_link": url(req, "members", row.member_id),
            "subscription_mode": row.subscription_mode.value,
            "user": url(req, "users", row.user_id) if row.user_id else None,
            # Mailman 2.1's topics: shown once the member chose some
            "topics": list(row.topics) if row.topics else None,
            "receive_nonmatching_topics": row.receive_nonmatching_topics if row.topics else None,
        },
        drop_none=True,
    )


def entries_with_fields(req: falcon.Request) -> Any:
    """The entry maker of member collections: ``fields=`` (repeatable) keeps only those
    keys, as Mailman does (Postorius asks for a few to page large rosters)."""
    wanted = set(Params.of(req).list("fields"))
    if not wanted:
        return lambda row: member_entry(req, row)

    def entry(row: Any) -> dict[str, Any]:
        full = member_entry(req, row)
        return {k: v for k, v in full.items() if k in wanted or k == "http_etag"}

    return entry


def one_entry(req: falcon.Request, member_pk: int) -> dict[str, Any]:
    row = session(req).execute(member_query().where(Member.id == member_pk)).one()
    return member_entry(req, row)
