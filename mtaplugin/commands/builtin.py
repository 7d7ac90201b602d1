"""The email commands: join/subscribe, leave/unsubscribe/remove, confirm, who, help, echo
and end/stop; Mailman 2.1's ``set`` (and ``options``, its ``set show``) is in
:mod:`~mtaplugin.commands.preferences`, its ``info``, ``lists`` and ``password`` in
:mod:`~mtaplugin.commands.about`.

Each command appends its result to the message's reply (:class:`CommandMail.say`).

Safer than Mailman: a ``join`` or ``leave`` for the sender's own address is taken as
confirmed only when the MTA authenticated the From: address (aligned DKIM/SPF, SMTP AUTH);
otherwise, and for any ``address=`` other than the sender's, a confirmation goes to the
address concerned, so a forged From: can neither subscribe nor remove anybody.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import ColumnElement, func, literal, select

from mtaplugin.commands import about
from mtaplugin.commands.preferences import DIGEST, set_
from mtaplugin.enums import DeliveryMode, DeliveryStatus, MemberRole, RosterVisibility
from mtaplugin.errors import InvalidInput
from mtaplugin.i18n import _
from mtaplugin.manage import subscriptions
from mtaplugin.manage.subscriptions import Status
from mtaplugin.model import Address, Member, User
from mtaplugin.model.preferences import SYSTEM_PREFERENCES
from mtaplugin.notices.templates import render

if TYPE_CHECKING:
    from collections.abc import Callable

    from mtaplugin.commands.mail import CommandMail
    from mtaplugin.commands.parse import CommandLines


def _options(args: list[str]) -> tuple[dict[str, str], list[str]]:
    """``key=value`` arguments, and the others."""
    options: dict[str, str] = {}
    rest: list[str] = []
    for arg in args:
        key, eq, value = arg.partition("=")
        if eq and key:
            options[key.lower()] = value.strip("<>")
        else:
            rest.append(arg)
    return options, rest


def _tell(mail: CommandMail, status: Status, email: str, aside: bool = False) -> None:
    """Say what the workflow did: in the reply's results, or on its own (``aside``) when
    it waits for a moderator or concerns another address."""
    name = mail.mlist.fqdn_listname
    if status is Status.subscribed:
        text = _("{email} is now a member of {list}.").format(email=email, list=name)
    elif status is Status.unsubscribed:
        text = _("{email} is no longer a member of {list}.").format(email=email, list=name)
    elif status is Status.pending_confirmation:
        text = _(
            "A confirmation request was sent to {email}; the change is made when it is answered."
        ).format(email=email)
    else:
        text = _("The request for {email} waits for a moderator's approval.").format(email=email)
    if aside or status is Status.pending_approval:
        mail.say(text)
    else:
        mail.results.append(text)


def _request(
    mail: CommandMail,
    email: str,
    failed: str,
    request: Callable[[], tuple[Status, str | None]],
) -> None:
    """Make a join or leave request for ``email`` and say what came of it; ``failed`` says
    why the workflow refused it (its ``{problem}``)."""
    try:
        status, _token = request()
    except InvalidInput as exc:
        mail.say(failed.format(problem=exc.problem))
        return
    _tell(mail, status, email, aside=email.lower() != mail.sender)


def join(mail: CommandMail, args: list[str]) -> None:
    if "join" in mail.done:
        mail.say(_("join: only one join per message; this one is ignored."))
        return
    mail.done.add("join")
    options, _rest = _options(args)
    email = options.get("address") or mail.sender
    mode = None
    if "digest" in options:
        mode = DIGEST.get(options["digest"].lower())
        if mode is None:
            mail.say(
                _("join: digest must be no, mime or plain, not {value!r}.").format(
                    value=options["digest"]
                )
            )
            return
        if mode is not DeliveryMode.regular and not mail.mlist.digests_enabled:
            mail.say(_("join: this list sends no digests."))
            return
    own = mail.authenticated_sender and email.lower() == mail.sender
    _request(
        mail,
        email,
        _("join: {problem}"),
        lambda: subscriptions.request_subscription(
            mail.session,
            mail.mlist,
            email,
            pre_verified=own,
            pre_confirmed=own,
            delivery_mode=mode,
            language=mail.asked_language if email.lower() == mail.sender else None,
            actor=mail.sender,
            settings=mail.policy.workflow,
        ),
    )


def leave(mail: CommandMail, args: list[str]) -> None:
    if "leave" in mail.done:
        return
    mail.done.add("leave")
    options, _rest = _options(args)
    email = options.get("address") or mail.sender
    own = mail.authenticated_sender and email.lower() == mail.sender
    _request(
        mail,
        email,
        _("leave: {problem}"),
        lambda: subscriptions.request_unsubscription(
            mail.session,
            mail.mlist,
            email,
            pre_confirmed=own,
            actor=mail.sender,
            settings=mail.policy.workflow,
        ),
    )


def confirm_token(mail: CommandMail, token: str) -> None:
    try:
        pending = subscriptions.get_pending(mail.session, token, mail.mlist, mail.policy.workflow)
        email = pending.email
        status, _new = subscriptions.confirm(
            mail.session,
            mail.mlist,
            token,
            actor=mail.sender,
            settings=mail.policy.workflow,
        )
    except InvalidInput as exc:
        mail.say(_("confirm: {problem}").format(problem=exc.problem))
        return
    _tell(mail, status, email)


def confirm(mail: CommandMail, args: list[str]) -> None:
    if len(args) != 1:
        mail.say(_("confirm: give the token, as in: confirm TOKEN"))
        return
    from mtaplugin.commands import moderation

    try:
        pending = subscriptions.get_pending(mail.session, args[0], mail.mlist, mail.policy.workflow)
    except InvalidInput as exc:
        mail.say(_("confirm: {problem}").format(problem=exc.problem))
        return
    if pending.token_owner.value == "moderator" and mail.lines is not None:
        moderation.by_reply(mail, pending, mail.lines)
        return
    confirm_token(mail, args[0])


def _pref(column: str, default: object) -> ColumnElement[object]:
    """A preference resolved in SQL: member, then address, then user, then the default."""
    return func.coalesce(
        getattr(Member, column), getattr(Address, column), getattr(User, column), default
    )


def _roles(mail: CommandMail) -> set[MemberRole]:
    return set(
        mail.session.scalars(
            select(Member.role)
            .join(Address, Address.id == Member.address_id)
            .where(Member.mailing_list_id == mail.mlist.id, Address.email == mail.sender)
        )
    )


def who(mail: CommandMail, args: list[str]) -> None:
    visibility = mail.mlist.member_roster_visibility
    roles = _roles(mail)
    staff = bool(roles & {MemberRole.owner, MemberRole.moderator})
    allowed = (
        visibility is RosterVisibility.public
        or (visibility is RosterVisibility.members and (staff or MemberRole.member in roles))
        or staff
    )
    if not allowed:
        mail.say(
            _("who: the list of members of {list} is not available to you.").format(
                list=mail.mlist.fqdn_listname
            )
        )
        return
    options, _rest = _options(args)
    query = (
        select(Address.email)
        .select_from(Member)
        .join(Address, Address.id == Member.address_id)
        .outerjoin(User, User.id == Address.user_id)
        .where(Member.mailing_list_id == mail.mlist.id, Member.role == MemberRole.member)
    )
    # Mailman 3's filters, on the resolved preferences (member → address → user → default).
    delivery = options.get("delivery", "").lower()
    if delivery:
        status = _pref("delivery_status", DeliveryStatus.enabled.value)
        if delivery not in ("enabled", "disabled"):
            mail.say(_("who: delivery must be enabled or disabled."))
            return
        enabled = status == DeliveryStatus.enabled.value
        query = query.where(enabled if delivery == "enabled" else ~enabled)
    mode = options.get("mode", "").lower()
    if mode:
        regular = _pref("delivery_mode", DeliveryMode.regular.value) == DeliveryMode.regular.value
        if mode not in ("regular", "digest"):
            mail.say(_("who: mode must be regular or digest."))
            return
        query = query.where(regular if mode == "regular" else ~regular)
    hide = _pref("hide_address", literal(bool(SYSTEM_PREFERENCES["hide_address"])))
    rows = mail.session.execute(query.add_columns(hide)).all()
    # hide_address (Mailman 2.1's "conceal"; Mailman 3 stores it and reads it nowhere): the
    # owners and moderators see every member, anyone else only those who show their
    # address (and their own).  The default is Mailman 3's: hidden.
    emails = sorted(e for e, hidden in rows if staff or not hidden or e == mail.sender)
    hidden_count = len(rows) - len(emails)
    lines = [
        _("Members of {list} ({count}):").format(list=mail.mlist.fqdn_listname, count=len(emails))
        if not hidden_count
        else _("Members of {list} ({count}, and {hidden} who hide their address):").format(
            list=mail.mlist.fqdn_listname, count=len(emails), hidden=hidden_count
        )
    ]
    lines += [f"    {e}" for e in emails]
    mail.say("\n".join(lines))


def help_(mail: CommandMail, args: list[str]) -> None:
    mail.say(render("list:user:notice:help", mail.language, session=mail.session, mlist=mail.mlist))


def echo(mail: CommandMail, args: list[str]) -> None:
    mail.say(" ".join(["echo", *args]))


COMMANDS: dict[str, Callable[[CommandMail, list[str]], None]] = {
    "join": join,
    "subscribe": join,
    "leave": leave,
    "unsubscribe": leave,
    "confirm": confirm,
    "who": who,
    "help": help_,
    "echo": echo,
    "set": set_,
    # Mailman 2.1's
    "remove": leave,
    "options": lambda mail, args: set_(mail, ["show"]),
    "info": about.info,
    "lists": about.lists,
    "password": about.password,
}


def run_lines(mail: CommandMail, lines: CommandLines) -> None:
    """Run the subject's command (if it is one) and the body's, up to end/stop."""
    ran = 0
    candidates: list[tuple[list[str], bool]] = [(lines.subject, True)]
    candidates += [(words, False) for words in lines.body]
    for words, is_subject in candidates:
        if not words:
            continue
        name = words[0].lower().rstrip(":")
        if name in ("end", "stop"):
            if not is_subject:
                break
            continue
        command = COMMANDS.get(name)
        if command is None:
            if not is_subject:
                mail.ignored.append(" ".join(words))
            continue
        mail.results.append("> " + " ".join(words))
        command(mail, words[1:])
        ran += 1
    if not ran:
        mail.say(_("No command was found in your message."))
