"""A Mailman 2.1 list configuration (``config.pck``, read by
:mod:`mtaplugin.importers.mm2pickle`) as a :class:`Plan`: pure, no database.

The facts of 2.1 (option numbers, the bits of ``user_options``, the default footer) are
from Mailman 2.1's ``Defaults.py`` and ``MemberAdaptor.py``; where Mailman 3's ``import21``
maps an option, the same meaning is kept, and where mtaplugin carries more (the members'
own flags, the unsubscription policy, whether digests are offered) :data:`DIFFERENCES`
says so.  What has no counterpart is listed in :attr:`Plan.notes`, so nothing is dropped
without a word.
"""

from __future__ import annotations

import contextlib
import re
from datetime import UTC, datetime, timedelta
from typing import Any

from mtaplugin.enums import (
    Action,
    ArchivePolicy,
    DeliveryMode,
    DeliveryStatus,
    DigestFrequency,
    DMARCMitigateAction,
    FilterAction,
    MemberRole,
    NewsgroupModeration,
    Personalization,
    ReplyToMunging,
    ResponseAction,
    RosterVisibility,
    SubscriptionPolicy,
    UnrecognizedBounceDisposition,
)
from mtaplugin.i18n import _
from mtaplugin.importers.mailman2_options import (
    BEHAVES_AS,
    NOT_CARRIED,
    REFUSAL_TEXTS,
)
from mtaplugin.importers.mm2pickle import BounceRecord
from mtaplugin.importers.plan import MemberPlan, Plan
from mtaplugin.regexes import problem

# -- Mailman 2.1's numbers ----------------------------------------------------------------

#: ``user_options`` bits (Defaults.py)
DISABLE_DELIVERY = 1
DONT_RECEIVE_OWN_POSTS = 2
ACKNOWLEDGE_POSTS = 4
DISABLE_MIME = 8
CONCEAL_SUBSCRIPTION = 16
RECEIVE_NONMATCHING_TOPICS = 64
MODERATE = 128
DONT_RECEIVE_DUPLICATES = 256

#: ``delivery_status`` codes (MemberAdaptor.py)
DELIVERY_STATUS = {
    0: DeliveryStatus.enabled,
    1: DeliveryStatus.unknown,
    2: DeliveryStatus.by_user,
    3: DeliveryStatus.by_moderator,
    4: DeliveryStatus.by_bounces,
}
MEMBER_MODERATION_ACTION = {0: Action.hold, 1: Action.reject, 2: Action.discard}
#: generic_nonmember_action: 2.1's "accept" lets the post on to the other rules (defer)
NONMEMBER_ACTION = {0: Action.defer, 1: Action.hold, 2: Action.reject, 3: Action.discard}
DMARC_ACTION = {
    0: DMARCMitigateAction.no_mitigation,
    1: DMARCMitigateAction.munge_from,
    2: DMARCMitigateAction.wrap_message,
    3: DMARCMitigateAction.reject,
    4: DMARCMitigateAction.discard,
}
FILTER_ACTION = {
    0: FilterAction.discard,
    1: FilterAction.reject,
    2: FilterAction.forward,
    3: FilterAction.preserve,
}
ROSTER = {0: RosterVisibility.public, 1: RosterVisibility.members, 2: RosterVisibility.moderators}
SUBSCRIBE_POLICY = {
    0: SubscriptionPolicy.open,
    1: SubscriptionPolicy.confirm,
    2: SubscriptionPolicy.moderate,
    3: SubscriptionPolicy.confirm_then_moderate,
}
#: unsubscribe_policy: 1 = the moderators approve; 0 = the member confirms by mail
UNSUBSCRIBE_POLICY = {0: SubscriptionPolicy.confirm, 1: SubscriptionPolicy.confirm_then_moderate}
REPLY_TO = {
    0: ReplyToMunging.no_munging,
    1: ReplyToMunging.point_to_list,
    2: ReplyToMunging.explicit_header,
}
PERSONALIZE = {0: Personalization.none, 1: Personalization.individual, 2: Personalization.full}
DIGEST_FREQUENCY = {
    0: DigestFrequency.yearly,
    1: DigestFrequency.monthly,
    2: DigestFrequency.quarterly,
    3: DigestFrequency.weekly,
    4: DigestFrequency.daily,
}
NEWS_MODERATION = {
    0: NewsgroupModeration.none,
    1: NewsgroupModeration.open_moderated,
    2: NewsgroupModeration.moderated,
}
AUTORESPOND_REQUESTS = {
    0: ResponseAction.none,
    1: ResponseAction.respond_and_discard,
    2: ResponseAction.respond_and_continue,
}
#: header_filter_rules actions: 0 defer, 2 reject, 3 discard, 6 accept, 7 hold; 1
#: (approve), 4 (subscribe) and 5 (unsubscribe) have no counterpart
HEADER_ACTION: dict[int, Action | None] = {
    0: None,
    2: Action.reject,
    3: Action.discard,
    6: Action.accept,
    7: Action.hold,
}

