"""A Mailman 2.1 list configuration (``config.pck``, read by
:mod:`mtaplugin.importers.mm2pickle`) as a :class:`Plan`: pure, no database.

This module holds the settings and the plan; the facts of 2.1 (option numbers, the bits
of ``user_options``: :mod:`~mtaplugin.importers.mm2values`; the default footer and the
texts: :mod:`~mtaplugin.importers.mm2texts`; the rosters:
:mod:`~mtaplugin.importers.mm2members`) are from Mailman 2.1's ``Defaults.py`` and
``MemberAdaptor.py``; where Mailman 3's ``import21``
maps an option, the same meaning is kept, and where mtaplugin carries more (the members'
own flags, the unsubscription policy, whether digests are offered) :data:`DIFFERENCES`
says so.  What has no counterpart is listed in :attr:`Plan.notes`, so nothing is dropped
without a word.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from functools import partial
from typing import Any

from mtaplugin.enums import (
    Action,
    ArchivePolicy,
    DMARCMitigateAction,
    ResponseAction,
    UnrecognizedBounceDisposition,
)
from mtaplugin.i18n import _
from mtaplugin.importers import mm2members, mm2texts
from mtaplugin.importers.mailman2_options import (
    BEHAVES_AS,
    NOT_CARRIED,
)
from mtaplugin.importers.mm2values import (
    AUTORESPOND_REQUESTS,
    DIGEST_FREQUENCY,
    DMARC_ACTION,
    FILTER_ACTION,
    HEADER_ACTION,
    MEMBER_MODERATION_ACTION,
    NEWS_MODERATION,
    NONMEMBER_ACTION,
    PERSONALIZE,
    REPLY_TO,
    ROSTER,
    SUBSCRIBE_POLICY,
    UNSUBSCRIBE_POLICY,
    flag,
    lines_of,
    number,
    when,
)
from mtaplugin.importers.plan import Plan
from mtaplugin.regexes import problem

#: where mtaplugin's import knowingly differs from Mailman 3.3's ``import21``
DIFFERENCES = """\
- members' own flags: import21 keeps delivery mode, language, name, delivery status and
  moderation; mtaplugin also carries acknowledge_posts (AcknowledgePosts),
  receive_own_postings (DontReceiveOwnPosts), hide_address (ConcealSubscription),
  receive_list_copy (DontReceiveDuplicates), receive_nonmatching_topics, the topics each
  member chose (topics_userinterest) and the bounce score and last bounce date.
- unsubscribe_policy: import21 leaves Mailman 3's default; mtaplugin maps 1 (the
  moderators approve) to confirm_then_moderate and 0 to confirm.
- digestable: import21 leaves digests offered; mtaplugin turns them off when 2.1 did.
- a member who is not moderated keeps no moderation action of their own (the list's
  default applies) when the list's default is to let members post; import21 writes
  "defer" on every such member, which then ignores a later change of the default.
- decoration templates: import21 writes files under Mailman's var directory when the text
  differs from Mailman 3's default after expansion; mtaplugin stores the converted text as
  the list's template when it differs from Mailman 2.1's default, and also converts
  welcome_msg (import21 drops it), shown above the usual welcome text.
- texts that are not valid UTF-8 are read in the charset of the list's 2.1 language
  (import21 reads ASCII, then UTF-8, then replaces what is left with "?").
- the list's created_at, last_post_at and digest_last_sent_at are carried as UTC.
- nonmember_rejection_notice and member_moderation_notice: import21 drops them; mtaplugin
  refuses such a post at end of data, so they become the wording of that refusal
  (refusal_texts of nonmember-moderation and member-moderation), %(listowner)s as {owner}.
