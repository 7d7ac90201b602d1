"""A list as one JSON document (``mtaplugin export``), and such a document as a
:class:`~mtaplugin.importers.plan.Plan` (``mtaplugin import json``, ``lists clone``).

The document (``"format": "mtaplugin-list"``, ``"version": 1``)::

    {"format": "mtaplugin-list", "version": 1, "list": "dev@example.org",
     "settings": {REST name: value, ...},          # every writable setting, as REST serves it
     "members": [{"email", "role", "display_name", "delivery_mode", "delivery_status",
                  "moderation_action", "language", "acknowledge_posts",
                  "receive_own_postings", "hide_address", "receive_list_copy",
                  "receive_nonmatching_topics", "topics", "bounce_score",
                  "last_bounce_received"}, ...],   # null: the list's or the person's default
     "bans": ["addr@example.net", "^regex$", ...],
     "header_matches": [{"header", "pattern", "action"}, ...],
     "templates": [{"name", "language", "text"}, ...]}

Settings are read and checked with the REST API's own code, so a document a person edits
is refused with the same words as a bad REST call, naming the field.  The list's moderator
password is a hash and is never exported.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import falcon
from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin.api.resources.config import ATTRIBUTES
from mtaplugin.enums import DeliveryStatus, TemplateScope
from mtaplugin.errors import InvalidInput
from mtaplugin.i18n import _
from mtaplugin.importers.plan import MemberPlan, Plan
from mtaplugin.manage import header_matches, members
from mtaplugin.model import Address, Ban, MailingList, Member, Template
from mtaplugin.vocabulary.addresses import normalize_email

FORMAT = "mtaplugin-list"
VERSION = 1
#: writable settings a document does not carry
_NOT_EXPORTED = {"moderator_password"}
_FLAGS = (
    "acknowledge_posts",
    "receive_own_postings",
    "hide_address",
    "receive_list_copy",
)


def _value(value: Any) -> Any:
    return getattr(value, "value", value)


def export(session: Session, mlist: MailingList, *, with_members: bool = True) -> dict[str, Any]:
    """The document of ``mlist``."""
    settings = {
        name: ATTRIBUTES.read(mlist, name)
        for name in ATTRIBUTES.writable
        if name not in _NOT_EXPORTED
    }
    people: list[dict[str, Any]] = []
    if with_members:
        rows = session.execute(
            select(Member, Address.email)
            .join(Address, Address.id == Member.address_id)
            .where(Member.mailing_list_id == mlist.id)
            .order_by(Member.role, Address.email)
        ).all()
        for member, email in rows:
            last = member.last_bounce_received
            people.append(
                {
                    "email": email,
                    "role": member.role.value,
                    "display_name": member.display_name,
                    "delivery_mode": _value(member.delivery_mode),
                    "delivery_status": _value(member.delivery_status),
                    "moderation_action": _value(member.moderation_action),
                    "language": member.preferred_language,
                    **{flag: getattr(member, flag) for flag in _FLAGS},
                    "receive_nonmatching_topics": member.receive_nonmatching_topics,
                    "topics": list(member.topics or []),
                    "bounce_score": member.bounce_score,
                    "last_bounce_received": last.isoformat() if last else None,
                }
            )
    bans = session.scalars(
        select(Ban.email).where(Ban.mailing_list_id == mlist.id).order_by(Ban.email)
    ).all()
    templates = session.scalars(
        select(Template)
        .where(Template.scope == TemplateScope.list, Template.mailing_list_id == mlist.id)
        .order_by(Template.name, Template.language)
    ).all()
    return {
        "format": FORMAT,
        "version": VERSION,
        "list": mlist.fqdn_listname,
        "settings": settings,
        "members": people,
        "bans": list(bans),
        "header_matches": [
            {"header": h.header, "pattern": h.pattern, "action": _value(h.action)}
            for h in header_matches.all_matches(session, mlist)
        ],
        "templates": [
            {"name": t.name, "language": t.language, "text": t.text} for t in templates if t.text
        ],
    }


def _settings(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise InvalidInput("settings", _("expected an object of settings"))
    values = {
        name: (list(value) if isinstance(value, list) else [value])
        for name, value in raw.items()
        if name not in _NOT_EXPORTED
    }
    try:
        return ATTRIBUTES.parse(values, complete=False)
    except falcon.HTTPError as e:
        raise InvalidInput("settings", str(e.description)) from None


def _member(raw: Any, index: int) -> MemberPlan:
    where = f"members[{index}]"
    if not isinstance(raw, dict) or not isinstance(raw.get("email"), str):
        raise InvalidInput(where, _("expected an object with an email"))

    def optional(key: str, parse: Any) -> Any:
        value = raw.get(key)
        return None if value is None else parse(str(value), f"{where}.{key}")

    def status(value: str, field: str) -> DeliveryStatus:
        try:
            return DeliveryStatus(value)
        except ValueError:
            raise InvalidInput.not_one_of(
                field,
                _("unknown delivery status {value!r}; choose one of: {choices}"),
                value,
                DeliveryStatus,
            ) from None

    last = raw.get("last_bounce_received")
    try:
        last_bounce = datetime.fromisoformat(last) if isinstance(last, str) else None
    except ValueError:
        raise InvalidInput(
            f"{where}.last_bounce_received", _("expected an ISO 8601 date and time")
        ) from None
    plan = MemberPlan(
        normalize_email(raw["email"], f"{where}.email"),
        members.parse_role(str(raw.get("role", "member")), f"{where}.role"),
        display_name=str(raw.get("display_name") or ""),
        delivery_mode=optional("delivery_mode", members.parse_delivery_mode),
        delivery_status=optional("delivery_status", status),
        moderation_action=optional("moderation_action", members.parse_action),
        language=raw.get("language") if isinstance(raw.get("language"), str) else None,
        receive_nonmatching_topics=bool(raw.get("receive_nonmatching_topics", False)),
        topics=[str(t) for t in raw.get("topics") or []],
        bounce_score=int(raw.get("bounce_score") or 0),
        last_bounce_received=last_bounce,
    )
    for flag in _FLAGS:
        value = raw.get(flag)
        setattr(plan, flag, None if value is None else bool(value))
    return plan


def plan_of(document: Any, fqdn_listname: str | None = None) -> Plan:
    """The plan that makes ``fqdn_listname`` (default: the document's list) what the
    document says; :class:`InvalidInput` naming the field when it is not such a document
    or a value is wrong."""
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise InvalidInput(
            "format", _("not an mtaplugin list document (format {f!r})").format(f=FORMAT)
        )
    if document.get("version") != VERSION:
        raise InvalidInput(
            "version",
            _("version {v!r} of the list document is not known here (this is {known})").format(
                v=document.get("version"), known=VERSION
            ),
        )
    name = fqdn_listname or document.get("list")
    if not isinstance(name, str):
        raise InvalidInput("list", _("the document names no list"))
    plan = Plan(normalize_email(name, "list"))
    plan.settings = _settings(document.get("settings", {}))
    plan.members = [_member(m, i) for i, m in enumerate(document.get("members") or [])]
    plan.bans = [str(b) for b in document.get("bans") or []]
    for i, match in enumerate(document.get("header_matches") or []):
        if not isinstance(match, dict):
            raise InvalidInput(f"header_matches[{i}]", _("expected an object"))
        action = match.get("action")
        plan.header_matches.append(
            (
                str(match.get("header", "")),
                str(match.get("pattern", "")),
                None
                if action is None
                else members.parse_action(str(action), f"header_matches[{i}].action"),
            )
        )
    for i, template in enumerate(document.get("templates") or []):
        if not isinstance(template, dict) or not isinstance(template.get("text"), str):
            raise InvalidInput(f"templates[{i}]", _("expected an object with a text"))
        plan.templates[(str(template.get("name")), str(template.get("language") or ""))] = template[
            "text"
        ]
    return plan
