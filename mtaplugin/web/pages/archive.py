"""The list archive's pages: overview, month, thread, post, search, attachments, mbox
downloads and the Atom feed of recent threads.

Who sees an archive (``archive_policy``): ``public``, anyone; ``private``, the list's
members, moderators and owners, domain and site admins; ``never``, nobody.  An archive
the visitor may not see answers 404, as the web UI answers for a list a role does not
grant.  Anonymous visitors see authors' names and obscured addresses (``anne@…``), also in
the text; the mbox downloads (whole messages) ask them to log in first.  A removed post
answers 410 Gone.  Posts are shown as text only (HTML in them is escaped, never rendered).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

import falcon
from markupsafe import Markup
from sqlalchemy import select

from mtaplugin.archive import attachments, browse, feed, mboxrd, rendering, search
from mtaplugin.enums import ArchivePolicy, ArchiveRenderingMode
from mtaplugin.i18n import _
from mtaplugin.model import ArchivedMessage, ArchiveThread, MailingList
from mtaplugin.web import links
from mtaplugin.web.common import (
    require_login,
    session_of,
    settings_of,
    viewer_of,
    workflow_of,
)
from mtaplugin.web.render import render, render_form

PER_PAGE = 20
CSP_DOWNLOAD = "default-src 'none'; sandbox"


def _not_found(req: falcon.Request) -> falcon.HTTPNotFound:
    return falcon.HTTPNotFound(
        title=_("No such archive"),
        description=_("There is no archive here, or you may not see it."),
    )


def may_read(viewer: Any, mlist: MailingList) -> bool:
    """Whether ``viewer`` may read ``mlist``'s archive (its ``archive_policy``)."""
    if mlist.archive_policy == ArchivePolicy.public:
        return True
    if mlist.archive_policy == ArchivePolicy.private:
        return bool(viewer.can_moderate(mlist) or mlist.id in viewer.member_of)
    return False


def find_archive(req: falcon.Request, list_id: str) -> MailingList:
    """The list whose archive the visitor may read; 404 otherwise."""
    mlist = session_of(req).scalar(
        select(MailingList).where(MailingList.list_id == list_id.strip().lower())
    )
    if mlist is None or not may_read(viewer_of(req), mlist):
        raise _not_found(req)
    return mlist


def _shows_addresses(req: falcon.Request) -> bool:
    return viewer_of(req).logged_in


def _message(req: falcon.Request, mlist: MailingList, digest: str) -> ArchivedMessage:
    """The post ``digest`` (its Message-ID hash) of the list; 404 if none, 410 if removed."""
    found = session_of(req).scalar(
        select(ArchivedMessage).where(
            ArchivedMessage.mailing_list_id == mlist.id,
            ArchivedMessage.message_id_hash == digest.strip().upper(),
        )
    )
    if found is None:
        raise falcon.HTTPNotFound(
            title=_("No such message"),
            description=_("This archive holds no message by that name."),
        )
    if found.removed:
        raise falcon.HTTPGone(
            title=_("Message removed"),
            description=_("This message was removed from the archive."),
        )
    return found


#: the post ``digest`` of a list's archive (404 if none, 410 if removed), for the pages
#: that write to the list (mtaplugin.web.pages.archive_write)
message_of = _message


def _thread(req: falcon.Request, mlist: MailingList, thread_id: int) -> ArchiveThread:
    thread = session_of(req).get(ArchiveThread, thread_id)
    if thread is None or thread.mailing_list_id != mlist.id:
        raise falcon.HTTPNotFound(
            title=_("No such thread"),
            description=_("This archive holds no thread by that number."),
        )
    return thread


def _base_url(req: falcon.Request, mlist: MailingList) -> str:
    """The feed's links: the configured address (:mod:`mtaplugin.web.links`), else the
    request's own (the feed goes to whoever asked, never by mail)."""
    return links.list_base(session_of(req), settings_of(req), mlist) or req.prefix


class _Shown:
    """A post as a page shows it: author (obscured for anonymous visitors), text blocks."""

    def __init__(
        self,
        message: ArchivedMessage,
        show_address: bool,
        depth: int = 0,
        markdown: bool = False,
    ) -> None:
        self.message = message
        self.depth = depth
        self.removed = message.removed
        self.author = browse.author(message, show_address)
        text = message.text if show_address else browse.obscure_text(message.text)
        self.blocks = [] if message.removed else browse.blocks(text)
        #: the unquoted blocks as sanitised HTML, by position (``markdown`` rendering)
        self.html: dict[int, Markup] = {}
        if markdown:
            for n, block in enumerate(self.blocks):
                html = None if block.quoted else rendering.markdown_html(block.text)
                if html is not None:
                    self.html[n] = Markup(html)
        self.attachments = [] if message.removed else attachments.listed(message)
        self.when = message.date or message.archived_at


