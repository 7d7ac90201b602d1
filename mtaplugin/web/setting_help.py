# ruff: noqa: E501  (a table of sentences: one line each reads and translates best)
"""What every list setting is called on the settings pages, one sentence on what it does
here, and its unit; the words shown for the values of a choice.

The texts are marked with ``N_()`` and translated when the page is rendered, in the
reader's language (``_(help.label)`` in the templates).  Every setting of
:data:`mtaplugin.web.list_settings.GROUPS` has an entry (a unit test checks it).
"""

from __future__ import annotations

from dataclasses import dataclass

from mtaplugin.i18n import N_


@dataclass(frozen=True)
class SettingHelp:
    #: the setting's name in words
    label: str
    #: one sentence: what it does in mtaplugin
    help: str
    #: what its number counts (days, KB, ...); None when it is not a number
    unit: str | None = None


DAYS = N_("days")
KB = N_("KB")

#: keyed by the setting's REST name (Mailman's)
SETTING_HELP: dict[str, SettingHelp] = {
    # --- list identity
    "display_name": SettingHelp(
        N_("Display name"),
        N_("The list's name as people see it, in notices, on the list pages and in digests."),
    ),
    "description": SettingHelp(
        N_("Short description"),
        N_("One line that says what the list is for, shown in the index of lists."),
    ),
    "info": SettingHelp(
        N_("About the list"),
        N_("A longer text for the list's page and the welcome message."),
    ),
    "subject_prefix": SettingHelp(
        N_("Subject prefix"),
        N_("Put before the subject of every post sent to the members, such as [team]."),
    ),
    "preferred_language": SettingHelp(
        N_("Language"),
        N_(
            "The language of the list's notices, pages and replies, unless a member chose their own."
        ),
    ),
    "advertised": SettingHelp(
        N_("Show in the list index"),
        N_("When on, the list appears in the public index of lists; off hides it from visitors."),
    ),
    "member_roster_visibility": SettingHelp(
        N_("Who may see the members"),
        N_("Who may see the list of members: anyone, the members, or only moderators and owners."),
    ),
    # --- automatic responses
    "autorespond_owner": SettingHelp(
        N_("Auto-reply to mail for the owners"),
        N_("Whether mail to the list's -owner address gets the automatic reply below."),
    ),
    "autoresponse_owner_text": SettingHelp(
        N_("Auto-reply to the owners' mail"),
        N_("The text of the automatic reply to mail for the owners."),
    ),
    "autorespond_postings": SettingHelp(
        N_("Auto-reply to posts"),
        N_("Whether a post to the list gets the automatic reply below."),
    ),
    "autoresponse_postings_text": SettingHelp(
        N_("Auto-reply to posts: text"),
        N_("The text of the automatic reply to a post."),
    ),
    "autorespond_requests": SettingHelp(
        N_("Auto-reply to requests"),
        N_("Whether mail to the list's -request address gets the automatic reply below."),
    ),
    "autoresponse_request_text": SettingHelp(
        N_("Auto-reply to requests: text"),
        N_("The text of the automatic reply to mail for the -request address."),
    ),
    "autoresponse_grace_period": SettingHelp(
        N_("Grace period"),
        N_("The same sender gets at most one automatic reply in this many days (0: every time)."),
        DAYS,
    ),
    "send_welcome_message": SettingHelp(
        N_("Send a welcome message"),
        N_("A new member is sent the welcome message with the list's rules and addresses."),
    ),
    "send_goodbye_message": SettingHelp(
        N_("Send a goodbye message"),
        N_("A member who leaves or is removed is told so by mail."),
    ),
    "admin_immed_notify": SettingHelp(
        N_("Tell moderators at once about held posts"),
        N_("Each held post is sent to the moderators as it is held, and they can answer it."),
    ),
    "admin_notify_mchanges": SettingHelp(
        N_("Tell the owners about new and leaving members"),
        N_("The owners get a notice when someone joins or leaves the list."),
    ),
    "respond_to_post_requests": SettingHelp(
        N_("Tell the poster that a post is held"),
        N_(
            "The sender of a held post is told that it waits for a moderator (only when the sender's address is authenticated)."
        ),
    ),
    # --- alter messages
    "filter_content": SettingHelp(
        N_("Filter attachments"),
        N_("Remove the parts of a post named by the lists below before it goes to the members."),
    ),
    "filter_action": SettingHelp(
        N_("When nothing is left after filtering"),
        N_("What happens to a post whose every part was filtered out."),
    ),
    "filter_types": SettingHelp(
        N_("Remove these content types"),
        N_("MIME types to remove from posts, such as image/gif or application (one a line)."),
    ),
    "pass_types": SettingHelp(
        N_("Keep only these content types"),
        N_("When not empty, every part whose MIME type is not listed here is removed."),
    ),
    "filter_extensions": SettingHelp(
        N_("Remove these file extensions"),
        N_("Attachments whose file name ends in one of these extensions are removed, such as exe."),
    ),
    "pass_extensions": SettingHelp(
        N_("Keep only these file extensions"),
        N_("When not empty, every attachment whose extension is not listed here is removed."),
    ),
    "collapse_alternatives": SettingHelp(
        N_("Keep one alternative"),
        N_("A post sent as plain text and HTML keeps only its first alternative (the plain text)."),
    ),
    "convert_html_to_plaintext": SettingHelp(
        N_("Convert HTML to plain text"),
        N_("An HTML part is turned into plain text before the post goes to the members."),
    ),
    "anonymous_list": SettingHelp(
        N_("Anonymous list"),
        N_("The sender's name and address are removed: posts come from the list itself."),
    ),
    "allow_list_posts": SettingHelp(
        N_("Add a List-Post header"),
        N_("Posts carry a List-Post: header with the list's address; off for announcement lists."),
    ),
    "reply_goes_to_list": SettingHelp(
        N_("Where replies go"),
        N_("Whether a reply goes to the poster, to the list, or to the address below."),
    ),
    "reply_to_address": SettingHelp(
        N_("Reply-To address"),
        N_("The address put in Reply-To: when replies go to an address of your choice."),
    ),
    "first_strip_reply_to": SettingHelp(
        N_("Remove the poster's Reply-To"),
        N_("The Reply-To: header the poster set is removed before the list adds its own."),
    ),
    "personalize": SettingHelp(
        N_("Personalized copies"),
        N_(
            "Whether each member gets a copy of their own (so that the footer can name them), and whether it is addressed to them in To:."
        ),
    ),
    # --- DMARC
    "dmarc_mitigate_action": SettingHelp(
        N_("DMARC mitigation"),
        N_(
            "What is done to a post from a domain whose DMARC policy would make receivers refuse the list's copies."
        ),
    ),
    "dmarc_mitigate_unconditionally": SettingHelp(
        N_("Mitigate every post"),
        N_("Apply the mitigation to every post, whatever the sender's domain publishes."),
    ),
    "dmarc_moderation_notice": SettingHelp(
        N_("Notice for refused posts"),
        N_("The text sent to a poster whose post is refused or discarded because of DMARC."),
    ),
    "dmarc_wrapped_message_text": SettingHelp(
        N_("Text for wrapped posts"),
        N_("A text put before a post that is wrapped in a message from the list."),
    ),
    "dmarc_addresses": SettingHelp(
        N_("Also mitigate these senders"),
        N_("Addresses, or regular expressions starting with ^, whose posts are always mitigated."),
    ),
    # --- topics
    "topics_enabled": SettingHelp(
        N_("Topics"),
        N_("Members may choose topics and get only the posts that match them."),
    ),
    "topics_bodylines_limit": SettingHelp(
        N_("Body lines searched for topics"),
        N_(
            "How many body lines are read for Subject: and Keywords: lines (0: none, -1: the whole body)."
        ),
        N_("lines"),
    ),
    "topics": SettingHelp(
        N_("Topic definitions"),
        N_("The topics members can choose from."),
    ),
    # --- digest
    "digests_enabled": SettingHelp(
        N_("Digests"),
        N_("Members may choose to get the posts collected in a digest instead of one by one."),
    ),
    "digest_send_periodic": SettingHelp(
        N_("Send a digest every day"),
        N_("A digest goes out once a day when posts are waiting, even if it is small."),
    ),
    "digest_size_threshold": SettingHelp(
        N_("Digest size"),
        N_("A digest goes out at once when the posts waiting for it reach this size."),
        KB,
    ),
    "digest_volume_frequency": SettingHelp(
        N_("New volume"),
        N_("How often the digest's volume number goes up (and its issue number starts again)."),
    ),
    # --- message acceptance
    "default_member_action": SettingHelp(
        N_("Posts from members"),
        N_(
            "What happens to a member's post that no other rule decided; moderated members are held in any case."
        ),
    ),
    "default_nonmember_action": SettingHelp(
        N_("Posts from nonmembers"),
        N_(
            "What happens to a post from someone who is not a member and not named in the lists below."
        ),
    ),
    "accept_these_nonmembers": SettingHelp(
        N_("Accept posts from"),
        N_(
            "Nonmembers whose posts are accepted: addresses, or regular expressions starting with ^."
        ),
    ),
    "hold_these_nonmembers": SettingHelp(
        N_("Hold posts from"),
        N_(
            "Nonmembers whose posts are held for a moderator: addresses, or regular expressions starting with ^."
        ),
    ),
    "reject_these_nonmembers": SettingHelp(
        N_("Refuse posts from"),
        N_(
            "Nonmembers whose posts are refused with a reason: addresses, or regular expressions starting with ^."
        ),
    ),
    "discard_these_nonmembers": SettingHelp(
        N_("Discard posts from"),
        N_(
            "Nonmembers whose posts are dropped without a word: addresses, or regular expressions starting with ^."
        ),
    ),
    "emergency": SettingHelp(
        N_("Emergency moderation"),
        N_("Every post is held for a moderator until this is switched off again."),
    ),
    "administrivia": SettingHelp(
        N_("Hold commands sent to the list"),
        N_(
            "A post that looks like a command (such as unsubscribe) sent to the list's address is held."
        ),
    ),
    "require_explicit_destination": SettingHelp(
        N_("Require the list in To: or Cc:"),
        N_("A post that does not name the list (or an alias below) in To: or Cc: is held."),
    ),
    "acceptable_aliases": SettingHelp(
        N_("Other addresses of the list"),
        N_(
            "Addresses that count as the list in To: or Cc: (addresses, or regular expressions starting with ^)."
        ),
    ),
    "require_authenticated_senders": SettingHelp(
        N_("Hold unauthenticated member posts"),
        N_(
            "A post from a member's address is held unless DKIM, SPF, DMARC or SMTP AUTH vouches for it."
        ),
    ),
    "max_message_size": SettingHelp(
        N_("Largest post"),
        N_("A larger post is held for a moderator (0: no limit)."),
        KB,
    ),
    "max_num_recipients": SettingHelp(
        N_("Most recipients"),
        N_("A post naming this many addresses or more in To: and Cc: is held (0: no limit)."),
        N_("addresses"),
    ),
    "max_days_to_hold": SettingHelp(
        N_("Discard held posts after"),
        N_(
            "A held post nobody decided on is discarded after this many days (0: kept until a moderator decides)."
        ),
        DAYS,
    ),
    # --- archiving
    "archive_policy": SettingHelp(
        N_("Archive"),
        N_("Whether posts are archived, and who may read the archive."),
    ),
    "archive_rendering_mode": SettingHelp(
        N_("Archive format"),
        N_("How archived posts are shown: as plain text or as Markdown."),
    ),
    # --- subscription policy
    "subscription_policy": SettingHelp(
        N_("Joining"),
        N_(
            "What a new member must do to join: confirm their address, wait for a moderator, or both."
        ),
    ),
    "unsubscription_policy": SettingHelp(
        N_("Leaving"),
        N_("What a member must do to leave: confirm their address, wait for a moderator, or both."),
    ),
    # --- usenet
    "gateway_to_news": SettingHelp(
        N_("Send the list's posts to the newsgroup"),
        N_("Every post the members get is posted to the linked newsgroup too."),
    ),
    "gateway_to_mail": SettingHelp(
        N_("Send the newsgroup's articles to the list"),
        N_("New articles of the linked newsgroup are sent to the members."),
    ),
    "linked_newsgroup": SettingHelp(
        N_("Linked newsgroup"),
        N_("The newsgroup's name, such as comp.lang.python, on the site's news server."),
    ),
    "nntp_prefix_subject_too": SettingHelp(
        N_("Add the subject prefix to articles too"),
        N_("Articles posted to the newsgroup carry the subject prefix as well."),
    ),
    "newsgroup_moderation": SettingHelp(
        N_("Moderation of the newsgroup"),
        N_("Whether the newsgroup is moderated, so that posts going there carry Approved:."),
    ),
    # --- bounce processing
    "process_bounces": SettingHelp(
        N_("Process bounces"),
        N_(
            "Bounces count against the member's address, and an address that bounces too often stops getting posts."
        ),
    ),
    "bounce_score_threshold": SettingHelp(
        N_("Bounce score threshold"),
        N_(
            "Delivery to a member stops when their bounce score (one point for each day with a bounce) reaches this."
        ),
    ),
    "bounce_info_stale_after": SettingHelp(
        N_("Forget bounces after"),
        N_(
            "A member's bounce score starts again from zero when no bounce came for this many days."
        ),
        DAYS,
    ),
    "bounce_you_are_disabled_warnings": SettingHelp(
        N_("Warnings before removal"),
        N_(
            "How many warnings a member whose delivery stopped gets before they are removed (0: removed at once)."
        ),
        N_("warnings"),
    ),
    "bounce_you_are_disabled_warnings_interval": SettingHelp(
        N_("Days between warnings"),
        N_("How long to wait between two of these warnings."),
        DAYS,
    ),
    "bounce_notify_owner_on_bounce_increment": SettingHelp(
        N_("Tell the owners about each bounce"),
        N_("The owners get a notice every time a member's bounce score goes up."),
    ),
    "bounce_notify_owner_on_disable": SettingHelp(
        N_("Tell the owners when delivery stops"),
        N_("The owners get a notice when a member's delivery is stopped because of bounces."),
    ),
    "bounce_notify_owner_on_removal": SettingHelp(
        N_("Tell the owners about removals"),
        N_("The owners get a notice when a member is removed because of bounces."),
    ),
    "forward_unrecognized_bounces_to": SettingHelp(
        N_("Bounces nobody recognizes"),
        N_("Where a bounce goes when no member's address can be found in it."),
    ),
}

