"""The Mailman 2.1 options that :mod:`mtaplugin.importers.mailman2` does not map to a
setting: those with no counterpart (a note says so when the list set them), those whose
2.1 value is what mtaplugin does anyway, the list's bookkeeping, and the rejection texts
that word a refusal."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mtaplugin.i18n import _


def _umbrella() -> str:
    return _("umbrella lists are not supported")


def _exclude() -> str:
    return _("lists excluded from delivery are not supported")


def _verbosity() -> str:
    return _(
        "members who post too much are not moderated automatically; the site's "
        "rules.sender_posts_per_hour limits every sender"
    )


#: 2.1 options with no counterpart, and why (printed when the list set them)
NOT_CARRIED: dict[str, Callable[[], str]] = {
    "password": lambda: _(
        "the list's admin password was an unsalted SHA-1 hash; give owners web accounts instead"
    ),
    "mod_password": lambda: _(
        "the moderator password was an unsalted SHA-1 hash; set a new one "
        "(moderator_password) if moderators approve by password"
    ),
    "post_password": lambda: _("the poster password (Urgent:) was an unsalted SHA-1 hash"),
    "send_reminders": lambda: _(
        "monthly password reminders do not exist (a forgotten password is reset on the web)"
    ),
    "umbrella_list": _umbrella,
    "umbrella_member_suffix": _umbrella,
    "regular_include_lists": lambda: _("lists included in this one are not supported"),
    "regular_exclude_lists": _exclude,
    "regular_exclude_ignore": _exclude,
    "obscure_addresses": lambda: _("the web pages always obscure addresses for visitors"),
    "scrub_nondigest": lambda: _("attachments are not scrubbed from regular posts"),
    "encode_ascii_prefixes": lambda: _(
        "the subject prefix is RFC 2047-encoded only when it needs it"
    ),
    "dmarc_quarantine_moderation_action": lambda: _(
        "DMARC mitigation applies to p=reject and p=quarantine alike (dmarc_mitigate_action)"
    ),
    "dmarc_none_moderation_action": lambda: _("DMARC p=none is not mitigated"),
    "new_member_options": lambda: _("new members take the site's and list's defaults"),
    "nondigestable": lambda: _("every list offers regular delivery"),
    "digest_is_default": lambda: _("new members get regular delivery unless they choose a digest"),
    "mime_is_default_digest": lambda: _("a member who chooses a digest chooses its kind"),
    "archive_volume_frequency": lambda: _("the archive is browsed by month"),
    "hold_and_cmd_autoresponses": lambda: _("the per-sender autoresponse counts start afresh"),
    "subscribe_auto_approval": lambda: _(
        "subscriptions are not approved automatically by pattern; the moderators decide"
    ),
    "member_verbosity_threshold": _verbosity,
    "member_verbosity_interval": _verbosity,
    "equivalent_domains": lambda: _(
        "an address in an equivalent domain is not taken for the member's address"
    ),
    "nntp_host": lambda: _(
        "the news server is set for the whole site ([news] in the configuration)"
    ),
    "forward_auto_discards": lambda: _("posts discarded by a rule are not sent to the moderators"),
    "drop_cc": lambda: _("the members' copy keeps its Cc: addresses"),
    "include_sender_header": lambda: _("the members' copy gets no Sender: field"),
}

#: 2.1 values of :data:`NOT_CARRIED` options that are what mtaplugin does anyway (no note)
BEHAVES_AS: dict[str, Any] = {
    "obscure_addresses": True,
    "nondigestable": True,
    "archive_volume_frequency": 1,
    "new_member_options": 256,
    "encode_ascii_prefixes": 2,
    "member_verbosity_threshold": 0,
    "member_verbosity_interval": 300,
    "umbrella_member_suffix": "-owner",
    "regular_exclude_ignore": True,
    "forward_auto_discards": False,
    "drop_cc": False,
    "include_sender_header": False,
}

#: 2.1 attributes that are the list's bookkeeping, not a setting: counters, caches, the
#: site's own values (its URL and host, its languages), the web admin's page size.  They
#: are not carried and not noted.
BOOKKEEPING = frozenset(
    {
        "admin_member_chunksize",
        "admin_responses",
        "available_languages",
        "data_version",
        "host_name",
        "next_post_number",
        "next_request_id",
        "one_last_digest",
        "postings_responses",
        "request_responses",
        "usenet_watermark",
        "web_page_url",
    }
)

#: 2.1 rejection texts and the rule whose refusal (``refusal_texts``) they word
REFUSAL_TEXTS = {
    "nonmember_rejection_notice": "nonmember-moderation",
    "member_moderation_notice": "member-moderation",
}

__all__ = ["BEHAVES_AS", "BOOKKEEPING", "NOT_CARRIED", "REFUSAL_TEXTS"]
