"""Subscribers: "my lists", every list of every address of the user, with preferences."""

from __future__ import annotations

import falcon
from sqlalchemy import select

from mtaplugin.digests import store as digest_store
from mtaplugin.digests.send import PERIODIC_EVERY
from mtaplugin.enums import DeliveryMode, DeliveryStatus, MemberRole
from mtaplugin.errors import InvalidInput
from mtaplugin.manage import preferences, topics
from mtaplugin.manage.members import check_delivery_mode, parse_delivery_mode
from mtaplugin.model import Address, MailingList, Member
from mtaplugin.web import language
from mtaplugin.web.common import gettext, redirect_after, require_login, session_of
from mtaplugin.web.forms import form
from mtaplugin.web.list_settings import language_name
from mtaplugin.web.render import render_form
from mtaplugin.web.setting_help import choice_label


def _memberships(req: falcon.Request) -> list[tuple[Member, Address, MailingList]]:
    viewer = require_login(req)
    assert viewer.user is not None
    rows = (
        session_of(req)
        .execute(
            select(Member, Address, MailingList)
            .join(Address, Address.id == Member.address_id)
            .join(MailingList, MailingList.id == Member.mailing_list_id)
            .where(
                Address.user_id == viewer.user.id,
                # an unverified address may be somebody else's, only claimed
                Address.verified_on.is_not(None),
                Member.role == MemberRole.member,
            )
            .order_by(MailingList.mail_host, MailingList.list_name, Address.email)
        )
        .all()
    )
    return [(m, a, ml) for m, a, ml in rows]


def _mode(member: Member, address: Address) -> DeliveryMode:
    """The member's delivery mode, with Mailman's fall-through member → address → user."""
    return preferences.delivery_mode_of(member, address, address.user)


def _mode_words(req: falcon.Request, member: Member, address: Address) -> str:
    """The delivery mode that applies, and which layer chose it."""
    found = preferences.resolve("delivery_mode", member, address, address.user)
    source = {
        preferences.Layer.member: gettext(req, "for this list"),
        preferences.Layer.address: gettext(req, "for this address"),
        preferences.Layer.user: gettext(req, "from your preferences"),
        preferences.Layer.site: gettext(req, "site default"),
    }[found.layer]
    return f"{gettext(req, choice_label('DeliveryMode', str(found.value)))} ({source})"


#: the member-level statuses set by someone else than the member, kept by this page
_SET_BY_OTHERS = (DeliveryStatus.by_bounces, DeliveryStatus.by_moderator, DeliveryStatus.unknown)


def _delivery(req: falcon.Request, member: Member, address: Address) -> str:
    """Whether the member gets mail from this list, and why not, in words."""
    found = preferences.resolve("delivery_status", member, address, address.user)
    status = found.value
    if status in (None, DeliveryStatus.enabled):
        return gettext(req, "on")
    if status is DeliveryStatus.by_bounces:
        if member.last_bounce_received is not None and found.layer is preferences.Layer.member:
            return gettext(req, "off: turned off by bounces on {date}").format(
                date=member.last_bounce_received.date().isoformat()
            )
        return gettext(req, "off: turned off by bounces")
    if status is DeliveryStatus.by_moderator:
        return gettext(req, "off: turned off by a moderator")
    if status is DeliveryStatus.by_user:
        if found.layer is preferences.Layer.user:
            return gettext(req, "off: by you, for all your lists")
        return gettext(req, "off: by you")
    return gettext(req, "off: for an unknown reason")


def _next_digests(
    req: falcon.Request, rows: list[tuple[Member, Address, MailingList]]
) -> dict[str, str]:
    """For each digest membership: what the next digest holds and when it goes."""
    out: dict[str, str] = {}
    for member, address, mlist in rows:
        if _mode(member, address) is DeliveryMode.regular or not mlist.digests_enabled:
            continue
        waiting = digest_store.pending(session_of(req), mlist.id)
        if waiting.posts == 0:
            text = gettext(req, "Next digest: no post yet.")
        else:
            text = gettext(req, "Next digest: {n} posts, {kib} KiB so far.").format(
                n=waiting.posts, kib=max(1, round(waiting.size / 1024))
            )
        if mlist.digest_size_threshold > 0:
            text += " " + gettext(req, "It goes out when it reaches {kib} KiB").format(
                kib=mlist.digest_size_threshold
            )
            if mlist.digest_send_periodic and waiting.oldest is not None:
                by = (waiting.oldest + PERIODIC_EVERY).strftime("%Y-%m-%d")
                text += gettext(req, ", or on {date} at the latest").format(date=by)
            text += "."
        elif mlist.digest_send_periodic and waiting.oldest is not None:
            by = (waiting.oldest + PERIODIC_EVERY).strftime("%Y-%m-%d")
            text += " " + gettext(req, "It goes out on {date} at the latest.").format(date=by)
        out[member.member_id] = text
    return out


