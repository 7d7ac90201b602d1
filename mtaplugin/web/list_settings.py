"""Every list setting, grouped as Postorius groups them, with its form field and parser.

The kind of each field comes from its column (boolean, number, choice of an enum, days,
one-entry-per-line list, text); a form is checked as a whole: any error names its field
and nothing is changed.

:data:`NOT_ACTIVE` names the settings that are stored (and served over REST, as Mailman
does) but that nothing acts on yet: the pages mark them "not active yet", so that no owner
believes a setting is at work that is not.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum
from typing import Any

from sqlalchemy import JSON, Boolean, Enum, Integer, Interval, String, Text

from mtaplugin.errors import InvalidInput
from mtaplugin.i18n import _
from mtaplugin.manage import topics
from mtaplugin.manage.patterns import ADDRESS_PATTERN_SETTINGS
from mtaplugin.model import MailingList
from mtaplugin.posting.addresses import normalize_email

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

#: stored, shown and served, but read by no code path yet: ``archive_rendering_mode`` (the
#: archive's pages are still to come; ``archive_policy`` is acted on by
#: :mod:`mtaplugin.archive.store`).  The Digest page is active (:mod:`mtaplugin.digests`),
#: so is the Bounce processing page (:mod:`mtaplugin.bounces` reads every one of its
#: settings) and ``max_days_to_hold`` (the scheduler's ``hold-expiry`` job).
NOT_ACTIVE: frozenset[str] = frozenset({"archive_rendering_mode"})


#: labels in words rather than the setting's name, translated when the page is rendered
LABELS: dict[str, Callable[[], str]] = {
    "gateway_to_news": lambda: _("Send the list's posts to the newsgroup"),
    "gateway_to_mail": lambda: _("Send the newsgroup's articles to the list"),
    "linked_newsgroup": lambda: _("Linked newsgroup"),
    "nntp_prefix_subject_too": lambda: _("Add the subject prefix to articles too"),
    "newsgroup_moderation": lambda: _("Moderation of the newsgroup"),
}

_LANGUAGE = re.compile(r"^[a-z]{2,3}([_-][A-Za-z]{2,4})?$")


@dataclass(frozen=True)
class Field:
    name: str
    #: bool, int, days, choice, lines, line, text
    kind: str
    choices: tuple[str, ...] = ()
    max_length: int = 0
    enum: type[StrEnum] | None = None

    @property
    def label(self) -> str:
        worded = LABELS.get(self.name)
        return worded() if worded is not None else self.name.replace("_", " ").capitalize()

    @property
    def active(self) -> bool:
        """Some code acts on this setting (else the page says "not active yet")."""
        return self.name not in NOT_ACTIVE


def field_of(name: str) -> Field:
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


def fields(group: str) -> list[Field]:
    return [field_of(name) for name in GROUPS[group][1]]


def group_active(group: str) -> bool:
    """Some setting of the group is acted on (else the whole page is "not active yet")."""
    return any(name not in NOT_ACTIVE for name in GROUPS[group][1])


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


def _parse(fld: Field, values: dict[str, list[str]]) -> Any:
    raw = (values.get(fld.name) or [""])[-1]
    if fld.kind == "bool":
        return raw in ("1", "on", "true")
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
    if fld.kind == "choice":
        if raw not in fld.choices:
            raise InvalidInput(
                fld.name,
                _("unknown value {value!r}; choose one of: {choices}").format(
                    value=raw, choices=", ".join(fld.choices)
                ),
            )
        return fld.enum(raw) if fld.enum is not None else raw
    if fld.name == "topics":
        return topics.parse_topics(raw.splitlines(), fld.name)
    if fld.kind == "lines":
        lines = [line.strip() for line in raw.splitlines() if line.strip()]
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
        if fld.name == "preferred_language" and not _LANGUAGE.match(text):
            raise InvalidInput(fld.name, _("expected a language code such as en or pt_BR"))
        if fld.name == "display_name" and not text:
            raise InvalidInput(fld.name, _("may not be empty"))
    return text


def _check_pattern(name: str, line: str) -> None:
    if line.startswith("^"):
        try:
            re.compile(line)
        except re.error as exc:
            raise InvalidInput(
                name, _("bad regular expression {regex!r}: {error}").format(regex=line, error=exc)
            ) from None
    else:
        normalize_email(line, name)


def apply(
    mlist: MailingList, group: str, values: dict[str, list[str]]
) -> tuple[dict[str, str], list[str]]:
    """Check every field of ``group``; with no error, set them.

    Returns (errors by field, names of the settings that changed)."""
    parsed: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for fld in fields(group):
        try:
            parsed[fld.name] = _parse(fld, values)
        except InvalidInput as exc:
            errors[fld.name] = exc.problem
    if errors:
        return errors, []
    changed = []
    for name, value in parsed.items():
        if getattr(mlist, name) != value:
            setattr(mlist, name, value)
            changed.append(name)
    return {}, changed
