"""What the archive reads from a post, its hash and the threading rules (pure: no
database)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mtaplugin.archive import threads, urls
from mtaplugin.archive.hashing import content_message_id, message_id_hash
from mtaplugin.archive.html_text import html_to_text
from mtaplugin.archive.reading import parse, parse_post, read
from mtaplugin.copies import transforms
from mtaplugin.enums import ArchivePolicy
from mtaplugin.posting.transform_context import TransformContext
from tests.helpers import detached_list

NOW = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)


def test_mailman_s_message_id_hash() -> None:
    # Mailman 3's own tests (message store, LMTP runner): <ant> is MS6QLWER…
    assert message_id_hash("<ant>") == "MS6QLWERIJLGCRF44J7USBFDELMNT2BW"
    # the brackets are not part of it; without them the value is hashed as it is
    assert message_id_hash("87myycy5eh.fsf@uwakimon.sk.tsukuba.ac.jp") == message_id_hash(
        " <87myycy5eh.fsf@uwakimon.sk.tsukuba.ac.jp> "
    )
    assert len(message_id_hash("<a@b>")) == 32


def test_a_content_message_id_is_the_same_for_the_same_post() -> None:
    fields = [("From", "anne@example.com"), ("Subject", "hi")]
    one = content_message_id(fields, b"body\r\n", "lists.example.org")
    assert one == content_message_id(fields, b"body\n", "lists.example.org")
    assert one != content_message_id(fields, b"other\n", "lists.example.org")
    assert one.startswith("<archive.") and one.endswith("@lists.example.org>")


MULTI = (
    b"From: =?utf-8?q?J=C3=BCrgen?= <Juergen@Example.COM>\n"
    b"Subject: =?utf-8?q?Gr=C3=BC=C3=9Fe?=\n"
    b"Message-ID: <m1@example.com>\n"
    b"In-Reply-To: <p1@example.com> (Anne's message)\n"
    b"References: <r0@example.com>\n <p1@example.com>\n"
    b"Date: Thu, 03 Dec 2026 10:00:00 +0100\n"
    b"MIME-Version: 1.0\n"
    b'Content-Type: multipart/mixed; boundary="b1"\n'
    b"\n"
    b"--b1\n"
    b'Content-Type: multipart/alternative; boundary="b2"\n'
    b"\n"
    b"--b2\n"
    b"Content-Type: text/plain; charset=iso-8859-1\n"
    b"Content-Transfer-Encoding: quoted-printable\n"
    b"\n"
    b"Gr=FC=DFe aus K=F6ln\n"
    b"--b2\n"
    b"Content-Type: text/html; charset=utf-8\n"
    b"\n"
    b"<p>HTML alternative</p>\n"
    b"--b2--\n"
    b"--b1\n"
    b'Content-Type: application/pdf; name="plan.pdf"\n'
    b"Content-Disposition: attachment; filename=plan.pdf\n"
    b"Content-Transfer-Encoding: base64\n"
    b"\n"
    b"JVBERi0xLjQK\n"
    b"--b1--\n"
)


def test_a_multipart_post_is_read() -> None:
    r = read(MULTI, NOW)
    assert r.message_id == "<m1@example.com>"
    assert r.message_id_hash == message_id_hash("<m1@example.com>")
    assert r.in_reply_to == "<p1@example.com>"
    assert r.references == ["<r0@example.com>", "<p1@example.com>"]
    assert (r.sender, r.sender_name) == ("juergen@example.com", "Jürgen")
    assert r.subject == "Grüße"
    assert r.date == datetime(2026, 12, 3, 9, 0, tzinfo=UTC)
    assert r.text == "Grüße aus Köln\n"  # the HTML alternative is not read twice
    assert r.attachments == [
        {"name": "plan.pdf", "content_type": "application/pdf", "size": 9, "part": 4}
    ]
    # ``part`` counts as Message.walk() does: a page finds the part by it
    parts = list(parse(MULTI).walk())
    assert parts[4].get_filename() == "plan.pdf"


#: posts :func:`parse_post` reads without parsing the body, and posts it parses whole
SHAPES = [
    b"From: a@example.com\r\nSubject: crlf\r\n\r\nline one\r\n\r\nline three\r\n",
    b"From: a@example.com\nSubject: lf\n\nline\n\n\nFrom the start\n.\n",
    b"Subject: mixed ends\r\n\nbody\rwith a bare CR\n",
    b"Subject: folded\n and continued\nContent-Type: text/plain;\n charset=utf-8\n"
    b"\n\xc3\xa9t\xc3\xa9\n",
    b"Content-Type: text/plain; charset=iso-8859-1\nContent-Transfer-Encoding: quoted-printable\n"
    b"\nGr=FC=DFe\n",
    b"Content-Type: text/plain\nContent-Transfer-Encoding: base64\n\naMOpIGzDoA==\n",
    b"Content-Type: text\n\na type the parser reads as text/plain\n",
    b"Content-Type: application/pdf; name=x.pdf\n\nJVBERi0xLjQK\n",
    b"Subject: no body\n\n",
    b"Subject: no blank line\n",
    b"Subject: x\nnot a field\n\nbody\n",
    b"Subject : spaced name\nFrom: a@example.com\n\nbody\n",
    b"Subject: bare\rcr\n\nbody\n",
    b"\nno header fields\n",
    b"From a@example.com Thu Dec  3 10:00:00 2026\nSubject: mbox\n\nbody\n",
    b"Content-Type: message/rfc822\n\nSubject: inner\n\ninner body\n",
    b'Content-Type: multipart/mixed; boundary="never"\n\nno parts at all\n',
    MULTI,
]


@pytest.mark.parametrize("raw", SHAPES)
def test_a_post_is_parsed_as_the_whole_parse_reads_it(raw: bytes) -> None:
    """:func:`parse_post` skips the body of a single-part post: what it gives is what the
    whole parse gives, and so is what the archive reads."""
    fast, whole = parse_post(raw), parse(raw)
    assert fast.items() == whole.items()
    assert fast.get_unixfrom() == whole.get_unixfrom()
    assert fast.is_multipart() == whole.is_multipart()
    assert fast.as_bytes() == whole.as_bytes()
    if not whole.is_multipart():
        assert fast.get_payload() == whole.get_payload()
        assert fast.get_payload(decode=True) == whole.get_payload(decode=True)
    assert read(raw, NOW, "lists.example.org") == _read_whole(raw)


def _read_whole(raw: bytes) -> object:
    """:func:`read` as it was: the whole post parsed."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("mtaplugin.archive.reading.parse_post", parse)
        return read(raw, NOW, "lists.example.org")


