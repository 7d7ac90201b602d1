"""Mailing lists: create (with a style), find, list, remove."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from mtaplugin.clock import Clock, system_clock
from mtaplugin.enums import (
    Action,
    ArchivePolicy,
    MemberRole,
    SubscriptionPolicy,
)
from mtaplugin.errors import AlreadyExists, InvalidInput, NotFound
from mtaplugin.i18n import _
from mtaplugin.manage import domains
from mtaplugin.model import Address, MailingList, Member
from mtaplugin.vocabulary.addresses import split_fqdn_listname


def _legacy_default(mlist: MailingList) -> None:
    """A discussion list: members post freely, nonmembers are held."""


def _legacy_announce(mlist: MailingList) -> None:
    """An announce list: only moderators and owners post (with approval); members read.

    Nonmember posts are refused at SMTP time instead of being discarded: the sender learns
    at once that the list does not take their mail, and there is no backscatter.
    """
    mlist.allow_list_posts = False
    mlist.default_member_action = Action.hold
    mlist.default_nonmember_action = Action.reject


def _private_default(mlist: MailingList) -> None:
    """A private discussion list: subscriptions confirmed then moderated, private archive."""
    mlist.advertised = False
    mlist.subscription_policy = SubscriptionPolicy.confirm_then_moderate
    mlist.archive_policy = ArchivePolicy.private


STYLES: dict[str, tuple[str, Callable[[MailingList], None]]] = {
    "legacy-default": ("Ordinary discussion mailing list style.", _legacy_default),
    "legacy-announce": ("Announce only mailing list style.", _legacy_announce),
    "private-default": ("Discussion mailing list style with private archives.", _private_default),
}
DEFAULT_STYLE = "legacy-default"


def create(
    session: Session,
    fqdn_listname: str,
    style_name: str = DEFAULT_STYLE,
    display_name: str = "",
    description: str = "",
    *,
    clock: Clock = system_clock,
) -> MailingList:
    list_name, mail_host = split_fqdn_listname(fqdn_listname)
    if style_name not in STYLES:
        raise InvalidInput(
            "style_name",
            _("unknown style {style!r}; choose one of: {styles}").format(
                style=style_name, styles=", ".join(STYLES)
            ),
        )
    domains.get(session, mail_host)
    list_id = f"{list_name}.{mail_host}"
    if session.scalar(select(MailingList.id).where(MailingList.list_id == list_id)) is not None:
        raise AlreadyExists(
            "fqdn_listname", _("mailing list exists: {name}").format(name=fqdn_listname.lower())
        )
    display = display_name or list_name.capitalize()
    mlist = MailingList(
        list_name=list_name,
        mail_host=mail_host,
        list_id=list_id,
        display_name=display,
        description=description,
        subject_prefix=f"[{display}] ",
        style_name=style_name,
        created_at=clock(),
    )
    STYLES[style_name][1](mlist)
    session.add(mlist)
    session.flush()
    return mlist


def get(session: Session, name: str) -> MailingList:
    """Find a list by ``list@domain`` (fqdn_listname) or ``list.domain`` (list_id)."""
    key = name.strip().lower()
    column = MailingList.list_id if "@" not in key else None
    if column is not None:
        mlist = session.scalar(select(MailingList).where(MailingList.list_id == key))
    else:
        local, _at, domain = key.partition("@")
        mlist = session.scalar(
            select(MailingList).where(
                MailingList.list_name == local, MailingList.mail_host == domain
            )
        )
    if mlist is None:
        raise NotFound("list", _("no such list: {name}").format(name=name))
    return mlist


def all_lists(session: Session, mail_host: str | None = None) -> list[tuple[MailingList, int]]:
    """Lists (of one domain, or all) with their number of members, by address."""
    query = (
        select(MailingList, func.count(Member.id))
        .outerjoin(
            Member,
            (Member.mailing_list_id == MailingList.id) & (Member.role == MemberRole.member),
        )
        .group_by(MailingList.id)
        .order_by(MailingList.mail_host, MailingList.list_name)
    )
    if mail_host is not None:
        domains.get(session, mail_host)
        query = query.where(MailingList.mail_host == mail_host.strip().lower())
    return [(m, n) for m, n in session.execute(query)]


def remove(session: Session, name: str) -> None:
    session.delete(get(session, name))
    session.flush()


def staff(session: Session, mlist: MailingList, site_owner: str = "") -> list[str]:
    """Owners and moderators of the list (who hear of its requests); the site owner when it
    has none."""
    return holders(session, mlist, (MemberRole.owner, MemberRole.moderator), site_owner)


def holders(
    session: Session, mlist: MailingList, roles: Iterable[MemberRole], site_owner: str = ""
) -> list[str]:
    """The addresses holding one of ``roles`` on the list, sorted; the site owner when there
    is none (as in Mailman)."""
    found = sorted(
        set(
            session.scalars(
                select(Address.email)
                .join(Member, Member.address_id == Address.id)
                .where(Member.mailing_list_id == mlist.id, Member.role.in_(list(roles)))
            )
        )
    )
    return found or ([site_owner] if site_owner else [])
