"""HTML parts as plain text, with the standard library's :mod:`html.parser` (no new
dependency): the text of the page, paragraphs and line breaks kept, scripts and styles
dropped, links followed by their address."""

from __future__ import annotations

import re
from html.parser import HTMLParser

#: elements whose content is never text
_SKIPPED = frozenset({"script", "style", "head", "title", "template", "noscript"})
#: elements that start a new line
_BLOCKS = frozenset(
    {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre",
     "table", "ul", "ol", "hr", "section", "article"}
)  # fmt: skip


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skipping = 0
        self.pre = 0
        self.href: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIPPED:
            self.skipping += 1
        elif tag in _BLOCKS:
            self.parts.append("\n")
        if tag == "pre":
            self.pre += 1
        if tag == "a":
            self.href.append(dict(attrs).get("href") or "")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIPPED:
            self.skipping = max(0, self.skipping - 1)
        elif tag in _BLOCKS:
            self.parts.append("\n")
        if tag == "pre":
            self.pre = max(0, self.pre - 1)
        if tag == "a" and self.href:
            href = self.href.pop()
            if href.startswith(("http://", "https://", "mailto:")):
                self.parts.append(f" <{href}>")

    def handle_data(self, data: str) -> None:
        if self.skipping:
            return
        self.parts.append(data if self.pre else re.sub(r"\s+", " ", data))


def html_to_text(html: str) -> str:
    parser = _Text()
    try:
        parser.feed(html)
        parser.close()
    except Exception:  # html.parser is lenient; anything it still refuses: the raw text
        return re.sub(r"<[^>]*>", " ", html)
    # white space outside <pre> is one space already: a line loses the one it starts with
    lines = [_unindent(line.rstrip()) for line in "".join(parser.parts).splitlines()]
    text = "\n".join(lines)
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"


def _unindent(line: str) -> str:
    return line[1:] if line.startswith(" ") and not line.startswith("  ") else line
