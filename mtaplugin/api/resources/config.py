"""``/lists/{list}/config[/{attribute}]``: every list setting under Mailman's name.

The attributes and their types come from the model's columns, so a new setting is served
as soon as it is in the model.  Read-only ones (identity, counters, derived addresses)
are refused with 400 naming them.  Every value is checked before anything is changed.
``moderator_password`` is hashed on write and never served (``null``).  The texts of a
setting that goes into header fields must be one line without control characters
(:mod:`mtaplugin.model.one_line`): 400 naming it otherwise.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from enum import StrEnum
from typing import Any, cast

import falcon
from sqlalchemy import JSON, Boolean, Enum, Integer, Interval, inspect

from mtaplugin.api.dialect import (
    Params,
    as_bool,
    as_enum,
    as_int,
    as_timedelta,
    bad_request,
    invalid,
    no_content,
    not_found,
    plain,
    resource,
)
from mtaplugin.api.resources.base import WholeOrPart, mailing_list, url
from mtaplugin.api.resources.system import POSTING_PIPELINES
from mtaplugin.errors import InvalidInput
from mtaplugin.i18n import _, check_language
from mtaplugin.manage import topics
from mtaplugin.manage.patterns import ADDRESS_PATTERN_SETTINGS, setting_line
from mtaplugin.manage.users import hash_password
from mtaplugin.model import MailingList
from mtaplugin.model.one_line import check_input, check_setting
from mtaplugin.vocabulary.addresses import normalize_email

#: columns that are not list settings at all
_HIDDEN = {"id", "generation", "style_name", "archivers", "usenet_watermark"}
#: settings that can be read but not written over REST (Mailman's read-only attributes)
_READ_ONLY_COLUMNS = {
    "list_name",
    "mail_host",
    "list_id",
    "created_at",
    "post_id",
    "volume",
    "next_digest_number",
    "last_post_at",
    "digest_last_sent_at",
}
_DERIVED = {
    "fqdn_listname": lambda m: m.fqdn_listname,
    "posting_address": lambda m: m.posting_address,
    "request_address": lambda m: m.request_address,
    "owner_address": lambda m: m.owner_address,
    "bounces_address": lambda m: m.bounces_address,
    "join_address": lambda m: m.join_address,
    "leave_address": lambda m: m.leave_address,
    "no_reply_address": lambda m: m.no_reply_address,
}
#: mtaplugin's own settings: a PUT written for Mailman does not know them, so they are
#: not required there
_EXTENSIONS = {
    "refusal_texts",
    "require_authenticated_senders",
    # Mailman 2.1's topics (Mailman 3 has none)
    "topics_enabled",
    "topics",
    "topics_bodylines_limit",
}


def _text(name: str, value: Any, limit: int = 65535) -> str:
    if isinstance(value, (dict, list)):
        raise invalid(name, _("expected a text value"))
    text = "" if value is None else str(value)
    if len(text) > limit:
        raise invalid(name, _("the text is too long"))
    return text


def _email_or_regex(name: str, value: str) -> str:
    try:
        return setting_line(name, value)
    except InvalidInput as exc:
        raise invalid(name, exc.problem) from None


def _email(name: str, value: str) -> str:
    try:
        return normalize_email(value, name)
    except InvalidInput as exc:
        raise invalid(name, exc.problem) from None


def _one_line(name: str, value: Any, check: Callable[[str, Any], Any] = check_setting) -> Any:
    """A setting whose texts go into header fields: one line, no control character."""
    try:
        return check(name, value)
    except InvalidInput as exc:
        raise invalid(name, exc.problem) from None


def _pipeline(name: str, value: Any) -> str:
    """One of the pipelines ``/system/pipelines`` lists."""
    text = _text(name, value).strip()
    if text not in POSTING_PIPELINES:
        raise invalid(
            name,
            _("unknown value {value!r}; choose one of: {choices}").format(
                value=text, choices=", ".join(POSTING_PIPELINES)
            ),
        )
    return text


def _parser(name: str, column: Any) -> Callable[[list[Any]], Any]:
    kind = column.type
    if name == "moderator_password":
        return lambda vals: (
            None
            if _text(name, vals[0] if vals else "") in ("", "None")
            else hash_password(_text(name, vals[0]))
        )
    if name == "reply_to_address":
        # one address (a ``^regex`` makes no Reply-To:)
        return lambda vals: (
            "" if not vals or not str(vals[0]).strip() else _email(name, str(vals[0]))
        )
    if name == "preferred_language":
        return lambda vals: _language(name, _one(name, vals))
    if name == "refusal_texts":
        return lambda vals: _json_dict(name, vals)
    if name == "posting_pipeline":
        return lambda vals: _pipeline(name, _one(name, vals))
    if name == "topics":
        return _topics
    if name == "topics_bodylines_limit":
        # negative: the whole body (Mailman 2.1)
        return lambda vals: as_int(name, _number(name, _one(name, vals)), minimum=-1)
    if isinstance(kind, Boolean):
        return lambda vals: as_bool(name, _one(name, vals))
    if isinstance(kind, Integer):
        return lambda vals: as_int(name, _number(name, _one(name, vals)), minimum=0)
    if isinstance(kind, Interval):
        return lambda vals: as_timedelta(name, _one(name, vals))
    if isinstance(kind, Enum) and kind.enum_class is not None:
        # every enum of the model is a StrEnum; SQLAlchemy types the column's as any Enum
        enum_class = cast(type[StrEnum], kind.enum_class)
        return lambda vals: as_enum(name, _one(name, vals), enum_class)
    if isinstance(kind, JSON):
        if name in ADDRESS_PATTERN_SETTINGS:
            return lambda vals: [_email_or_regex(name, str(v)) for v in vals if str(v).strip()]
        return lambda vals: [_text(name, v) for v in vals if str(v).strip()]
    limit = getattr(kind, "length", None) or 65535
    return lambda vals: _text(name, _one(name, vals), limit)


def _language(name: str, value: Any) -> str:
    try:
        return check_language(value, name)
    except InvalidInput as exc:
        raise invalid(name, exc.problem) from None


def _topics(vals: list[Any]) -> list[list[str]]:
    """Topics as objects {name, regex, description}, as [name, regex, description], or as
    lines ``name | description | regex`` (form data); a JSON text of any of these too."""
    if len(vals) == 1 and isinstance(vals[0], str) and vals[0].lstrip().startswith("["):
        try:
            vals = json.loads(vals[0])
        except ValueError:
            raise invalid("topics", _("expected a JSON list of topics")) from None
        if not isinstance(vals, list):
            raise invalid("topics", _("expected a JSON list of topics"))
    try:
        return topics.parse_topics(vals)
    except InvalidInput as exc:
        raise invalid(exc.field, exc.problem) from None


def _one(name: str, vals: list[Any]) -> Any:
    if len(vals) != 1:
        raise invalid(name, _("give exactly one value"))
    return vals[0]


def _number(name: str, value: Any) -> Any:
    # digest_size_threshold is a float in Mailman; KiB are whole here
    try:
        return round(float(value)) if not isinstance(value, bool) else value
    except (TypeError, ValueError):
        return value


def _json_dict(name: str, vals: list[Any]) -> dict[str, str]:
    value = _one(name, vals)
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else {}
        except ValueError:
            raise invalid(name, _("expected a JSON object")) from None
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise invalid(name, _("expected an object of texts"))
    return value


class Attributes:
    """The readable and writable attributes, built once from the model."""

    def __init__(self) -> None:
        self.writable: dict[str, Callable[[list[Any]], Any]] = {}
        self.readable: list[str] = []
        for column in inspect(MailingList).columns:
            name = column.key
            if name in _HIDDEN:
                continue
            self.readable.append(name)
            if name not in _READ_ONLY_COLUMNS:
                self.writable[name] = _parser(name, column)
        self.readable.extend(_DERIVED)
        self.readable.sort()

    def read(self, mlist: MailingList, name: str) -> Any:
        if name in _DERIVED:
            return _DERIVED[name](mlist)
        if name == "moderator_password":
            return None
        if name == "topics":
            return [topics.as_object(row) for row in mlist.topics or []]
        value = getattr(mlist, name)
        if isinstance(value, list):
            return list(value)
        return plain(value)

    def parse(self, values: dict[str, list[Any]], *, complete: bool) -> dict[str, Any]:
        unknown = sorted(k for k in values if k not in self.readable)
        if unknown:
            raise bad_request(_("Unexpected parameters: {n}").format(n=", ".join(unknown)))
        read_only = sorted(k for k in values if k not in self.writable)
        if read_only:
            raise bad_request(_("Read-only attribute: {n}").format(n=", ".join(read_only)))
        if complete:
            missing = sorted(set(self.writable) - _EXTENSIONS - set(values))
            if missing:
                raise bad_request(_("Missing parameters: {n}").format(n=", ".join(missing)))
        # the texts as sent (a parser may cut a value at a line break) and as parsed
        return {
            k: _one_line(k, self.writable[k](_one_line(k, v, check_input)))
            for k, v in values.items()
        }


ATTRIBUTES = Attributes()


class ListConfig(WholeOrPart):
    def on_get(self, req: falcon.Request, resp: falcon.Response, list: str) -> None:
        mlist = mailing_list(req, list)
        body = {name: ATTRIBUTES.read(mlist, name) for name in ATTRIBUTES.readable}
        body["self_link"] = url(req, "lists", mlist.list_id, "config")
        resp.media = resource(body)

    def _write(self, req: falcon.Request, resp: falcon.Response, list: str, complete: bool) -> None:
        mlist = mailing_list(req, list, administer=True)
        changes = ATTRIBUTES.parse(Params.of(req).values, complete=complete)
        for key, value in changes.items():
            setattr(mlist, key, value)
        no_content(resp)


class ListConfigAttribute:
    def _name(self, attribute: str) -> str:
        if attribute not in ATTRIBUTES.readable:
            raise not_found(_("Unknown attribute: {a}").format(a=attribute))
        return attribute

    def on_get(self, req: falcon.Request, resp: falcon.Response, list: str, attribute: str) -> None:
        mlist = mailing_list(req, list)
        name = self._name(attribute)
        resp.media = resource({name: ATTRIBUTES.read(mlist, name)})

    def _write(self, req: falcon.Request, resp: falcon.Response, list: str, attribute: str) -> None:
        mlist = mailing_list(req, list, administer=True)
        name = self._name(attribute)
        values = Params.of(req).values
        unexpected = sorted(set(values) - {name})
        if unexpected:
            raise bad_request(_("Unexpected parameters: {n}").format(n=", ".join(unexpected)))
        changes = ATTRIBUTES.parse({name: values.get(name, [])}, complete=False)
        setattr(mlist, name, changes[name])
        no_content(resp)

    on_put = _write
    on_patch = _write

    def on_delete(
        self, req: falcon.Request, resp: falcon.Response, list: str, attribute: str
    ) -> None:
        mlist = mailing_list(req, list, administer=True)
        if self._name(attribute) != "acceptable_aliases":
            raise bad_request(_("only acceptable_aliases can be deleted"))
        mlist.acceptable_aliases = []
        no_content(resp)