def _saved(req: falcon.Request, resp: falcon.Response, said: str, mlist: MailingList) -> None:
    """Back to the viewer's lists, saying ``said`` (which names ``{list}``)."""
    session_of(req).flush()
    redirect_after(req, resp, "/my", said.format(list=mlist.fqdn_listname))


class MyLists:
    def _show(self, req: falcon.Request, resp: falcon.Response, **extra: str) -> None:
        rows = _memberships(req)
        render_form(
            req,
            resp,
            "mine.html",
            rows=rows,
            next_digests=_next_digests(req, rows),
            delivery={m.member_id: _delivery(req, m, a) for m, a, _ml in rows},
            mode_words={m.member_id: _mode_words(req, m, a) for m, a, _ml in rows},
            set_by_others=_SET_BY_OTHERS,
            modes=[(m.value, choice_label("DeliveryMode", m.value)) for m in DeliveryMode],
            languages=[(code, language_name(code)) for code in sorted(language.available())],
            **extra,
        )

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        self._show(req, resp)

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        f = form(req)
        if "preferred_language" in f:
            self._set_language(req, resp, f.get("preferred_language"))
            return
        mine = {m.member_id: (m, ml) for m, _a, ml in _memberships(req)}
        found = mine.get(f.get("member_id"))
        if found is None:
            raise falcon.HTTPNotFound(
                title=gettext(req, "No such subscription"), description=f.get("member_id")
            )
        member, mlist = found
        if "topics_form" in f:
            self._set_topics(req, resp, f.all("topics"), bool(f.get("nonmatching")), found)
            return
        text = f.get("delivery_mode").strip()
        try:
            mode = check_delivery_mode(parse_delivery_mode(text)) if text else None
        except InvalidInput as exc:
            self._show(req, resp, error=f"{exc.field}: {exc.problem}")
            return
        if mode not in (None, DeliveryMode.regular) and not mlist.digests_enabled:
            self._show(
                req,
                resp,
                error=gettext(req, "delivery_mode: {list} sends no digests").format(
                    list=mlist.fqdn_listname
                ),
            )
            return
        wanted = f.get("delivery", "keep")
        choices: dict[str, DeliveryStatus | None] = {
            "": None,
            "enabled": DeliveryStatus.enabled,
            "by_user": DeliveryStatus.by_user,
        }
        if wanted != "keep" and wanted not in choices:
            self._show(req, resp, error=gettext(req, "delivery: choose on or off"))
            return
        if (
            wanted != "keep"
            and member.delivery_status is DeliveryStatus.by_moderator
            and choices[wanted] is not DeliveryStatus.by_moderator
        ):
            # a moderator's decision is the moderators' to undo
            self._show(
                req,
                resp,
                error=gettext(
                    req,
                    "delivery: a moderator of {list} turned your delivery off; "
                    "ask the list owners at {owner}",
                ).format(list=mlist.fqdn_listname, owner=mlist.owner_address),
            )
            return
        member.delivery_mode = mode
        if wanted != "keep":
            # off by bounces: choosing "on" is the member switching delivery back on,
            # which starts over (no score, no warnings), as in Mailman
            member.delivery_status = choices[wanted]
        _saved(req, resp, gettext(req, "Saved your preferences for {list}."), mlist)

    def _set_topics(
        self,
        req: falcon.Request,
        resp: falcon.Response,
        wanted: list[str],
        nonmatching: bool,
        found: tuple[Member, MailingList],
    ) -> None:
        member, mlist = found
        try:
            topics.choose(mlist, member, wanted)
        except InvalidInput as exc:
            self._show(req, resp, error=f"{exc.field}: {exc.problem}")
            return
        member.receive_nonmatching_topics = nonmatching
        _saved(req, resp, gettext(req, "Saved your topics for {list}."), mlist)

    def _set_language(self, req: falcon.Request, resp: falcon.Response, lang: str) -> None:
        viewer = require_login(req)
        assert viewer.user is not None
        if lang and lang not in language.available():
            self._show(
                req,
                resp,
                error=gettext(req, "preferred_language: no catalog for {lang}").format(lang=lang),
            )
            return
        viewer.user.preferred_language = lang or None
        req.context.language = language.choose(
            lang or None, req.get_header("Accept-Language") or "", "en"
        )
        redirect_after(req, resp, "/my", gettext(req, "Saved your language."))
