"""The archive's web pages through the Falcon app (SQLite and PostgreSQL): who may read
(archive_policy), obscured addresses, threads nested with quotes folded, 410 for removed
posts, safe attachment downloads, search, mbox downloads and the Atom feed."""

from __future__ import annotations

import mailbox
from datetime import timedelta
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin import config
from mtaplugin.clock import ManualClock
from mtaplugin.enums import ArchivePolicy, ArchiveRenderingMode, MemberRole
from mtaplugin.manage import lists, members, users
from mtaplugin.web.app import create_web_app
from tests.unit import archive_rows
from tests.unit.archive_rows import START, Seed
from tests.unit.webclient import PASSWORD, SECRET, Client, Site, make_site

#: the pages' "now": the March thread is recent, the April post a little in the future
NOW = START + timedelta(days=20)

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 32


pytestmark = pytest.mark.usefixtures("cheap_argon2")


@pytest.fixture
def site(module_sessions: sessionmaker[Session], tmp_path: Path) -> Site:
    site = make_site(module_sessions, tmp_path / "var")
    settings = config.load(
        environ={
            "MTAPLUGIN_SITE_SECRET_KEY": SECRET,
            "MTAPLUGIN_SITE_VAR_DIR": str(tmp_path / "var"),
        }
    )
    site.app = create_web_app(settings, site.sessions, ManualClock(NOW))
    with site.sessions.begin() as s:
        members.add(s, lists.get(s, site.address), f"mia@{site.host}", MemberRole.member)
        users.add_user(s, f"mia@{site.host}", PASSWORD)
        users.add_user(s, f"eve@{site.host}", PASSWORD)
    return site


# fmt: off
POSTS = (
    Seed("Milter timeouts", "Our milter is slow.\nWrite to anne@example.com for logs."),
    Seed("Re: Milter timeouts",
         "> Our milter is slow.\n> Write to me.\n\nRaise the timeout. <script>alert(1)</script>",
         "<bob@example.com>", timedelta(hours=1), parent=0),
    Seed("Re: Milter timeouts", "That worked, thanks.\nFrom now on all is well.",
         after=timedelta(hours=2), parent=1),
    Seed("Files", "see attached", "Carol <carol@example.net>", timedelta(days=35), parts=(
        ("evil.html", "text/html", b"<script>alert(1)</script>"),
        ("chart.png", "image/png", PNG),
        ("fake.png", "image/png", b"<svg onload=alert(1)>"),
    )),
    Seed("Re: Milter timeouts", "a secret swordfish", after=timedelta(hours=3), parent=0),
)
# fmt: on


class Archive:
    """A thread with a nested reply, a post with attachments, a removed post."""

    def __init__(self, site: Site) -> None:
        with site.sessions.begin() as s:
            mlist = lists.get(s, site.address)
            first, reply, deeper, files, gone = archive_rows.seed(s, mlist, *POSTS)
            gone.removed = True
            self.list_id = mlist.list_id
            self.thread_id = first.thread_id
            self.first, self.reply, self.deeper = (
                first.message_id_hash,
                reply.message_id_hash,
                deeper.message_id_hash,
            )
            self.files = files.message_id_hash
            self.gone = gone.message_id_hash

    def url(self, tail: str = "") -> str:
        return f"/archive/{self.list_id}/{tail}"


@pytest.fixture
def archive(site: Site) -> Archive:
    site.update(archive_policy=ArchivePolicy.public)
    return Archive(site)


def logged_in(site: Site, email: str) -> Client:
    client = site.client()
    assert client.login(email).status_code == 303
    return client


# --- who reads --------------------------------------------------------------------------


def test_a_public_archive_is_open_to_anyone_with_addresses_obscured(site, archive):
    page = site.client().get(archive.url())
    assert page.status_code == 200
    assert "Milter timeouts" in page.text
    assert "Anne Example" in page.text and "bob@…" in page.text
    thread = site.client().get(archive.url(f"thread/{archive.thread_id}/"))
    assert thread.status_code == 200
    assert "anne@example.com" not in thread.text and "bob@example.com" not in thread.text
    assert "anne@…" in thread.text  # in the text too
    member = logged_in(site, f"mia@{site.host}").get(archive.url(f"thread/{archive.thread_id}/"))
    assert "bob@example.com" in member.text