#: Mailman 2.1's default list footer (msg_footer and digest_footer): a list that kept it
#: gets mtaplugin's own default footer, which says the same in the list's language
DEFAULT_FOOTER = (
    "_______________________________________________\n"
    "%(real_name)s mailing list\n"
    "%(real_name)s@%(host_name)s\n"
    "%(web_page_url)slistinfo%(cgiext)s/%(_internal_name)s\n"
)

#: 2.1 texts and the template they become
TEMPLATES = {
    "msg_header": "list:member:regular:header",
    "msg_footer": "list:member:regular:footer",
    "digest_header": "list:member:digest:header",
    "digest_footer": "list:member:digest:footer",
    "welcome_msg": "list:user:notice:welcome",
    "goodbye_msg": "list:user:notice:goodbye",
}

#: 2.1 decoration variables and the template variable that says the same
VARIABLES = {
    "real_name": "display_name",
    "list_name": "list_name",
    "_internal_name": "list_name",
    "host_name": "mail_host",
    "description": "description",
    "info": "info",
    "user_address": "user_email",
    "user_delivered_to": "user_delivered_to",
    "user_name": "user_name",
    "listname": "listname",
}
_LISTINFO = re.compile(r"%\(web_page_url\)slistinfo%\(cgiext\)s/%\(_internal_name\)s")
_PLACEHOLDER = re.compile(r"%\((\w+)\)s")


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


def _bool(value: Any) -> bool:
    return bool(value)


def _int(value: Any, default: int = 0) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _lines(value: Any) -> list[str]:
    if isinstance(value, str):
        return [line.strip() for line in value.splitlines() if line.strip()]
    if isinstance(value, (list, tuple)):
        return [str(v).strip() for v in value if str(v).strip()]
    return []


def _when(value: Any) -> datetime | None:
    if isinstance(value, (int, float)) and value > 0:
        try:
            return datetime.fromtimestamp(float(value), UTC)
        except (OverflowError, OSError, ValueError):
            return None
    return None


def subject_prefix(value: str) -> str:
    """2.1 strips the prefix and adds one space before the subject; mtaplugin (as Mailman
    3) puts the prefix as it is."""
    value = value.strip()
    return f"{value} " if value else ""


