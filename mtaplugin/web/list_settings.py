"""Every list setting, grouped as Postorius groups them, with its form field and parser.

The kind of each field comes from its column (boolean, number, choice of an enum, days,
one-entry-per-line list, text); a form is checked as a whole: any error names its field
and nothing is changed.  A setting whose texts go into header fields must be one line
without control characters (:mod:`mtaplugin.model.one_line`), a bare CR or a NUL included.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum
from typing import Any

from babel import Locale, UnknownLocaleError
from sqlalchemy import JSON, Boolean, Enum, Integer, Interval, String, Text

from mtaplugin.errors import InvalidInput
from mtaplugin.i18n import _, available_languages
from mtaplugin.manage import topics
from mtaplugin.manage.patterns import ADDRESS_PATTERN_SETTINGS, AT_LIST_SETTINGS, setting_line
from mtaplugin.model import MailingList
from mtaplugin.model.one_line import check_setting
from mtaplugin.regexes import problem
from mtaplugin.vocabulary.addresses import normalize_email
from mtaplugin.web.setting_help import SETTING_HELP, choice_label

GROUPS: dict[str, tuple[str, tuple[str, ...]]] = {
    "list-identity": (
        "List identity",
        (
            "display_name",
            "description",
            "info",
            "subject_prefix",
            "preferred_language",
            "advertised",
            "member_roster_visibility",
        ),
    ),
    "automatic-responses": (
        "Automatic responses",
        (
            "autorespond_owner",
            "autoresponse_owner_text",
            "autorespond_postings",
            "autoresponse_postings_text",
            "autorespond_requests",
            "autoresponse_request_text",
            "autoresponse_grace_period",
            "send_welcome_message",
            "send_goodbye_message",
            "admin_immed_notify",
            "admin_notify_mchanges",
            "respond_to_post_requests",
        ),
    ),
    "alter-messages": (
        "Alter messages",
        (
            "filter_content",
            "filter_action",
            "filter_types",
            "pass_types",
            "filter_extensions",
            "pass_extensions",
            "collapse_alternatives",
            "convert_html_to_plaintext",
            "anonymous_list",
            "allow_list_posts",
            "reply_goes_to_list",
            "reply_to_address",
            "first_strip_reply_to",
            "personalize",
        ),
    ),
    "dmarc-mitigation": (
        "DMARC mitigation",
        (
            "dmarc_mitigate_action",
            "dmarc_mitigate_unconditionally",
            "dmarc_moderation_notice",
            "dmarc_wrapped_message_text",
            "dmarc_addresses",
        ),
    ),
    "topics": (
        "Topics",
        ("topics_enabled", "topics_bodylines_limit", "topics"),
    ),
    "digest": (
        "Digest",
        (
            "digests_enabled",
            "digest_send_periodic",
            "digest_size_threshold",
            "digest_volume_frequency",
        ),
    ),
    "message-acceptance": (
        "Message acceptance",
        (
            "default_member_action",
            "default_nonmember_action",
            "accept_these_nonmembers",
            "hold_these_nonmembers",
            "reject_these_nonmembers",
            "discard_these_nonmembers",
            "emergency",
            "administrivia",
            "require_explicit_destination",
            "acceptable_aliases",
            "require_authenticated_senders",
            "max_message_size",
            "max_num_recipients",
            "max_days_to_hold",
        ),
    ),
    "archiving": ("Archiving", ("archive_policy", "archive_rendering_mode")),
    "subscription-policy": (
        "Subscription policy",
        ("subscription_policy", "unsubscription_policy"),
    ),
    "usenet": (
        "Usenet",
        (
            "gateway_to_news",
            "gateway_to_mail",
            "linked_newsgroup",
            "nntp_prefix_subject_too",
            "newsgroup_moderation",
        ),
    ),
    "bounce-processing": (
        "Bounce processing",
        (
            "process_bounces",
            "bounce_score_threshold",
            "bounce_info_stale_after",
            "bounce_you_are_disabled_warnings",
            "bounce_you_are_disabled_warnings_interval",
            "bounce_notify_owner_on_bounce_increment",
            "bounce_notify_owner_on_disable",
            "bounce_notify_owner_on_removal",
            "forward_unrecognized_bounces_to",
        ),
    ),
}


@dataclass(frozen=True)
class Field:
    name: str
    #: bool, int, days, choice, language, lines, line, text
    kind: str
    choices: tuple[str, ...] = ()
    max_length: int = 0
    enum: type[StrEnum] | None = None

    @property
    def label(self) -> str:
        """The setting's name in words (untranslated: ``_(f.label)`` on the page)."""
        return SETTING_HELP[self.name].label

    @property
    def help(self) -> str:
        """One sentence on what the setting does (untranslated)."""
        return SETTING_HELP[self.name].help

    @property
    def unit(self) -> str | None:
        return SETTING_HELP[self.name].unit

    @property
    def options(self) -> list[tuple[str, str]]:
        """(value, words) for each value of a choice, the words untranslated."""
        if self.kind == "language":
            return [(code, language_name(code)) for code in self.choices]
        name = self.enum.__name__ if self.enum is not None else ""
        return [(value, choice_label(name, value)) for value in self.choices]