def test_html_only_is_converted_and_scripts_dropped() -> None:
    raw = (
        b"From: a@example.com\nMessage-ID: <h@x>\nContent-Type: text/html\n\n"
        b"<html><head><style>p{}</style><script>alert(1)</script></head>"
        b"<body><p>One &amp; two</p><p>see <a href='https://x.example/'>this</a></p></body>"
    )
    text = read(raw, NOW).text
    assert "alert" not in text and "p{}" not in text
    assert "One & two" in text
    assert "this <https://x.example/>" in text
    assert html_to_text("<pre>a\n  b</pre>") == "a\n  b\n"


def test_broken_mail_never_raises() -> None:
    raw = (
        b"From: nobody\nSubject: =?x-unknown?q?=FF?=\nDate: yesterday-ish\n"
        b'Content-Type: multipart/mixed; boundary="never"\n\n'
        b"no parts at all\n"
    )
    r = read(raw, NOW, "lists.example.org")
    assert r.date == NOW
    assert r.message_id.endswith("@lists.example.org>")
    unknown = read(
        b"Message-ID: <u@x>\nContent-Type: text/plain; charset=klingon\n\n\xe9t\xc3\xa9\n", NOW
    )
    assert "é" in unknown.text


def test_an_absurd_date_is_the_archive_time() -> None:
    far = read(b"Message-ID: <d@x>\nDate: Sat, 01 Jan 2150 00:00:00 +0000\n\nx\n", NOW)
    old = read(b"Message-ID: <d@x>\nDate: Thu, 01 Jan 1970 00:00:00 +0000\n\nx\n", NOW)
    assert far.date == NOW and old.date == NOW


def test_subject_folding_and_ancestors() -> None:
    assert threads.subject_key("[Team] Re: AW: [Team] The  Plan") == "the plan"
    assert threads.thread_subject("Re: [Team] The plan") == "The plan"
    assert threads.is_reply("[Team] Re: x") and not threads.is_reply("[Team] x")
    assert threads.ancestors("<p>", ["<a>", "<b>", "<p>"]) == ["<p>", "<b>", "<a>"]
    assert threads.nearer_parent("<p>", ["<a>", "<p>"], "<a>", "<p>")
    assert not threads.nearer_parent("<p>", ["<a>", "<p>"], "<p>", "<a>")
    assert threads.nearer_parent("", ["<a>"], None, "<a>")
    assert not threads.nearer_parent("", ["<a>"], None, "<z>")