@pytest.mark.parametrize(
    "who, status",
    [(None, 404), ("eve", 404), ("mia", 200), ("mod", 200), ("owner", 200)],
)
def test_a_private_archive_is_for_members_and_staff_only(site, archive, who, status):
    site.update(archive_policy=ArchivePolicy.private)
    client = logged_in(site, f"{who}@{site.host}") if who else site.client()
    for tail in ("", f"thread/{archive.thread_id}/", f"message/{archive.first}/", "search?q=milter",
                 "feed.atom", "2026/03/", f"message/{archive.files}/attachment/1"):  # fmt: skip
        page = client.get(archive.url(tail))
        assert page.status_code == status, tail
        if status == 404:
            assert "Milter" not in page.text


def test_no_archive_at_all_is_404_even_for_the_owner(site, archive):
    site.update(archive_policy=ArchivePolicy.never)
    owner = logged_in(site, f"owner@{site.host}")
    assert owner.get(archive.url()).status_code == 404
    assert owner.get(archive.url(f"message/{archive.first}/")).status_code == 404
    assert site.client().get("/archive/no-such-list.test/").status_code == 404


# --- threads and posts ------------------------------------------------------------------


def test_the_thread_nests_replies_and_folds_quotes(site, archive):
    page = site.client().get(archive.url(f"thread/{archive.thread_id}"))
    text = page.text
    assert text.index("Our milter is slow.") < text.index("Raise the timeout")
    assert text.index("Raise the timeout") < text.index("That worked")
    assert 'class="post depth-1' in text and 'class="post depth-2' in text
    assert '<details class="quote"><summary>Quoted text (2 lines)</summary>' in text


def test_html_in_a_post_is_shown_as_text(site, archive):
    page = site.client().get(archive.url(f"message/{archive.reply}/"))
    assert page.status_code == 200
    assert "<script>alert(1)</script>" not in page.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text


def test_a_removed_post_is_gone_and_its_thread_says_so(site, archive):
    client = site.client()
    assert client.get(archive.url(f"message/{archive.gone}/")).status_code == 410
    assert client.get(archive.url(f"message/{archive.gone}/attachment/1")).status_code == 410
    assert client.get(archive.url("message/NOSUCHHASH/")).status_code == 404
    page = client.get(archive.url(f"thread/{archive.thread_id}/"))
    assert page.status_code == 200
    assert "swordfish" not in page.text
    assert "This message was removed from the archive." in page.text


def test_a_thread_whose_posts_are_all_removed_is_gone(site, archive):
    with site.sessions.begin() as s:
        mlist = lists.get(s, site.address)
        row = archive_rows.post(s, mlist, "Leaked subject", "oops", date=START)
        row.removed = True
        thread_id = row.thread_id
    client = site.client()
    assert client.get(archive.url(f"thread/{thread_id}/")).status_code == 410
    for tail in ("", "2026/03/", "feed.atom"):
        assert "Leaked subject" not in client.get(archive.url(tail)).text, tail


def test_a_post_of_another_list_is_not_found_here(site, archive):
    with site.sessions.begin() as s:
        other = lists.create(s, f"other@{site.host}")
        other.archive_policy = ArchivePolicy.public
        foreign = archive_rows.post(s, other, "Elsewhere", "other list").message_id_hash
    assert site.client().get(archive.url(f"message/{foreign}/")).status_code == 404


def test_month_pages(site, archive):
    client = site.client()
    march = client.get(archive.url("2026/03/"))
    assert march.status_code == 200 and "Milter timeouts" in march.text
    assert "Files" not in march.text
    assert "Files" in client.get(archive.url("2026/04/")).text
    assert client.get(archive.url("2026/13/")).status_code == 404
    assert "No posts this month." in client.get(archive.url("1999/01/")).text


# --- attachments ------------------------------------------------------------------------


def test_attachments_are_downloads_that_are_never_rendered(site, archive):
    client = site.client()
    page = client.get(archive.url(f"message/{archive.files}/"))
    assert "evil.html" in page.text and "chart.png" in page.text
    html = client.get(archive.url(f"message/{archive.files}/attachment/1"))
    assert html.status_code == 200
    assert html.headers["content-type"] == "application/octet-stream"
    assert html.headers["content-disposition"].startswith('attachment; filename="evil.html"')
    assert html.headers["x-content-type-options"] == "nosniff"
    assert "sandbox" in html.headers["content-security-policy"]
    assert html.content == b"<script>alert(1)</script>"
    png = client.get(archive.url(f"message/{archive.files}/attachment/2"))
    assert png.headers["content-type"] == "image/png" and png.content == PNG
    assert png.headers["content-disposition"].startswith("attachment;")
    assert (
        f'<img src="/archive/{archive.list_id}/message/{archive.files}/attachment/2"' in page.text
    )
    fake = client.get(archive.url(f"message/{archive.files}/attachment/3"))
    assert fake.headers["content-type"] == "application/octet-stream"
    assert client.get(archive.url(f"message/{archive.files}/attachment/4")).status_code == 404
    assert client.get(archive.url(f"message/{archive.files}/attachment/0")).status_code == 404