def _markdown(mlist: MailingList) -> bool:
    return mlist.archive_rendering_mode is ArchiveRenderingMode.markdown


def _when(message: ArchivedMessage) -> datetime:
    return message.date or message.archived_at


def _poster(p: browse.Poster, show_address: bool) -> str:
    if show_address:
        return f"{p.name} <{p.sender}>" if p.name else p.sender
    return browse.obscure_text(p.name) if p.name else browse.obscure(p.sender)


class Overview:
    def on_get(self, req: falcon.Request, resp: falcon.Response, list_id: str) -> None:
        mlist = find_archive(req, list_id)
        s = session_of(req)
        now = workflow_of(req).now()
        show = _shows_addresses(req)
        render(
            req,
            resp,
            "archive_overview.html",
            mlist=mlist,
            recent=browse.recent_threads(s, mlist),
            active=browse.active_threads(s, mlist, now),
            posters=[(_poster(p, show), p.posts) for p in browse.top_posters(s, mlist, now)],
            months=browse.months(s, mlist),
        )


class MonthPage:
    def on_get(
        self, req: falcon.Request, resp: falcon.Response, list_id: str, year: int, month: int
    ) -> None:
        mlist = find_archive(req, list_id)
        try:
            browse.month_range(year, month)
        except ValueError:
            raise _not_found(req) from None
        render(
            req,
            resp,
            "archive_month.html",
            mlist=mlist,
            year=year,
            month=month,
            threads=browse.month_threads(session_of(req), mlist, year, month),
        )


class ThreadPage:
    def on_get(
        self, req: falcon.Request, resp: falcon.Response, list_id: str, thread_id: int
    ) -> None:
        mlist = find_archive(req, list_id)
        thread = _thread(req, mlist, thread_id)
        show = _shows_addresses(req)
        messages = browse.thread_messages(session_of(req), thread)
        if all(m.removed for m in messages):
            raise falcon.HTTPGone(
                title=_("Thread removed"),
                description=_("The messages of this thread were removed."),
            )
        nodes = browse.tree(messages)
        render(
            req,
            resp,
            "archive_thread.html",
            mlist=mlist,
            thread=thread,
            posts=[_Shown(n.message, show, n.depth, _markdown(mlist)) for n in nodes],
        )


class MessagePage:
    def on_get(self, req: falcon.Request, resp: falcon.Response, list_id: str, digest: str) -> None:
        mlist = find_archive(req, list_id)
        message = _message(req, mlist, digest)
        parent = (
            session_of(req).get(ArchivedMessage, message.parent_id) if message.parent_id else None
        )
        render(
            req,
            resp,
            "archive_message.html",
            mlist=mlist,
            post=_Shown(message, _shows_addresses(req), markdown=_markdown(mlist)),
            parent=parent if parent is not None and not parent.removed else None,
        )


class AttachmentDownload:
    def on_get(
        self, req: falcon.Request, resp: falcon.Response, list_id: str, digest: str, number: int
    ) -> None:
        mlist = find_archive(req, list_id)
        message = _message(req, mlist, digest)
        found = attachments.download(message, number)
        if found is None:
            raise falcon.HTTPNotFound(
                title=_("No such attachment"),
                description=_("This message has no attachment by that number."),
            )
        resp.content_type = found.content_type
        resp.data = found.data
        resp.set_header("Content-Disposition", attachments.content_disposition(found.name))
        resp.set_header("X-Content-Type-Options", "nosniff")
        resp.set_header("Content-Security-Policy", CSP_DOWNLOAD)


def _parse_day(value: str) -> datetime | None:
    value = value.strip()
    if not value:
        return None
    return datetime.strptime(value, "%Y-%m-%d").replace(tzinfo=UTC)


