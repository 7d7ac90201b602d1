"""header-match (site header checks, then the list's header matches) and
suspicious-header (Mailman's ``bounce_matching_headers``).

Patterns are regular expressions searched case-insensitively in every value of the named
header (top-level headers of the post), in linear time (:mod:`mtaplugin.regexes`).  A
site check, or a list match without an action of its own, does the site's
``header_match_action`` (hold).
"""

from __future__ import annotations

from functools import partial

from mtaplugin.enums import Action
from mtaplugin.i18n import _
from mtaplugin.posting.rules.base import Check, Hit, PostContext, SitePolicy
from mtaplugin.posting.snapshot import ListSnapshot
from mtaplugin.regexes import Pattern, usable

HEADER_MATCH = "header-match"
SUSPICIOUS_HEADER = "suspicious-header"


def _search(ctx: PostContext, header: str, pattern: Pattern) -> str | None:
    for value in ctx.post.get_all(header):
        flat = " ".join(value.split())
        if pattern.search(flat):
            return flat
    return None


def prepare_header_match(snapshot: ListSnapshot, site: SitePolicy) -> Check | None:
    """Off when neither the site has header checks nor the list header matches."""
    return header_match if site.header_checks or snapshot.header_matches else None


def header_match(ctx: PostContext) -> Hit | None:
    """the site's ``rules.header_checks``, then the list's header matches, match a header
    (regex, case-insensitive); without an action of its own, ``rules.header_match_action``."""
    for header, pattern in ctx.site.header_checks:
        if _search(ctx, header, pattern) is not None:
            return Hit(
                HEADER_MATCH,
                ctx.site.header_match_action,
                _("the {header}: header matches the site's check {pattern!r}").format(
                    header=header, pattern=pattern.pattern
                ),
            )
    rules = ctx.snapshot.header_matches if ctx.snapshot is not None else ()
    for rule in rules:
        if _search(ctx, rule.header, rule.pattern) is not None:
            action = rule.action if rule.action is not None else ctx.site.header_match_action
            return Hit(
                HEADER_MATCH,
                action,
                _("the post matches the list's header rule {rule}").format(rule=rule.text),
            )
    return None


def parse_header_lines(text: str) -> list[tuple[str, Pattern]]:
    """``Header: regex`` lines (Mailman's bounce_matching_headers and header_checks);
    blank lines and lines starting with # are skipped."""
    out: list[tuple[str, Pattern]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or ":" not in line:
            continue
        header, _c, regex = line.partition(":")
        compiled = usable(regex.strip(), "bounce_matching_headers")
        if header.strip() and compiled is not None:
            out.append((header.strip(), compiled))
    return out


def suspicious_header(ctx: PostContext) -> Hit | None:
    """a line of the list's ``bounce_matching_headers`` (``Header: regex``) matches."""
    if not ctx.mlist.bounce_matching_headers.strip():
        return None
    return _suspicious(parse_header_lines(ctx.mlist.bounce_matching_headers), ctx)


def prepare_suspicious_header(snapshot: ListSnapshot, site: SitePolicy) -> Check | None:
    """Off when the list's ``bounce_matching_headers`` has no line; its lines parsed and
    compiled once."""
    text = snapshot.mlist.bounce_matching_headers
    return partial(_suspicious, parse_header_lines(text)) if text.strip() else None


def _suspicious(lines: list[tuple[str, Pattern]], ctx: PostContext) -> Hit | None:
    for header, pattern in lines:
        value = _search(ctx, header, pattern)
        if value is not None:
            return Hit(
                SUSPICIOUS_HEADER,
                Action.defer,
                _("the {header}: header looks suspicious ({pattern!r})").format(
                    header=header, pattern=pattern.pattern
                ),
            )
    return None
