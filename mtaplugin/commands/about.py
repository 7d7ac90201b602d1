"""Mailman 2.1's email commands about a list and the site: ``info`` (what the list is and
where to read more), ``lists`` (the lists of the domain that are advertised) and
``password`` (where to set a password: mtaplugin never sends or takes one by mail).

``options`` (Mailman 2.1's name for ``set show``) and ``remove`` (its other name for
``unsubscribe``) are aliases in :data:`mtaplugin.commands.builtin.COMMANDS`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import select

from mtaplugin.i18n import _
from mtaplugin.model import Domain, MailingList

if TYPE_CHECKING:
    from mtaplugin.commands.mail import CommandMail


def _web_base(mail: CommandMail) -> str:
    """The list domain's web address (its ``base_url``), "" when it has none."""
    base = mail.session.scalar(
        select(Domain.base_url).where(Domain.mail_host == mail.mlist.mail_host)
    )
    return (base or "").rstrip("/")


def info(mail: CommandMail, args: list[str]) -> None:
    mlist = mail.mlist
    lines = [
        _("{name} <{address}>").format(
            name=mlist.display_name or mlist.list_name, address=mlist.fqdn_listname
        )
    ]
    if mlist.description:
        lines.append(mlist.description)
    if mlist.info:
        lines += ["", mlist.info.strip()]
    lines += [
        "",
        _("To post to the list, write to {address}.").format(address=mlist.fqdn_listname),
        _("To join, write to {address} with the subject: join").format(
            address=mlist.fqdn_listname.replace("@", "-request@")
        ),
    ]
    base = _web_base(mail)
    if base:
        lines.append(_("The list's page: {url}").format(url=f"{base}/lists/{mlist.list_id}/"))
    mail.say("\n".join(lines))


def lists(mail: CommandMail, args: list[str]) -> None:
    """The advertised lists of the list's domain (Mailman 2.1 listed its host's)."""
    host = mail.mlist.mail_host
    found = mail.session.scalars(
        select(MailingList)
        .where(MailingList.mail_host == host, MailingList.advertised.is_(True))
        .order_by(MailingList.list_name)
    ).all()
    lines = [_("The public lists at {domain} ({count}):").format(domain=host, count=len(found))]
    for mlist in found:
        about = f" - {mlist.description}" if mlist.description else ""
        lines.append(f"    {mlist.fqdn_listname}{about}")
    mail.say("\n".join(lines))


def password(mail: CommandMail, args: list[str]) -> None:
    """Mailman 2.1 mailed passwords out and took new ones by mail.  Neither is safe (a
    password in mail, a forged From:), so the answer is where to set one."""
    base = _web_base(mail)
    if base:
        mail.say(
            _(
                "password: passwords are never sent or changed by mail. Set or reset yours "
                "on the web: {url}"
            ).format(url=f"{base}/reset")
        )
    else:
        mail.say(
            _(
                "password: passwords are never sent or changed by mail, and this list's "
                "site has no web address to set one: ask the list's owners."
            )
        )
