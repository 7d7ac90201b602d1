"""Notices of the subscription workflows: confirmations, welcome, goodbye, requests and
changes for the moderators, refusals.  Each returns the raw message in the reader's
language; the caller puts it in the outbox in the same transaction."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from mtaplugin.i18n import N_, _, using
from mtaplugin.model import MailingList
from mtaplugin.notices import build, confirm_address
from mtaplugin.notices.templates import render, rendered


def confirmation(
    session: Session | None,
    mlist: MailingList,
    email: str,
    token: str,
    expires: datetime,
    language: str,
    kind: str = "subscribe",
    link: str = "",
) -> bytes:
    """``list:user:action:subscribe|unsubscribe|invite``, from (and Reply-To)
    ``list-confirm+TOKEN@``, so that a plain reply confirms; with ``link`` (a request made
    on the web page), the page that confirms it too."""
    with using(language) as lang:
        body = render(
            f"list:user:action:{kind}",
            lang,
            session=session,
            mlist=mlist,
            user_email=email,
            token=token,
            expires=expires.strftime("%Y-%m-%d %H:%M UTC"),
        )
        if kind == "unsubscribe":
            title = _("Your confirmation is needed to leave the {list} mailing list")
        elif kind == "invite":
            title = _("You are invited to join the {list} mailing list")
        else:
            title = _("Your confirmation is needed to join the {list} mailing list")
        title = title.format(list=mlist.fqdn_listname)
        if link:
            body += "\n" + _("Or open this link and press the button:\n\n    {link}\n").format(
                link=link
            )
    reply = confirm_address(mlist, token)
    return build(reply, email, title, body, extra={"Reply-To": reply})


@dataclass(frozen=True)
class MemberNotice:
    """A notice to one member from the list's -request address: its ``template``, and
    ``title`` (marked with ``N_``), its subject when the template has none, with ``{name}``
    (the list's name) filled in, in the member's language."""

    template: str
    title: str

    def subject(self, mlist: MailingList) -> str:
        """The subject, in the current language."""
        return _(self.title).format(name=mlist.display_name or mlist.list_name)

    def __call__(
        self, session: Session | None, mlist: MailingList, email: str, language: str
    ) -> bytes:
        body, subject = rendered(
            self.template,
            language,
            lambda: self.subject(mlist),
            session=session,
            mlist=mlist,
            user_email=email,
        )
        return build(mlist.request_address, email, subject, body)


welcome = MemberNotice("list:user:notice:welcome", N_('Welcome to the "{name}" mailing list'))
goodbye = MemberNotice("list:user:notice:goodbye", N_('You have left the "{name}" mailing list'))


def moderator_request(
    session: Session | None, mlist: MailingList, email: str, token: str, kind: str
) -> bytes:
    """``list:admin:action:subscribe|unsubscribe``, Reply-To ``list-confirm+TOKEN@``."""
    with using(mlist.preferred_language) as lang:
        body = render(
            f"list:admin:action:{kind}", lang, session=session, mlist=mlist, user_email=email
        )
        if kind == "unsubscribe":
            title = _("{list}: {email} asks to leave; your approval is needed")
        else:
            title = _("{list}: {email} asks to join; your approval is needed")
        title = title.format(list=mlist.fqdn_listname, email=email)
    return build(
        mlist.owner_address,
        mlist.owner_address,
        title,
        body,
        extra={"Reply-To": confirm_address(mlist, token)},
    )


def membership_change(session: Session | None, mlist: MailingList, email: str, kind: str) -> bytes:
    """``list:admin:notice:subscribe|unsubscribe`` (``admin_notify_mchanges``)."""
    left = kind == "unsubscribe"
    body, title = rendered(
        f"list:admin:notice:{kind}",
        mlist.preferred_language,
        lambda: (_("{list}: {email} left") if left else _("{list}: {email} joined")).format(
            list=mlist.fqdn_listname, email=email
        ),
        session=session,
        mlist=mlist,
        user_email=email,
    )
    return build(mlist.owner_address, mlist.owner_address, title, body)


def membership_changes(mlist: MailingList, emails: Sequence[str], kind: str) -> bytes:
    """One owners' notice for a mass subscription or unsubscription (``kind``
    ``subscribe`` or ``unsubscribe``): every address of the batch, as Mailman 2.1's mass
    subscription page sends it, instead of one notice per address."""
    with using(mlist.preferred_language):
        values = {"list": mlist.fqdn_listname, "count": len(emails)}
        if kind == "unsubscribe":
            title = _("{list}: {count} addresses left").format(**values)
            intro = _("These {count} addresses were removed from {list}:").format(**values)
        else:
            title = _("{list}: {count} addresses joined").format(**values)
            intro = _("These {count} addresses were subscribed to {list}:").format(**values)
    body = intro + "\n\n" + "".join(f"    {email}\n" for email in emails)
    return build(mlist.owner_address, mlist.owner_address, title, body)


def refused(
    session: Session | None,
    mlist: MailingList,
    email: str,
    request: str,
    reason: str,
    language: str,
) -> bytes:
    """``list:user:notice:refuse``: a moderator refused a (un)subscription request."""
    body, title = rendered(
        "list:user:notice:refuse",
        language,
        lambda: _("Your request to the {list} mailing list was refused").format(
            list=mlist.fqdn_listname
        ),
        session=session,
        mlist=mlist,
        request=request,
        reason=reason,
    )
    return build(mlist.request_address, email, title, body)
