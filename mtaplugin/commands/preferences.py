"""Mailman 2.1's ``set`` email command: show or change the sender's own member
preferences (digest, delivery, myposts, duplicates, ack, hide, language), and the topics
a member wants on a list with topics (``set topics NAME...|none``, ``set nonmatching``).

A change needs a sender the MTA authenticated (aligned DKIM/SPF, SMTP AUTH), so a
forged From: cannot change anybody's settings.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import select

from mtaplugin.enums import DeliveryMode, DeliveryStatus, MemberRole
from mtaplugin.errors import InvalidInput
from mtaplugin.i18n import _, available_languages
from mtaplugin.manage import members, topics
from mtaplugin.model import Address, Member

if TYPE_CHECKING:
    from mtaplugin.commands.mail import CommandMail

#: the words a ``digest`` value (of ``join`` or ``set``) may be → delivery mode
DIGEST = {
    "no": DeliveryMode.regular,
    "off": DeliveryMode.regular,
    "mime": DeliveryMode.mime_digests,
    "plain": DeliveryMode.plaintext_digests,
    "yes": DeliveryMode.mime_digests,
    "on": DeliveryMode.mime_digests,
}

_ON_OFF = {"on": True, "yes": True, "off": False, "no": False}
#: set name → member attribute
_FLAGS = {
    "myposts": "receive_own_postings",
    "duplicates": "receive_list_copy",
    "ack": "acknowledge_posts",
    "hide": "hide_address",
    "conceal": "hide_address",  # Mailman 2.1's name
}
#: Mailman 2.1 options whose "on" means the preference is off
_INVERTED = {"nodupes": "receive_list_copy", "nomail": "delivery"}


def _member(mail: CommandMail) -> Member | None:
    return mail.session.scalar(
        select(Member)
        .join(Address, Address.id == Member.address_id)
        .where(
            Member.mailing_list_id == mail.mlist.id,
            Member.role == MemberRole.member,
            Address.email == mail.sender,
        )
    )


def _show(member: Member) -> str:
    def flag(value: bool | None, default: bool) -> str:
        return "on" if (default if value is None else value) else "off"

    mode = member.delivery_mode or DeliveryMode.regular
    digest = {
        DeliveryMode.regular: "off",
        DeliveryMode.mime_digests: "mime",
        DeliveryMode.plaintext_digests: "plain",
        DeliveryMode.summary_digests: "mime",
    }[mode]
    status = member.delivery_status or DeliveryStatus.enabled
    return "\n".join(
        [
            f"    digest {digest}",
            f"    delivery {'on' if status is DeliveryStatus.enabled else 'off'}",
            f"    myposts {flag(member.receive_own_postings, True)}",
            f"    duplicates {flag(member.receive_list_copy, True)}",
            f"    ack {flag(member.acknowledge_posts, False)}",
            f"    hide {flag(member.hide_address, True)}",
            f"    language {member.preferred_language or mail_language_default(member)}",
            *(
                [
                    f"    topics {' '.join(member.topics or []) or 'none'}",
                    f"    nonmatching {flag(member.receive_nonmatching_topics, False)}",
                ]
                if member.mailing_list is not None and member.mailing_list.topics_enabled
                else []
            ),
        ]
    )


def mail_language_default(member: Member) -> str:
    return member.mailing_list.preferred_language if member.mailing_list else "en"


def set_(mail: CommandMail, args: list[str]) -> None:
    member = _member(mail)
    if member is None:
        mail.say(
            _("set: {email} is not a member of {list}.").format(
                email=mail.sender, list=mail.mlist.fqdn_listname
            )
        )
        return
    if not args or args[0].lower() == "show":
        mail.say(
            _("Your settings on {list}:").format(list=mail.mlist.fqdn_listname)
            + "\n"
            + _show(member)
        )
        return
    if not mail.authenticated_sender:
        mail.say(
            _(
                "set: your address is not authenticated by your mail server, so your "
                "settings cannot be changed by mail; nothing was changed."
            )
        )
        return
    name = args[0].lower()
    value = args[1].lower() if len(args) > 1 else ""
    if name in _INVERTED and value in _ON_OFF:
        name, value = _INVERTED[name], "off" if _ON_OFF[value] else "on"
        name = {"receive_list_copy": "duplicates"}.get(name, name)
    if name == "digest":
        mode = DIGEST.get(value)
        if mode is None:
            mail.say(_("set digest: choose off, plain or mime."))
            return
        if mode is not DeliveryMode.regular and not mail.mlist.digests_enabled:
            mail.say(_("set digest: this list sends no digests."))
            return
        try:
            member.delivery_mode = members.check_delivery_mode(mode, "digest")
        except InvalidInput as exc:
            mail.say(_("set digest: {problem}").format(problem=exc.problem))
            return
    elif name == "delivery":
        if value not in _ON_OFF:
            mail.say(_("set delivery: choose on or off."))
            return
        member.delivery_status = (
            DeliveryStatus.enabled if _ON_OFF[value] else DeliveryStatus.by_user
        )
    elif name in _FLAGS:
        if value not in _ON_OFF:
            mail.say(_("set {name}: choose on or off.").format(name=name))
            return
        setattr(member, _FLAGS[name], _ON_OFF[value])
    elif name == "language":
        if value not in available_languages():
            mail.say(
                _("set language: choose one of {choices}.").format(
                    choices=", ".join(available_languages())
                )
            )
            return
        member.preferred_language = value
    elif name == "topics":
        # set topics NAME... (names separated by spaces or commas); "none"/"all": every post
        wanted = [w for a in args[1:] for w in a.replace(",", " ").split()]
        if [w.lower() for w in wanted] in (["none"], ["all"]):
            wanted = []
        try:
            chosen = topics.choose(mail.mlist, member, wanted)
        except InvalidInput as exc:
            mail.say(_("set topics: {problem}").format(problem=exc.problem))
            return
        value = " ".join(chosen) or "none"
    elif name == "nonmatching":
        if value not in _ON_OFF:
            mail.say(_("set nonmatching: choose on or off."))
            return
        member.receive_nonmatching_topics = _ON_OFF[value]
    else:
        mail.say(_('set: unknown option {name!r}; send "help" for the list.').format(name=name))
        return
    mail.session.flush()
    mail.say(_("set {name} {value}: done.").format(name=name, value=value))
