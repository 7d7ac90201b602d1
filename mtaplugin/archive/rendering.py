"""How the archive shows a post's text: ``archive_rendering_mode`` (Mailman 3's setting,
which HyperKitty reads).

- ``text`` (the default): the text as written, in a monospaced block, quotes folded.
- ``markdown``: the parts that are not quoted are read as CommonMark (markdown-it-py, raw
  HTML in the post is shown as text, never passed through) and the result goes through the
  same allow-list sanitiser as a held post's HTML (nh3: no scripts, styles, event
  handlers, forms or images; links only to http, https and mailto, with
  ``rel="noopener noreferrer nofollow"``).  Quoted runs stay folded plain text.
"""

from __future__ import annotations

from functools import cache

from markdown_it import MarkdownIt

from mtaplugin.archive.safe_post import sanitize_html

#: the most text one block is rendered from (the rest is shown as text)
MAX_MARKDOWN = 100_000


@cache
def _parser() -> MarkdownIt:
    # "commonmark" with raw HTML off: "<script>" in a post is text, not markup
    return MarkdownIt("commonmark", {"html": False}).enable("strikethrough").enable("table")


def markdown_html(text: str) -> str | None:
    """``text`` as sanitised HTML; None when it is too long to render (shown as text)."""
    if len(text) > MAX_MARKDOWN:
        return None
    return sanitize_html(_parser().render(text))