# --- search -----------------------------------------------------------------------------


def test_search_finds_posts_and_never_removed_ones(site, archive):
    client = site.client()
    page = client.get(archive.url("search?q=raise"))
    assert page.status_code == 200
    assert f"/message/{archive.reply}/" in page.text
    assert "1 posts found." in page.text
    assert "0 posts found." in client.get(archive.url("search?q=swordfish")).text
    # visitors who may not see addresses find authors by name, not by address
    assert "0 posts found." in client.get(archive.url("search?author=carol%40example.net")).text
    by_name = client.get(archive.url("search?author=carol"))
    assert f"/message/{archive.files}/" in by_name.text
    member = logged_in(site, f"mia@{site.host}")
    by_address = member.get(archive.url("search?author=carol%40example.net"))
    assert f"/message/{archive.files}/" in by_address.text
    dated = client.get(archive.url("search?q=milter&since=2026-03-02&until=2026-03-02"))
    assert "3 posts found." in dated.text
    assert "0 posts found." in client.get(archive.url("search?q=milter&since=2026-03-03")).text


def test_anonymous_words_do_not_confirm_a_senders_address(site, archive):
    """L3: a visitor who sees ``anne@…`` cannot confirm the address by searching its
    words; a member, who sees addresses, finds the posts by them as before."""
    anonymous = site.client()
    member = logged_in(site, f"mia@{site.host}")
    page = anonymous.get(archive.url("search?q=carol+example+net"))
    assert page.status_code == 200 and "0 posts found." in page.text
    page = anonymous.get(archive.url("search?q=anne+example+com"))
    # Anne's first post writes the address in its text; her reply does not
    assert f"/message/{archive.deeper}/" not in page.text
    assert "0 posts found." in anonymous.get(archive.url("search?q=%22example+net%22")).text
    assert f"/message/{archive.files}/" in anonymous.get(archive.url("search?q=carol")).text
    assert (
        f"/message/{archive.files}/" in member.get(archive.url("search?q=carol+example+net")).text
    )
    assert (
        f"/message/{archive.deeper}/" in member.get(archive.url("search?q=anne+example+com")).text
    )


def test_search_refuses_a_bad_date_naming_the_field(site, archive):
    page = site.client().get(archive.url("search?q=milter&since=yesterday"))
    assert page.status_code == 400
    assert "From date: a date is written YYYY-MM-DD." in page.text


def test_search_pages(site, archive):
    with site.sessions.begin() as s:
        mlist = lists.get(s, site.address)
        for n in range(45):
            archive_rows.post(s, mlist, f"Weekly {n}", "weekly report", date=START + timedelta(n))
    client = site.client()
    first = client.get(archive.url("search?q=weekly&order=date"))
    assert "45 posts found." in first.text and "Page 1 of 3" in first.text
    assert first.text.index("Weekly 44") < first.text.index("Weekly 43")
    third = client.get(archive.url("search?q=weekly&order=date&page=3"))
    assert "Weekly 0" in third.text and "Weekly 44" not in third.text


# --- mbox and feed ----------------------------------------------------------------------


def test_mbox_downloads_ask_for_login_then_give_mboxrd(site, archive, tmp_path):
    anonymous = site.client().get(archive.url("2026-03.mbox"))
    assert anonymous.status_code == 303 and "/login" in anonymous.headers["location"]
    member = logged_in(site, f"mia@{site.host}")
    month = member.get(archive.url("2026-03.mbox"))
    assert month.status_code == 200
    assert month.headers["content-type"] == "application/mbox"
    assert month.headers["content-disposition"].startswith("attachment;")
    assert b"\n>From now on all is well." in month.content
    path = tmp_path / "march.mbox"
    path.write_bytes(month.content)
    got = [m["Subject"] for m in mailbox.mbox(str(path))]
    assert got == ["Milter timeouts", "Re: Milter timeouts", "Re: Milter timeouts"]
    thread = member.get(archive.url(f"thread/{archive.thread_id}.mbox"))
    assert thread.content.count(b"\nFrom ") + thread.content.startswith(b"From ") == 3
    april = member.get(archive.url("2026-04.mbox"))
    assert b"Files" in april.content and b"swordfish" not in april.content


