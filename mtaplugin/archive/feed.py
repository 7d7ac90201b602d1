"""The Atom feed (RFC 4287) of a list's recent threads."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from xml.etree import ElementTree as ET

ATOM = "http://www.w3.org/2005/Atom"


@dataclass(frozen=True)
class Entry:
    title: str
    url: str
    updated: datetime
    author: str
    summary: str


def _stamp(when: datetime) -> str:
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _clean(text: str) -> str:
    """Text without the characters XML 1.0 cannot carry."""
    return "".join(
        ch
        for ch in text
        if ch in "\t\n\r"
        or (" " <= ch <= "\ud7ff")
        or ("\ue000" <= ch <= "\ufffd")
        or ch >= "\U00010000"
    )


def atom(
    title: str, feed_url: str, page_url: str, updated: datetime, entries: list[Entry]
) -> bytes:
    feed = ET.Element("feed", xmlns=ATOM)
    ET.SubElement(feed, "id").text = feed_url
    ET.SubElement(feed, "title").text = _clean(title)
    ET.SubElement(feed, "updated").text = _stamp(max([updated, *(e.updated for e in entries)]))
    ET.SubElement(feed, "link", rel="self", href=feed_url, type="application/atom+xml")
    ET.SubElement(feed, "link", rel="alternate", href=page_url, type="text/html")
    ET.SubElement(ET.SubElement(feed, "author"), "name").text = _clean(title)
    for e in entries:
        item = ET.SubElement(feed, "entry")
        ET.SubElement(item, "id").text = e.url
        ET.SubElement(item, "title").text = _clean(e.title)
        ET.SubElement(item, "updated").text = _stamp(e.updated)
        ET.SubElement(item, "link", rel="alternate", href=e.url, type="text/html")
        ET.SubElement(ET.SubElement(item, "author"), "name").text = _clean(e.author) or "-"
        ET.SubElement(item, "summary", type="text").text = _clean(e.summary)
    body: bytes = ET.tostring(feed, encoding="utf-8")
    return b'<?xml version="1.0" encoding="utf-8"?>\n' + body