#: the words for the values of a choice, keyed by the enum's name and the value
CHOICE_LABELS: dict[tuple[str, str], str] = {
    ("RosterVisibility", "public"): N_("anyone"),
    ("RosterVisibility", "members"): N_("members"),
    ("RosterVisibility", "moderators"): N_("moderators and owners"),
    ("ResponseAction", "none"): N_("no automatic reply"),
    ("ResponseAction", "respond_and_discard"): N_("reply, and drop the mail"),
    ("ResponseAction", "respond_and_continue"): N_("reply, and handle the mail as usual"),
    ("FilterAction", "discard"): N_("discard the post"),
    ("FilterAction", "reject"): N_("refuse the post"),
    ("FilterAction", "forward"): N_("forward it to the owners"),
    ("FilterAction", "preserve"): N_("keep it for the site administrator"),
    ("ReplyToMunging", "no_munging"): N_("to the poster (Reply-To: untouched)"),
    ("ReplyToMunging", "point_to_list"): N_("to the list"),
    ("ReplyToMunging", "explicit_header"): N_("to the Reply-To address below"),
    ("ReplyToMunging", "explicit_header_only"): N_("only to the Reply-To address below"),
    ("Personalization", "none"): N_("no: one copy for all"),
    ("Personalization", "individual"): N_("a copy for each member"),
    ("Personalization", "full"): N_("a copy for each member, addressed to them"),
    ("DMARCMitigateAction", "no_mitigation"): N_("none"),
    ("DMARCMitigateAction", "munge_from"): N_("From: the list, on behalf of the poster"),
    ("DMARCMitigateAction", "wrap_message"): N_("wrap the post in a message from the list"),
    ("DMARCMitigateAction", "reject"): N_("refuse the post"),
    ("DMARCMitigateAction", "discard"): N_("discard the post"),
    ("DigestFrequency", "yearly"): N_("every year"),
    ("DigestFrequency", "monthly"): N_("every month"),
    ("DigestFrequency", "quarterly"): N_("every quarter"),
    ("DigestFrequency", "weekly"): N_("every week"),
    ("DigestFrequency", "daily"): N_("every day"),
    ("Action", "hold"): N_("hold for a moderator"),
    ("Action", "reject"): N_("refuse with a reason"),
    ("Action", "discard"): N_("discard without a word"),
    ("Action", "accept"): N_("accept"),
    ("Action", "defer"): N_("accept unless another rule says otherwise"),
    ("ArchivePolicy", "never"): N_("no archive"),
    ("ArchivePolicy", "private"): N_("archive for members"),
    ("ArchivePolicy", "public"): N_("public archive"),
    ("ArchiveRenderingMode", "text"): N_("plain text"),
    ("ArchiveRenderingMode", "markdown"): N_("Markdown"),
    ("SubscriptionPolicy", "open"): N_("nothing: done at once"),
    ("SubscriptionPolicy", "confirm"): N_("confirm by mail"),
    ("SubscriptionPolicy", "moderate"): N_("a moderator approves"),
    ("SubscriptionPolicy", "confirm_then_moderate"): N_(
        "confirm by mail, then a moderator approves"
    ),
    ("NewsgroupModeration", "none"): N_("not moderated"),
    ("NewsgroupModeration", "open_moderated"): N_("moderated, the list open"),
    ("NewsgroupModeration", "moderated"): N_("moderated, the list moderated too"),
    ("UnrecognizedBounceDisposition", "discard"): N_("discard it"),
    ("UnrecognizedBounceDisposition", "administrators"): N_("the list's owners"),
    ("UnrecognizedBounceDisposition", "site_owner"): N_("the site owner"),
    ("DeliveryMode", "regular"): N_("each post"),
    ("DeliveryMode", "plaintext_digests"): N_("digest, plain text"),
    ("DeliveryMode", "mime_digests"): N_("digest, MIME"),
    ("DeliveryMode", "summary_digests"): N_("digest, summary"),
}


def choice_label(enum_name: str, value: str) -> str:
    """The words for ``value`` (untranslated: the page translates them); the value itself
    when it has none."""
    return CHOICE_LABELS.get((enum_name, value), value)