def test_the_atom_feed_lists_recent_threads_without_addresses(site, archive):
    page = site.client().get(archive.url("feed.atom"))
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("application/atom+xml")
    root = ET.fromstring(page.content)
    ns = {"a": "http://www.w3.org/2005/Atom"}
    titles = [e.findtext("a:title", namespaces=ns) for e in root.findall("a:entry", ns)]
    assert titles == ["Files", "Milter timeouts"]
    assert b"@example.com" not in page.content
    link = root.find("a:entry/a:link", ns)
    assert link is not None and link.get("href", "").startswith("https://lists.example/archive/")


def test_the_pages_speak_the_visitors_language(site, archive):
    client = site.client()
    headers = {"Accept-Language": "de"}
    page = client.get(archive.url(), headers=headers)
    assert "Neueste Threads" in page.text
    gone = client.get(archive.url(f"message/{archive.gone}/"), headers=headers)
    assert gone.status_code == 410 and "Nachricht entfernt" in gone.text
    bad = client.get(archive.url("search?q=x&until=morgen"), headers=headers)
    assert "Bis zum: ein Datum wird JJJJ-MM-TT geschrieben" in bad.text


def test_odd_posts_never_break_a_page(site, archive):
    """No date, no subject, no sender, a control character, a huge text, an attachment
    list that is not one, a raw message that is not MIME: every page still answers."""
    with site.sessions.begin() as s:
        mlist = lists.get(s, site.address)
        rows = [
            archive_rows.post(s, mlist, "", "no subject", sender="", name=""),
            archive_rows.post(s, mlist, "ctl \x01 \x7f", "text \x0c with form feed"),
            archive_rows.post(s, mlist, "huge", "word " * 200_000),
            archive_rows.post(s, mlist, "odd list", "x", attachments={"name": "a"}),  # type: ignore[arg-type]
        ]
        rows[0].date = None
        rows[1].raw = b"\xff\xfe\x00 not mime"
        rows[1].attachments = [{"name": "a.bin", "part": 3}]
        s.flush()
        hashes = [r.message_id_hash for r in rows]
        threads = [r.thread_id for r in rows]
    client = logged_in(site, f"mia@{site.host}")
    for tail in ("", "2026/03/", "feed.atom", "search?q=word", "2026-03.mbox"):
        assert client.get(archive.url(tail)).status_code == 200, tail
    for digest, thread in zip(hashes, threads, strict=True):
        assert client.get(archive.url(f"message/{digest}/")).status_code == 200
        assert client.get(archive.url(f"thread/{thread}/")).status_code == 200
        assert client.get(archive.url(f"thread/{thread}.mbox")).status_code == 200
    assert client.get(archive.url(f"message/{hashes[1]}/attachment/1")).status_code == 404


def test_the_list_page_links_the_archive_for_those_who_may_read_it(site, archive):
    link = f'href="/archive/{archive.list_id}/"'
    assert link in site.client().get(f"/lists/{archive.list_id}").text
    site.update(archive_policy=ArchivePolicy.private)
    assert link not in site.client().get(f"/lists/{archive.list_id}").text
    assert link in logged_in(site, f"mia@{site.host}").get(f"/lists/{archive.list_id}").text


def test_markdown_rendering_formats_the_text_and_never_passes_markup_through(site, archive):
    with site.sessions.begin() as s:
        mlist = lists.get(s, site.address)
        post = archive_rows.post(
            s,
            mlist,
            "Markdown",
            "> a quoted **line** stays text\n\n"
            "Use **bold** and `code`:\n\n- one\n- two\n\n"
            "[docs](https://example.org/docs) [bad](javascript:alert(1)) "
            "<script>alert(2)</script> <img src=https://tracker.example/x.png>",
            sender="anne@example.com",
            name="Anne Example",
            date=START + timedelta(days=1),
        )
        digest = post.message_id_hash
    url = archive.url(f"message/{digest}/")
    plain = site.client().get(url).text
    assert "<strong>" not in plain and "Use **bold**" in plain  # text: as written
    site.update(archive_rendering_mode=ArchiveRenderingMode.markdown)
    page = site.client().get(url)
    assert page.status_code == 200
    html = page.text
    assert "<strong>bold</strong>" in html and "<code>code</code>" in html
    assert "<li>one</li>" in html
    assert 'href="https://example.org/docs"' in html and "nofollow" in html
    assert 'href="javascript:' not in html  # left as text, never a link
    assert "<script>alert(2)" not in html and "&lt;script&gt;alert(2)" in html
    assert "<img" not in html.split('class="post-text"', 1)[1].split("</article>", 1)[0]
    # the quote is folded and left as text
    assert '<details class="quote">' in html and "a quoted **line** stays text" in html