def language_name(code: str) -> str:
    """``de`` → ``Deutsch (de)``: the language's own name, and its code."""
    try:
        name = Locale.parse(code).get_display_name(code) or code
    except (ValueError, UnknownLocaleError):
        return code
    return f"{name[:1].upper()}{name[1:]} ({code})"


def field_of(name: str, current: str = "") -> Field:
    """The form field of setting ``name``; ``current``: its stored value, offered by a
    select even when it is not among the values one may choose now (a list imported with
    a language no catalog ships)."""
    if name == "preferred_language":
        shipped = available_languages()
        kept = (current,) if current and current not in shipped else ()
        return Field(name, "language", shipped + kept)
    column = MailingList.__table__.c[name]
    kind_type = column.type
    if isinstance(kind_type, Boolean):
        return Field(name, "bool")
    if isinstance(kind_type, Enum):
        enum_cls: type[StrEnum] = kind_type.enum_class  # type: ignore[assignment]
        return Field(name, "choice", tuple(m.value for m in enum_cls), enum=enum_cls)
    if isinstance(kind_type, Integer):
        return Field(name, "int")
    if isinstance(kind_type, Interval):
        return Field(name, "days")
    if isinstance(kind_type, JSON):
        return Field(name, "lines")
    if isinstance(kind_type, Text):
        return Field(name, "text")
    if isinstance(kind_type, String):
        return Field(name, "line", max_length=kind_type.length or 0)
    raise AssertionError(f"no form field for {name}")


def fields(group: str, mlist: MailingList | None = None) -> list[Field]:
    return [
        field_of(name, str(getattr(mlist, name) or "") if mlist is not None else "")
        for name in GROUPS[group][1]
    ]


def shown_value(mlist: MailingList, fld: Field) -> str:
    value = getattr(mlist, fld.name)
    if fld.kind == "days":
        days = value.total_seconds() / 86400
        return f"{days:g}"
    if fld.name == "topics":
        return "\n".join(topics.as_line(row) for row in value or [])
    if fld.kind == "lines":
        return "\n".join(str(v) for v in value or [])
    if fld.kind == "bool":
        return "1" if value else ""
    if isinstance(value, StrEnum):
        return value.value
    return "" if value is None else str(value)


def _raw(fld: Field, values: dict[str, list[str]]) -> str:
    """What the form sent for ``fld``: its last value.

    A checkbox is preceded by a hidden empty field of the same name (so that an unchecked
    box is sent at all): the checkbox's own value, when checked, comes last."""
    return (values.get(fld.name) or [""])[-1]