def convert_template(text: str, notes: list[str], where: str, *, jinja: bool = False) -> str:
    """A 2.1 ``%(name)s`` text as a template: with ``${name}`` variables (the renderer
    fills Mailman's ``$variable`` syntax), or with ``jinja`` as Jinja2 (``{{ name }}``,
    the text's own braces kept as text) to be joined with a built-in template.  A
    variable with no counterpart is left out and noted."""
    text = text.replace("\r\n", "\n")
    unknown: set[str] = set()

    def variable(name: str) -> str:
        return f"{{{{ {name} }}}}" if jinja else f"${{{name}}}"

    def literal(piece: str) -> str:
        piece = piece.replace("%%", "%")
        if jinja:
            return re.sub(r"[{}]", lambda m: "{{ '" + m.group(0) + "' }}", piece)
        return piece.replace("$", "$$")

    out: list[str] = []
    pos = 0
    for m in re.finditer(rf"{_LISTINFO.pattern}|{_PLACEHOLDER.pattern}", text):
        out.append(literal(text[pos : m.start()]))
        pos = m.end()
        name = m.group(1)
        if name is None:  # the listinfo URL
            out.append(variable("listinfo_uri"))
        elif name == "cgiext":
            continue
        elif name in VARIABLES:
            out.append(variable(VARIABLES[name]))
        else:
            unknown.add(name)
    out.append(literal(text[pos:]))
    for name in sorted(unknown):
        notes.append(
            _("{where}: %({name})s has no counterpart and was left out").format(
                where=where, name=name
            )
        )
    return "".join(out)


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
            s[key] = _bool(config[key])
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
            s[new] = _bool(config[key])
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
            s[key] = max(0, _int(config[key]))
    if "post_id" in config:
        s["post_id"] = max(1, _int(config["post_id"], 1))
    if "digest_size_threshhold" in config:
        s["digest_size_threshold"] = max(0, _int(config["digest_size_threshhold"]))
    if "bounce_score_threshold" in config:
        s["bounce_score_threshold"] = max(1, round(float(config["bounce_score_threshold"])))
    for key, new in (
        ("bounce_info_stale_after", "bounce_info_stale_after"),
        ("bounce_you_are_disabled_warnings_interval", "bounce_you_are_disabled_warnings_interval"),
    ):
        if key in config:
            s[new] = timedelta(seconds=max(0, _int(config[key])))
    if "autoresponse_graceperiod" in config:
        s["autoresponse_grace_period"] = timedelta(
            days=max(0, _int(config["autoresponse_graceperiod"]))
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
            s[new] = _lines(config[key])
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
        value = table.get(_int(config[key], -1))
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
    if _bool(config.get("default_member_moderation")):
        s["default_member_action"] = MEMBER_MODERATION_ACTION.get(
            _int(config.get("member_moderation_action")), Action.hold
        )
    else:
        s["default_member_action"] = Action.defer
    # DMARC: from_is_list applies to every post when it is stronger than the DMARC action.
    from_is_list = _int(config.get("from_is_list"))
    dmarc_action = _int(config.get("dmarc_moderation_action"))
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
    aliases = ["^" + a.lstrip("^") for a in _lines(config.get("acceptable_aliases", ""))]
    s["acceptable_aliases"] = aliases
    for action in ("accept", "hold", "reject", "discard"):
        key = f"{action}_these_nonmembers"
        kept = []
        for entry in _lines(config.get(key, [])):
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
    for when, new in (
        ("created_at", "created_at"),
        ("last_post_time", "last_post_at"),
        ("digest_last_sent_at", "digest_last_sent_at"),
    ):
        moment = _when(config.get(when))
        if moment is not None:
            s[new] = moment


def _header_matches(config: dict[str, Any], plan: Plan) -> None:
    for row in config.get("header_filter_rules", []) or []:
        if not (isinstance(row, (list, tuple)) and len(row) >= 2):
            continue
        patterns, code = str(row[0]), _int(row[1], -1)
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
            reason = problem(pattern)
            if reason is not None:
                plan.notes.append(
                    _("header filter {rule!r}: bad regular expression ({error}); left out").format(
                        rule=line, error=reason
                    )
                )
                continue
            if header and (header, pattern, HEADER_ACTION[code]) not in plan.header_matches:
                plan.header_matches.append((header, pattern, HEADER_ACTION[code]))


def _templates(config: dict[str, Any], plan: Plan) -> None:
    for key, name in TEMPLATES.items():
        text = config.get(key)
        if not isinstance(text, str) or not text.strip():
            continue
        if (
            key in ("msg_footer", "digest_footer")
            and text.replace("\r\n", "\n").strip() == DEFAULT_FOOTER.strip()
        ):
            continue
        if key == "welcome_msg":
            # 2.1 put the list's own text above its standard welcome: so does mtaplugin.
            own = convert_template(text, plan.notes, key, jinja=True).rstrip("\n")
            plan.templates[(name, "")] = f'{own}\n\n{{% include "{name}.txt" %}}'
        else:
            plan.templates[(name, "")] = convert_template(text, plan.notes, key)


def _refusal_texts(config: dict[str, Any], plan: Plan) -> None:
    """2.1's own rejection texts as the wording of the refusal of their rule."""
    texts: dict[str, str] = {}
    for key, rule in REFUSAL_TEXTS.items():
        text = config.get(key)
        if isinstance(text, str) and text.strip():
            escaped = " ".join(text.split()).replace("{", "{{").replace("}", "}}")
            texts[rule] = escaped.replace("%(listowner)s", "{owner}")
    if texts:
        plan.settings["refusal_texts"] = texts


def _members(config: dict[str, Any], plan: Plan) -> None:
    regular: dict[str, Any] = config.get("members", {}) or {}
    digest: dict[str, Any] = config.get("digest_members", {}) or {}
    options: dict[str, Any] = config.get("user_options", {}) or {}
    names: dict[str, Any] = config.get("usernames", {}) or {}
    languages: dict[str, Any] = config.get("language", {}) or {}
    statuses: dict[str, Any] = config.get("delivery_status", {}) or {}
    interests: dict[str, Any] = config.get("topics_userinterest", {}) or {}
    bounces: dict[str, Any] = config.get("bounce_info", {}) or {}
    moderated = MEMBER_MODERATION_ACTION.get(
        _int(config.get("member_moderation_action")), Action.hold
    )
    default_action = plan.settings.get("default_member_action", Action.defer)
    seen: set[str] = set()
    for email in [*regular, *digest]:
        key = email.lower()
        if key in seen:
            continue
        seen.add(key)
        bits = _int(options.get(email, options.get(key, 0)))
        member = MemberPlan(key, MemberRole.member, display_name=str(names.get(email, "") or ""))
        if email in regular:
            member.delivery_mode = DeliveryMode.regular
        else:
            member.delivery_mode = (
                DeliveryMode.plaintext_digests if bits & DISABLE_MIME else DeliveryMode.mime_digests
            )
        status = statuses.get(email)
        if isinstance(status, (list, tuple)) and status:
            member.delivery_status = DELIVERY_STATUS.get(_int(status[0]), DeliveryStatus.unknown)
        elif bits & DISABLE_DELIVERY:
            member.delivery_status = DeliveryStatus.unknown
        if member.delivery_status is DeliveryStatus.enabled:
            member.delivery_status = None
        language = languages.get(email)
        if (
            isinstance(language, str)
            and language
            and language != plan.settings.get("preferred_language")
        ):
            member.language = language
        if bits & MODERATE:
            member.moderation_action = moderated
        elif default_action is not Action.defer:
            member.moderation_action = Action.defer
        member.acknowledge_posts = True if bits & ACKNOWLEDGE_POSTS else None
        member.receive_own_postings = False if bits & DONT_RECEIVE_OWN_POSTS else None
        member.hide_address = True if bits & CONCEAL_SUBSCRIPTION else None
        member.receive_list_copy = False if bits & DONT_RECEIVE_DUPLICATES else None
        member.receive_nonmatching_topics = bool(bits & RECEIVE_NONMATCHING_TOPICS)
        chosen = interests.get(email)
        if isinstance(chosen, (list, tuple)):
            member.topics = [str(t).strip().replace(" ", "_") for t in chosen]
        record = bounces.get(email)
        if isinstance(record, BounceRecord):
            member.bounce_score = round(record.score)
            if record.date is not None:
                with contextlib.suppress(ValueError):
                    member.last_bounce_received = datetime(*record.date, tzinfo=UTC)
        plan.members.append(member)
    for role, key in ((MemberRole.owner, "owner"), (MemberRole.moderator, "moderator")):
        for email in _lines(config.get(key, [])):
            plan.members.append(MemberPlan(email.lower(), role))
    # A nonmember named twice (or in two lists) gets the first list's action, as 2.1
    # checked accept, hold, reject, discard in that order.
    listed: set[tuple[str, MemberRole]] = set()
    for action, key in (
        (Action.defer, "accept_these_nonmembers"),
        (Action.hold, "hold_these_nonmembers"),
        (Action.reject, "reject_these_nonmembers"),
        (Action.discard, "discard_these_nonmembers"),
    ):
        for email in _lines(config.get(key, [])):
            if email.startswith(("^", "@")) or (email.lower(), MemberRole.nonmember) in listed:
                continue
            listed.add((email.lower(), MemberRole.nonmember))
            plan.members.append(
                MemberPlan(email.lower(), MemberRole.nonmember, moderation_action=action)
            )


def plan(config: dict[str, Any], fqdn_listname: str) -> Plan:
    """What importing ``config`` into ``fqdn_listname`` should make."""
    result = Plan(fqdn_listname.lower())
    _settings(config, result)
    _header_matches(config, result)
    _templates(config, result)
    _refusal_texts(config, result)
    for entry in _lines(config.get("ban_list", [])):
        if entry.startswith("^"):
            reason = problem(entry)
            if reason is not None:
                result.notes.append(
                    _("ban {entry!r}: bad regular expression ({error}); left out").format(
                        entry=entry, error=reason
                    )
                )
                continue
        result.bans.append(entry.lower() if not entry.startswith("^") else entry)
    _members(config, result)
    if config.get("passwords"):
        result.notes.append(
            _(
                "member passwords were not carried over: Mailman 2.1 kept them in clear text; "
                "members set a password on the web when they want one"
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