"""


def subject_prefix(value: str) -> str:
    """2.1 strips the prefix and adds one space before the subject; mtaplugin (as Mailman
    3) puts the prefix as it is."""
    value = value.strip()
    return f"{value} " if value else ""


def _text_setting(settings: dict[str, Any], config: dict[str, Any], key: str, new: str) -> None:
    if isinstance(config.get(key), str):
        settings[new] = config[key]


def _settings(config: dict[str, Any], plan: Plan) -> None:
    s = plan.settings
    for key in (
        "admin_immed_notify",
        "admin_notify_mchanges",
        "administrivia",
        "advertised",
        "anonymous_list",
        "collapse_alternatives",
        "convert_html_to_plaintext",
        "emergency",
        "filter_content",
        "first_strip_reply_to",
        "include_rfc2369_headers",
        "require_explicit_destination",
        "respond_to_post_requests",
        "topics_enabled",
        "gateway_to_mail",
        "gateway_to_news",
        "bounce_notify_owner_on_disable",
        "bounce_notify_owner_on_removal",
        "digest_send_periodic",
    ):
        if key in config:
            s[key] = flag(config[key])
    renamed_bools = {
        "bounce_processing": "process_bounces",
        "include_list_post_header": "allow_list_posts",
        "send_welcome_msg": "send_welcome_message",
        "send_goodbye_msg": "send_goodbye_message",
        "news_prefix_subject_too": "nntp_prefix_subject_too",
        "digestable": "digests_enabled",
    }
    for key, new in renamed_bools.items():
        if key in config:
            s[new] = flag(config[key])
    for key in (
        "max_days_to_hold",
        "max_message_size",
        "max_num_recipients",
        "topics_bodylines_limit",
        "bounce_you_are_disabled_warnings",
        "volume",
        "next_digest_number",
    ):
        if key in config:
            s[key] = max(0, number(config[key]))
    if "post_id" in config:
        s["post_id"] = max(1, number(config["post_id"], 1))
    if "digest_size_threshhold" in config:
        s["digest_size_threshold"] = max(0, number(config["digest_size_threshhold"]))
    if "bounce_score_threshold" in config:
        s["bounce_score_threshold"] = max(1, round(float(config["bounce_score_threshold"])))
    for key, new in (
        ("bounce_info_stale_after", "bounce_info_stale_after"),
        ("bounce_you_are_disabled_warnings_interval", "bounce_you_are_disabled_warnings_interval"),
    ):
        if key in config:
            s[new] = timedelta(seconds=max(0, number(config[key])))
    if "autoresponse_graceperiod" in config:
        s["autoresponse_grace_period"] = timedelta(
            days=max(0, number(config["autoresponse_graceperiod"]))
        )
    for key, new in (
        ("real_name", "display_name"),
        ("description", "description"),
        ("info", "info"),
        ("reply_to_address", "reply_to_address"),
        ("linked_newsgroup", "linked_newsgroup"),
        ("bounce_matching_headers", "bounce_matching_headers"),
        ("autoresponse_admin_text", "autoresponse_owner_text"),
        ("autoresponse_postings_text", "autoresponse_postings_text"),
        ("autoresponse_request_text", "autoresponse_request_text"),
        ("dmarc_moderation_notice", "dmarc_moderation_notice"),
        ("dmarc_wrapped_message_text", "dmarc_wrapped_message_text"),
        ("preferred_language", "preferred_language"),
    ):
        _text_setting(s, config, key, new)
    if isinstance(config.get("subject_prefix"), str):
        s["subject_prefix"] = subject_prefix(config["subject_prefix"])
    for key, new in (
        ("filter_mime_types", "filter_types"),
        ("pass_mime_types", "pass_types"),
        ("filter_filename_extensions", "filter_extensions"),
        ("pass_filename_extensions", "pass_extensions"),
        ("dmarc_moderation_addresses", "dmarc_addresses"),
    ):
        if key in config:
            s[new] = lines_of(config[key])
    enums: tuple[tuple[str, str, dict[int, Any]], ...] = (
        ("generic_nonmember_action", "default_nonmember_action", NONMEMBER_ACTION),
        ("filter_action", "filter_action", FILTER_ACTION),
        ("private_roster", "member_roster_visibility", ROSTER),
        ("subscribe_policy", "subscription_policy", SUBSCRIBE_POLICY),
        ("unsubscribe_policy", "unsubscription_policy", UNSUBSCRIBE_POLICY),
        ("reply_goes_to_list", "reply_goes_to_list", REPLY_TO),
        ("personalize", "personalize", PERSONALIZE),
        ("digest_volume_frequency", "digest_volume_frequency", DIGEST_FREQUENCY),
        ("news_moderation", "newsgroup_moderation", NEWS_MODERATION),
        ("autorespond_requests", "autorespond_requests", AUTORESPOND_REQUESTS),
    )
    for key, new, table in enums:
        if key not in config:
            continue
        value = table.get(number(config[key], -1))
        if value is None:
            plan.notes.append(
                _("{key} = {value!r} is not a Mailman 2.1 value; {new} kept as it is").format(
                    key=key, value=config[key], new=new
                )
            )
        else:
            s[new] = value
    for key, new in (
        ("autorespond_admin", "autorespond_owner"),
        ("autorespond_postings", "autorespond_postings"),
    ):
        if key in config:
            s[new] = ResponseAction.respond_and_continue if config[key] else ResponseAction.none
    if "bounce_unrecognized_goes_to_list_owner" in config:
        s["forward_unrecognized_bounces_to"] = (
            UnrecognizedBounceDisposition.administrators
            if config["bounce_unrecognized_goes_to_list_owner"]
            else UnrecognizedBounceDisposition.discard
        )
    # Members' moderation: 2.1's flag is per member; the list's default is what new
    # members get.
    if flag(config.get("default_member_moderation")):
        s["default_member_action"] = MEMBER_MODERATION_ACTION.get(
            number(config.get("member_moderation_action")), Action.hold
        )
    else:
        s["default_member_action"] = Action.defer
    # DMARC: from_is_list applies to every post when it is stronger than the DMARC action.
    from_is_list = number(config.get("from_is_list"))
    dmarc_action = number(config.get("dmarc_moderation_action"))
    if from_is_list > dmarc_action:
        s["dmarc_mitigate_action"] = DMARC_ACTION.get(
            from_is_list, DMARCMitigateAction.no_mitigation
        )
        s["dmarc_mitigate_unconditionally"] = True
    else:
        s["dmarc_mitigate_action"] = DMARC_ACTION.get(
            dmarc_action, DMARCMitigateAction.no_mitigation
        )
        s["dmarc_mitigate_unconditionally"] = False
    # Archives: two booleans in 2.1, of which three states were meaningful.
    if config.get("archive"):
        private = config.get("archive_private", True)
        s["archive_policy"] = ArchivePolicy.private if private else ArchivePolicy.public
    else:
        s["archive_policy"] = ArchivePolicy.never
    aliases = ["^" + a.lstrip("^") for a in lines_of(config.get("acceptable_aliases", ""))]
    s["acceptable_aliases"] = aliases
    for action in ("accept", "hold", "reject", "discard"):
        key = f"{action}_these_nonmembers"
        kept = []
        for entry in lines_of(config.get(key, [])):
            if entry.startswith("^"):
                kept.append(entry)
            elif entry.startswith("@"):
                kept.append(
                    entry if "@" in entry[1:] else f"{entry}@{plan.fqdn_listname.split('@', 1)[1]}"
                )
        s[key] = kept
    topics = []
    for row in config.get("topics", []) or []:
        if isinstance(row, (list, tuple)) and len(row) >= 3:
            name, pattern, description = (str(x) for x in row[:3])
            topics.append([name.strip().replace(" ", "_"), pattern.strip(), description.strip()])
    s["topics"] = topics
    for old, new in (
        ("created_at", "created_at"),
        ("last_post_time", "last_post_at"),
        ("digest_last_sent_at", "digest_last_sent_at"),
    ):
        moment = when(config.get(old))
        if moment is not None:
            s[new] = moment


def _header_matches(config: dict[str, Any], plan: Plan) -> None:
    for row in config.get("header_filter_rules", []) or []:
        if not (isinstance(row, (list, tuple)) and len(row) >= 2):
            continue
        patterns, code = str(row[0]), number(row[1], -1)
        if code not in HEADER_ACTION:
            plan.notes.append(
                _(
                    "header filter {rule!r}: its action ({code}) has no counterpart; left out"
                ).format(rule=patterns.strip(), code=code)
            )
            continue
        for line in patterns.splitlines():
            if not line.strip():
                continue
            for sep in (": ", ":.*", ":.", ":"):
                header, found, pattern = line.partition(sep)
                if found:
                    break
            else:
                plan.notes.append(
                    _("header filter {rule!r}: names no header; left out").format(rule=line)
                )
                continue
            header = header.strip().lstrip("^").replace("\\", "").lower()
            pattern = pattern.strip() or ".*"
            if not _usable(pattern, plan, partial(_bad_header_filter, line)):
                continue
            if header and (header, pattern, HEADER_ACTION[code]) not in plan.header_matches:
                plan.header_matches.append((header, pattern, HEADER_ACTION[code]))


def _usable(pattern: str, plan: Plan, note: Callable[[str], str]) -> bool:
    """Whether ``pattern`` is a regular expression we can match with; if not, the plan's
    notes say so: ``note`` of the error."""
    reason = problem(pattern)
    if reason is not None:
        plan.notes.append(note(reason))
    return reason is None


def _bad_header_filter(rule: str, error: str) -> str:
    return _("header filter {rule!r}: bad regular expression ({error}); left out").format(
        rule=rule, error=error
    )


def _bad_ban(entry: str, error: str) -> str:
    return _("ban {entry!r}: bad regular expression ({error}); left out").format(
        entry=entry, error=error
    )


def plan(config: dict[str, Any], fqdn_listname: str) -> Plan:
    """What importing ``config`` into ``fqdn_listname`` should make."""
    result = Plan(fqdn_listname.lower())
    _settings(config, result)
    _header_matches(config, result)
    mm2texts.templates(config, result)
    mm2texts.refusal_texts(config, result)
    for entry in lines_of(config.get("ban_list", [])):
        if entry.startswith("^") and not _usable(entry, result, partial(_bad_ban, entry)):
            continue
        result.bans.append(entry.lower() if not entry.startswith("^") else entry)
    mm2members.members(config, result)
    if config.get("passwords"):
        result.notes.append(
            _(
                "member passwords are carried hashed (Mailman 2.1 kept them in clear text) "
                "for members who have no password here yet, and rehashed with argon2 at "
                "their first log-in; a person on several lists keeps the first list's"
            )
        )
    for key, why in NOT_CARRIED.items():
        value = config.get(key)
        if key in BEHAVES_AS:
            if key not in config or value == BEHAVES_AS[key]:
                continue
        elif not value:
            continue
        result.notes.append(_("{key}: not carried over: {why}").format(key=key, why=why()))
    return result