class SearchPage:
    def on_get(self, req: falcon.Request, resp: falcon.Response, list_id: str) -> None:
        mlist = find_archive(req, list_id)
        words = req.get_param("q", default="") or ""
        author = req.get_param("author", default="") or ""
        order = req.get_param("order", default="relevance") or "relevance"
        since_text = req.get_param("since", default="") or ""
        until_text = req.get_param("until", default="") or ""
        page = req.get_param_as_int("page", min_value=1, max_value=10_000, default=1) or 1
        form = {"q": words, "author": author, "order": order, "since": since_text,
                "until": until_text}  # fmt: skip
        error = ""
        since = until = None
        for name, value in (("since", since_text), ("until", until_text)):
            try:
                day = _parse_day(value)
            except ValueError:
                error = _("{field}: a date is written YYYY-MM-DD.").format(
                    field=_("From date") if name == "since" else _("Until date")
                )
                continue
            if name == "since":
                since = day
            else:
                until = day + timedelta(days=1) if day is not None else None
        results = None
        if not error and (words.strip() or author.strip()):
            results = search.search(
                session_of(req),
                search.Query(
                    words=words[:500],
                    list_ids=[mlist.id],
                    author=author[:320],
                    author_by_name_only=not _shows_addresses(req),
                    addresses_hidden=not _shows_addresses(req),
                    since=since,
                    until=until,
                    order=search.Order.date if order == "date" else search.Order.relevance,
                    page=page,
                    per_page=PER_PAGE,
                ),
            )
        show = _shows_addresses(req)
        hits = []
        for hit in results.hits if results is not None else []:
            shown = _Shown(hit.message, show)
            text = hit.message.text if show else browse.obscure_text(hit.message.text)
            # the excerpt from the post's own words, not from what it quotes
            text = "\n".join(b.text for b in browse.blocks(text) if not b.quoted) or text
            hits.append((shown, search.excerpt(text, results.terms if results else [])))

        def page_url(n: int) -> str:
            return f"/archive/{mlist.list_id}/search?" + urlencode({**form, "page": n})

        render_form(
            req,
            resp,
            "archive_search.html",
            mlist=mlist,
            form=form,
            results=results,
            hits=hits,
            page_url=page_url,
            error=error,
        )


def _mbox_writer() -> Callable[[Iterable[ArchivedMessage]], Iterator[bytes]]:
    """The archive store's mboxrd writer (``mtaplugin.archive.mbox.export``) where it is
    installed, else the minimal one of :mod:`mtaplugin.archive.mboxrd` (the same format)."""
    try:
        module = importlib.import_module("mtaplugin.archive.mbox")
    except ImportError:
        return mboxrd.write
    writer = getattr(module, "export", None)
    return writer if callable(writer) else mboxrd.write


def _send_mbox(resp: falcon.Response, name: str, messages: list[ArchivedMessage]) -> None:
    resp.content_type = "application/mbox"
    resp.data = b"".join(_mbox_writer()(messages))
    resp.set_header("Content-Disposition", attachments.content_disposition(name))
    resp.set_header("X-Content-Type-Options", "nosniff")
    resp.set_header("Content-Security-Policy", CSP_DOWNLOAD)


class MonthMbox:
    def on_get(
        self, req: falcon.Request, resp: falcon.Response, list_id: str, year: int, month: int
    ) -> None:
        require_login(req)
        mlist = find_archive(req, list_id)
        try:
            browse.month_range(year, month)
        except ValueError:
            raise _not_found(req) from None
        messages = browse.month_messages(session_of(req), mlist, year, month)
        _send_mbox(resp, f"{mlist.list_id}-{year:04d}-{month:02d}.mbox", messages)


class ThreadMbox:
    def on_get(
        self, req: falcon.Request, resp: falcon.Response, list_id: str, thread_id: int
    ) -> None:
        require_login(req)
        mlist = find_archive(req, list_id)
        thread = _thread(req, mlist, thread_id)
        messages = browse.thread_messages(session_of(req), thread)
        _send_mbox(resp, f"{mlist.list_id}-thread-{thread.id}.mbox", messages)


class Feed:
    def on_get(self, req: falcon.Request, resp: falcon.Response, list_id: str) -> None:
        mlist = find_archive(req, list_id)
        s = session_of(req)
        base = f"{_base_url(req, mlist)}/archive/{mlist.list_id}"
        entries = []
        for thread in browse.recent_threads(s, mlist, limit=20):
            first = next((m for m in browse.thread_messages(s, thread) if not m.removed), None)
            if first is None:
                continue
            entries.append(
                feed.Entry(
                    title=thread.subject or _("(no subject)"),
                    url=f"{base}/thread/{thread.id}/",
                    updated=thread.last_post_at,
                    author=browse.author(first, False),
                    summary=search.excerpt(browse.obscure_text(first.text), [], width=400),
                )
            )
        resp.content_type = "application/atom+xml; charset=utf-8"
        resp.data = feed.atom(
            title=_("Archive of {list}").format(list=mlist.display_name or mlist.list_id),
            feed_url=f"{base}/feed.atom",
            page_url=f"{base}/",
            updated=datetime(1970, 1, 1, tzinfo=UTC),
            entries=entries,
        )