def typed_values(group: str, values: dict[str, list[str]]) -> dict[str, str]:
    """The fields of ``group`` as the form sent them, to show again beside its errors
    (a checked box as ``"1"``, as :func:`shown_value` shows it)."""
    shown = {}
    for fld in fields(group):
        raw = _raw(fld, values)
        shown[fld.name] = ("1" if raw in _CHECKED else "") if fld.kind == "bool" else raw
    return shown


_CHECKED = ("1", "on", "true")


def _parse(fld: Field, values: dict[str, list[str]]) -> Any:
    raw = _raw(fld, values)
    if fld.kind == "bool":
        return raw in _CHECKED
    if fld.kind == "int":
        try:
            number = int(raw.strip())
        except ValueError:
            raise InvalidInput(fld.name, _("expected a whole number")) from None
        if fld.name == "topics_bodylines_limit":
            return max(number, -1)  # negative: the whole body
        if number < 0:
            raise InvalidInput(fld.name, _("must not be negative"))
        return number
    if fld.kind == "days":
        try:
            days = float(raw.strip())
        except ValueError:
            raise InvalidInput(fld.name, _("expected a number of days")) from None
        if not 0 <= days <= 3650:
            raise InvalidInput(fld.name, _("expected between 0 and 3650 days"))
        return timedelta(days=days)
    if fld.kind == "language":
        if raw not in fld.choices:
            raise InvalidInput.not_one_of(
                fld.name,
                _("no catalog for the language {value!r}; choose one of: {choices}"),
                raw,
                fld.choices,
            )
        return raw
    if fld.kind == "choice":
        if raw not in fld.choices:
            raise InvalidInput.not_one_of(
                fld.name, _("unknown value {value!r}; choose one of: {choices}"), raw, fld.choices
            )
        return fld.enum(raw) if fld.enum is not None else raw
    # One entry a line, at LF (CRLF from the browser): any other line break or control
    # character stays in its entry, which the one-line check then refuses.
    entries = raw.replace("\r\n", "\n").split("\n")
    if fld.name == "topics":
        return topics.parse_topics(entries, fld.name)
    if fld.kind == "lines":
        lines = [line.strip() for line in entries if line.strip()]
        if fld.name in ADDRESS_PATTERN_SETTINGS:
            for line in lines:
                _check_pattern(fld.name, line)
        return lines
    text = raw.replace("\r\n", "\n")
    if fld.kind == "line":
        text = text.strip()
        if "\n" in text:
            raise InvalidInput(fld.name, _("must be one line"))
        if fld.max_length and len(text) > fld.max_length:
            raise InvalidInput(fld.name, _("at most {n} characters").format(n=fld.max_length))
        if fld.name == "reply_to_address" and text:
            text = normalize_email(text, fld.name)
        if fld.name == "display_name" and not text:
            raise InvalidInput(fld.name, _("may not be empty"))
    return text


def _check_pattern(name: str, line: str) -> None:
    if name in AT_LIST_SETTINGS and line.startswith("@"):
        setting_line(name, line)
    elif not line.startswith("^"):
        normalize_email(line, name)
    elif (reason := problem(line)) is not None:
        raise InvalidInput(
            name, _("bad regular expression {regex!r}: {error}").format(regex=line, error=reason)
        )


def apply(
    mlist: MailingList, group: str, values: dict[str, list[str]]
) -> tuple[dict[str, str], list[str]]:
    """Check every field of ``group``; with no error, set them.

    Returns (errors by field, names of the settings that changed)."""
    parsed: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for fld in fields(group, mlist):
        try:
            parsed[fld.name] = check_setting(fld.name, _parse(fld, values))
        except InvalidInput as exc:
            errors[fld.name] = exc.problem
    if errors:
        return errors, []
    changed = []
    for name, value in parsed.items():
        stored = getattr(mlist, name)
        if isinstance(stored, str) and isinstance(value, str) and stored.strip() == value:
            # The form shows a one-line value without its outer blanks (the list's own
            # "[Team] " prefix): sent back untouched, it is no change.
            continue
        if stored != value:
            setattr(mlist, name, value)
            changed.append(name)
    return {}, changed