def test_the_archive_urls() -> None:
    base = urls.web_base("https://l.example.org/lists/team.example.org/", "team.example.org")
    assert base == "https://l.example.org"
    assert urls.permalink(base, "team.example.org", "H") == (
        "https://l.example.org/archive/team.example.org/message/H/"
    )
    assert urls.month_mbox(base, "t", 2026, 3) == "https://l.example.org/archive/t/2026-03.mbox"
    assert urls.web_base("", "t") == ""


def _ctx(**settings: object) -> TransformContext:
    mlist = detached_list(list_name="team", mail_host="example.org", **settings)
    mlist.list_id = "team.example.org"
    return TransformContext(mlist, listinfo_url="https://l.example.org/lists/team.example.org/")


def test_the_copy_carries_archived_at_with_the_post_s_hash() -> None:
    raw = b"From: a@example.com\nSubject: hi\nMessage-ID: <x1@example.com>\n\nhello\n"
    out = transforms.archive_copy(_ctx(), raw).decode()
    h = message_id_hash("<x1@example.com>")
    assert f"Archived-At: <https://l.example.org/archive/team.example.org/message/{h}/>" in out
    assert "List-Archive: <https://l.example.org/archive/team.example.org/>" in out


def test_no_archived_at_for_no_archive_posts_and_never_lists() -> None:
    raw = b"From: a@example.com\nMessage-ID: <x1@example.com>\nX-No-Archive: Yes\n\nhello\n"
    assert b"Archived-At" not in transforms.archive_copy(_ctx(), raw)
    raw = b"From: a@example.com\nMessage-ID: <x1@example.com>\nArchive: no\n\nhello\n"
    assert b"Archived-At" not in transforms.archive_copy(_ctx(), raw)
    raw = b"From: a@example.com\nMessage-ID: <x1@example.com>\n\nhello\n"
    never = _ctx(archive_policy=ArchivePolicy.never)
    assert b"Archive" not in transforms.archive_copy(never, raw)


def test_a_post_without_message_id_gets_the_same_one_in_every_copy() -> None:
    raw = b"From: a@example.com\nSubject: hi\n\nhello\n"
    ctx = _ctx()
    one = transforms.archive_copy(ctx, raw)
    assert one == transforms.archive_copy(ctx, raw)
    members = transforms.members_copy(ctx, raw)
    mid = read(one, NOW).message_id
    assert mid.startswith("<archive.")
    assert f"Message-ID: {mid}".encode() in members
    assert message_id_hash(mid).encode() in members


def test_an_anonymous_list_s_message_id_is_stable_and_hides_the_poster() -> None:
    raw = b"From: anne@example.com\nSubject: hi\nMessage-ID: <secret@anne.example>\n\nhello\n"
    ctx = _ctx(anonymous_list=True)
    one = read(transforms.archive_copy(ctx, raw), NOW).message_id
    assert one == read(transforms.archive_copy(ctx, raw), NOW).message_id
    assert "anne" not in one and one.endswith("@example.org>")


def test_a_retry_of_an_anonymous_post_keeps_its_message_id() -> None:
    """An MTA adds a Date to each attempt of a post that had none: the retry is still the
    same post (the archive keeps it once, by this Message-ID)."""
    ctx = _ctx(anonymous_list=True)
    post = b"From: anne@example.com\nSubject: hi\nMessage-ID: <m1@anne.example>\n%s\nhello\n"
    first = post % b"Date: Sat, 05 Dec 2026 10:40:01 +0000\n"
    retry = post % b"Date: Sat, 05 Dec 2026 10:40:09 +0000\n"
    other = first.replace(b"<m1@", b"<m2@")
    mid = read(transforms.archive_copy(ctx, first), NOW).message_id
    assert mid == read(transforms.archive_copy(ctx, retry), NOW).message_id
    assert mid != read(transforms.archive_copy(ctx, other), NOW).message_id
    # without a Message-ID the Date tells posts apart
    bare = [p.replace(b"Message-ID: <m1@anne.example>\n", b"") for p in (first, retry)]
    ids = {read(transforms.archive_copy(ctx, p), NOW).message_id for p in bare}
    assert len(ids) == 2
