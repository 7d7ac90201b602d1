"""The list's header fields: subject prefix, Reply-To policy, Precedence, List-*.

- :func:`subject_prefix` -- ``subject_prefix`` (``%d``: the post's number) in front of the
  decoded subject, after removing the prefix the subject already has (every repetition,
  wherever it stands) and collapsing ``Re:``/``AW:``/``SV:``/``VS:`` into one ``Re:``
  after the prefix: ``Re: [team] Re: [team] hi`` becomes ``[team] Re: hi``.  RFC 2047
  aware: the result is ASCII when it can be, UTF-8 encoded words otherwise.
- :func:`reply_to` -- ``reply_goes_to_list``: ``no_munging`` leaves Reply-To alone;
  ``point_to_list`` adds the list; ``explicit_header`` adds ``reply_to_address``;
  ``explicit_header_only`` makes ``reply_to_address`` the only one.  With
  ``first_strip_reply_to`` the poster's own Reply-To goes first.
- :func:`precedence` -- ``Precedence: list`` unless the post already says.
- :func:`list_headers` -- RFC 2919 ``List-Id`` (always) and, with
  ``include_rfc2369_headers``, RFC 2369 ``List-Help``/``-Subscribe``/``-Unsubscribe``/
  ``-Post`` (``NO`` when ``allow_list_posts`` is off)/``-Owner``.  Any List-* field the
  poster wrote is removed or replaced.  ``List-Archive`` and ``Archived-At`` are the next
  step's (:mod:`mtaplugin.copies.transforms.archived_at`), for lists that archive.  The
  unsubscribe field of the shared copy names the list's page and the mailto address; a
  member's own copy has the one-click link (:mod:`mtaplugin.copies.transforms.personalize`).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from email.utils import formataddr, getaddresses

from mtaplugin.copies import unsubscribe
from mtaplugin.copies.transforms.encoding import decode_text, encode_text
from mtaplugin.copies.transforms.personalize import member_fields
from mtaplugin.enums import Personalization, ReplyToMunging
from mtaplugin.list_addresses import ListAddresses
from mtaplugin.posting.transform_context import TransformContext
from mtaplugin.regexes import Pattern, usable
from mtaplugin.vocabulary.draft import Draft
from mtaplugin.vocabulary.topics import X_TOPICS

#: reply markers of the mail clients people use (English, German, Scandinavian, Finnish)
_REPLY = re.compile(r"^\s*(re|aw|sv|vs)\s*(\[\d+\]|\(\d+\))?\s*:\s*", re.IGNORECASE)
_LIST_FIELD = re.compile(r"^list-")


@functools.lru_cache(maxsize=1024)
def _prefix_pattern(prefix: str) -> Pattern | None:
    """Matches the list's prefix in a subject: any post number in place of ``%d``, and
    any amount of white space where the prefix has some.  In linear time: a prefix such
    as ``[%d%d%d%d%d%d%d%d]`` would make Python's ``re`` backtrack for minutes on a subject
    of digits (None: a prefix too long to match, the subject is left as it is)."""
    parts = [re.escape(p) for p in prefix.split("%d")]
    pattern = r"\s*\d+\s*".join(parts)
    pattern = re.sub(r"(\\ )+", r"\\s*", pattern)
    return usable(pattern, "the subject prefix")


@functools.lru_cache(maxsize=1024)
def _prefix_words(prefix: str) -> tuple[str, ...] | None:
    """The words (lower-cased) every match of ``prefix``'s pattern holds, in an ASCII
    subject; None when the prefix has none, or one that is not ASCII (RE2 folds case
    beyond ``str.lower``: ``ſ`` matches ``s``).  A subject without one of them cannot
    hold the prefix: it is not handed to RE2 at all (each call costs microseconds)."""
    words = tuple(w for part in prefix.split("%d") for w in part.split(" ") if w)
    if not words or not all(w.isascii() for w in words):
        return None
    return tuple(w.lower() for w in words)


def _may_hold(prefix: str, subject: str) -> bool:
    """Whether ``subject`` may hold ``prefix`` (False: its pattern matches nowhere)."""
    words = _prefix_words(prefix)
    if words is None or not subject.isascii():
        return True
    lowered = subject.lower()
    return all(w in lowered for w in words)


def prefixed_subject(prefix: str, subject: str, number: int) -> str:
    """The subject the members see (text, not yet encoded)."""
    prefix = prefix.strip()
    subject = " ".join(subject.split())
    if not prefix:
        return subject
    pattern = _prefix_pattern(prefix)
    if pattern is None:
        return f"{prefix.replace('%d', str(number))} {subject or '(no subject)'}"
    if not _may_hold(prefix, subject):
        pattern = None  # (nor does any part of it: the loop below only takes words off)
    reply = False
    while True:
        before = subject
        if pattern is not None and pattern.match(subject):
            subject = pattern.sub("", subject, count=1)
        m = _REPLY.match(subject)
        if m:
            reply = True
            subject = subject[m.end() :]
        subject = subject.strip()
        if subject == before:
            break
    # A prefix further in (``Fwd: [team] x``) goes too: the list shows it once, in front.
    if pattern is not None:
        subject = pattern.sub(" ", subject)
    subject = " ".join(subject.split())
    shown = prefix.replace("%d", str(number))
    text = subject or "(no subject)"
    return f"{shown} {'Re: ' if reply else ''}{text}"


def subject_prefix(ctx: TransformContext, draft: Draft) -> None:
    shared = ctx.shared
    prefix = ctx.mlist.subject_prefix if shared is None else shared.subject_prefix
    if not prefix.strip():
        return
    current = decode_text(draft.get("Subject"))
    new = prefixed_subject(prefix, current, ctx.post_number)
    if new != " ".join(current.split()) or not draft.has("Subject"):
        draft.set("Subject", encode_text(new, "Subject"))


def reply_to(ctx: TransformContext, draft: Draft) -> None:
    mlist = ctx.mlist
    policy = mlist.reply_goes_to_list
    if policy is ReplyToMunging.explicit_header_only:
        if mlist.reply_to_address:
            draft.set("Reply-To", mlist.reply_to_address)
        return
    added = ""
    if policy is ReplyToMunging.point_to_list:
        added = formataddr((mlist.display_name, mlist.posting_address))
    elif policy is ReplyToMunging.explicit_header:
        added = mlist.reply_to_address
    if mlist.first_strip_reply_to:
        # The poster's Reply-To goes; the list's takes its place (where it was).
        if added:
            draft.set("Reply-To", added)
        else:
            draft.remove("Reply-To")
    elif added:
        add_address(draft, "Reply-To", added)


def add_address(draft: Draft, name: str, address: str) -> None:
    """Add ``address`` to the addresses of header ``name`` unless it is there already."""
    current = draft.get_all(name)
    emails = {a.lower() for _n, a in getaddresses(current) if a}
    new_email = getaddresses([address])[0][1].lower()
    if new_email in emails:
        return
    values = [v.strip() for v in current if v.strip()]
    draft.set(name, ", ".join([*values, address]) if values else address)


def topics(ctx: TransformContext, draft: Draft) -> None:
    """``X-Topics:`` naming the list's topics the post matched (Mailman 2.1); a poster's
    own ``X-Topics:`` never reaches the members of a list with topics."""
    if not ctx.mlist.topics_enabled:
        return
    draft.remove(X_TOPICS)
    if ctx.topics:
        draft.append(X_TOPICS, encode_text(", ".join(ctx.topics), X_TOPICS))


def full_personalization(ctx: TransformContext, draft: Draft) -> None:
    """``personalize = full`` (Mailman's): a member's own copy is addressed To: that
    member, and the list moves to Cc: (so that "reply all" still reaches it)."""
    if ctx.mlist.personalize is not Personalization.full or not ctx.member:
        return
    draft.set("To", formataddr((ctx.member_name, ctx.member), charset="utf-8"))
    add_address(draft, "Cc", ctx.mlist.posting_address)


def precedence(ctx: TransformContext, draft: Draft) -> None:
    if not draft.has("Precedence"):
        draft.append("Precedence", "list")


def list_id_value(ctx: TransformContext) -> str:
    mlist = ctx.mlist
    name = " ".join((mlist.description or mlist.display_name).split())
    if not name:
        return f"<{mlist.list_id}>"
    if name.isascii():
        quoted = name.replace("\\", "\\\\").replace('"', '\\"')
        return f'"{quoted}" <{mlist.list_id}>'
    return encode_text(name, "List-Id") + f" <{mlist.list_id}>"


def shared_unsubscribe(ctx: TransformContext) -> str:
    """List-Unsubscribe of the copy all members share: the page and the mailto link."""
    mlist = ctx.mlist
    links = []
    page = unsubscribe.list_page_url(ctx.listinfo_url)
    if page:
        links.append(f"<{page}>")
    links.append(f"<mailto:{mlist.leave_address}>")
    return ", ".join(links)


def list_headers(ctx: TransformContext, draft: Draft) -> None:
    draft.remove_matching(_LIST_FIELD)
    if ctx.member:
        draft.fields.extend(list_fields(ctx))
        return
    if ctx.prepared is not None:  # made once for the list version
        draft.fields.extend(ctx.prepared.list_fields)
        return
    # The copy all members share: its fields depend on the list's name and settings
    # alone, so they are made once for each combination of them.
    mlist = ctx.mlist
    facts = _ListFacts(
        mlist.list_name,
        mlist.mail_host,
        mlist.list_id,
        mlist.description,
        mlist.display_name,
        mlist.include_rfc2369_headers,
        mlist.allow_list_posts,
    )
    draft.fields.extend(_shared_list_fields(facts, ctx.listinfo_url))


@dataclass(frozen=True)
class _ListFacts(ListAddresses):
    """What :func:`list_fields` reads of a list, with its addresses as a MailingList
    makes them."""

    list_name: str
    mail_host: str
    list_id: str
    description: str
    display_name: str
    include_rfc2369_headers: bool
    allow_list_posts: bool


@functools.lru_cache(maxsize=1024)
def _shared_list_fields(facts: _ListFacts, listinfo_url: str) -> tuple[tuple[str, str], ...]:
    ctx = TransformContext(facts, listinfo_url=listinfo_url)  # type: ignore[arg-type]
    return tuple(list_fields(ctx))


def list_fields(ctx: TransformContext) -> list[tuple[str, str]]:
    """List-Id and the RFC 2369 fields of ``ctx``'s copy, in order."""
    mlist = ctx.mlist
    out = [("List-Id", list_id_value(ctx))]
    if not mlist.include_rfc2369_headers:
        return out
    page = ctx.listinfo_url
    help_links = [f"<mailto:{mlist.request_address}?subject=help>"]
    subscribe = [f"<mailto:{mlist.join_address}>"]
    if page:
        subscribe.insert(0, f"<{page}>")
    fields = [
        ("List-Help", ", ".join(help_links)),
        ("List-Owner", f"<mailto:{mlist.owner_address}>"),
    ]
    if mlist.allow_list_posts:
        fields.append(("List-Post", f"<mailto:{mlist.posting_address}>"))
    else:
        fields.append(("List-Post", "NO"))
    fields.append(("List-Subscribe", ", ".join(subscribe)))
    own = member_fields(ctx.own_copy_info(), ctx.member, ctx.unsubscribe_secret)
    fields.extend(own or [("List-Unsubscribe", shared_unsubscribe(ctx))])
    out.extend((name, fold_links(name, value)) for name, value in fields)
    return out


def fold_links(name: str, value: str) -> str:
    """A comma-separated list of ``<links>`` folded after its commas when the line would
    pass 78 characters (RFC 5322 §2.1.1)."""
    if len(name) + 2 + len(value) <= 78 or ">, <" not in value:
        return value
    return value.replace(">, <", ">,\r\n <")
