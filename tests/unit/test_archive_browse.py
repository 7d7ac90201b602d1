"""The pure parts of the archive's pages: the reply tree, quote folding, obscured
addresses, the mboxrd writer, safe attachment names and types, the Atom feed."""

from __future__ import annotations

import mailbox
from datetime import UTC, datetime
from email.message import EmailMessage
from pathlib import Path
from xml.etree import ElementTree as ET

from mtaplugin.archive import attachments, browse, feed, mboxrd
from mtaplugin.model import ArchivedMessage


def msg(id: int, parent: int | None = None, **kw: object) -> ArchivedMessage:
    return ArchivedMessage(
        id=id,
        parent_id=parent,
        message_id=f"{id}@x",
        message_id_hash=f"H{id}",
        sender=kw.pop("sender", "anne@example.com"),
        sender_name=kw.pop("sender_name", ""),
        subject="s",
        raw=kw.pop("raw", b"Subject: s\n\nbody\n"),
        text="body",
        attachments=kw.pop("attachments", []),
        date=datetime(2026, 3, 2, tzinfo=UTC),
        removed=False,
        **kw,
    )


def shape(nodes: list[browse.Node]) -> list[tuple[int, int]]:
    return [(n.message.id, n.depth) for n in nodes]


def test_tree_nests_replies_depth_first_in_date_order():
    posts = [msg(1), msg(2, 1), msg(3, 1), msg(4, 2), msg(5)]
    assert shape(browse.tree(posts)) == [(1, 0), (2, 1), (4, 2), (3, 1), (5, 0)]


def test_tree_survives_missing_parents_loops_and_depth():
    assert shape(browse.tree([msg(2, 99), msg(3, 2)])) == [(2, 0), (3, 1)]
    loop = browse.tree([msg(1, 2), msg(2, 1), msg(3, 3)])
    assert sorted(shape(loop)) == [(1, 0), (2, 0), (3, 0)]
    chain = [msg(1)] + [msg(n, n - 1) for n in range(2, 20)]
    assert max(d for _i, d in shape(browse.tree(chain))) == browse.MAX_DEPTH


def test_blocks_fold_runs_of_quoted_lines():
    text = "Hi\n> one\n> two\n >three\nmine\n\n"
    assert browse.blocks(text) == [
        browse.Block(False, "Hi"),
        browse.Block(True, "> one\n> two\n >three"),
        browse.Block(False, "mine"),
    ]
    assert browse.blocks("> only\n> quotes")[0].lines == 2
    assert browse.blocks("") == []


def test_addresses_are_obscured():
    assert browse.obscure("anne@example.com") == "anne@…"
    assert browse.obscure("no-address") == "no-address"
    text = "mail anne.b+x@mail.example.org or <bob@example.com>."
    assert browse.obscure_text(text) == "mail anne.b+x@… or <bob@…>."
    post = msg(1, sender_name="Anne (anne@example.com)")
    assert browse.author(post, show_address=False) == "Anne (anne@…)"
    assert browse.author(msg(2), show_address=False) == "anne@…"
    assert browse.author(post, show_address=True) == "Anne (anne@example.com) <anne@example.com>"


def test_mboxrd_escapes_from_lines_and_reads_back(tmp_path: Path):
    body = b"Subject: a\r\n\r\nFrom here\r\n>From there\r\n>>From far\r\nplain"
    one = msg(1, raw=body, sender="anne@example.com")
    gone = msg(2, raw=b"Subject: gone\n\nsecret\n")
    gone.removed = True
    data = b"".join(mboxrd.write([one, gone, msg(3)]))
    assert data.startswith(b"From anne@example.com Mon Mar 02 00:00:00 2026\n")
    assert b"\n>From here\n>>From there\n>>>From far\nplain\n\n" in data
    assert b"secret" not in data and b"\r" not in data
    path = tmp_path / "a.mbox"
    path.write_bytes(data)
    assert [m["Subject"] for m in mailbox.mbox(str(path))] == ["a", "s"]
    assert mboxrd.from_line("", None).startswith(b"From MAILER-DAEMON Thu Jan 01")
    assert mboxrd.from_line("a b\n@x", None).startswith(b"From ab@x ")


def test_attachment_names_are_made_safe():
    assert attachments.safe_name("../../etc/passwd", "f") == "passwd"
    assert attachments.safe_name('C:\\evil\\"x".exe', "f") == "x.exe"
    assert attachments.safe_name("\x00\r\n", "fallback") == "fallback"
    assert attachments.safe_name("Übersicht.pdf", "f") == "Übersicht.pdf"
    header = attachments.content_disposition("Übersicht.pdf")
    assert header == "attachment; filename=\"_bersicht.pdf\"; filename*=UTF-8''%C3%9Cbersicht.pdf"


def test_only_real_images_of_safe_types_keep_their_type():
    png = b"\x89PNG\r\n\x1a\n" + b"\0" * 8
    assert attachments.is_safe_image("image/png", png)
    assert not attachments.is_safe_image("image/png", b"<svg/>")
    assert not attachments.is_safe_image("image/svg+xml", b"<svg/>")
    assert attachments.is_safe_image("image/webp", b"RIFF\0\0\0\0WEBPVP8 ")
    assert not attachments.is_safe_image("image/webp", b"RIFF\0\0\0\0AVI ")


def test_attachments_of_broken_or_odd_messages_are_none_not_errors():
    odd = msg(1, raw=b"\xff\xfe garbage", attachments=[{"name": "x.bin", "part": 7}])
    assert attachments.download(odd, 1) is None
    junk = msg(2, attachments=["text", {"name": None, "size": "big"}])
    assert [a.name for a in attachments.listed(junk)] == ["attachment-2"]
    assert attachments.download(junk, 1) is None
    assert attachments.download(junk, 5) is None
    # the part named by "part", or else found by its file name
    m = EmailMessage()
    m.set_content("hi")
    m.add_attachment(b"data", maintype="application", subtype="pdf", filename="a.pdf")
    found = msg(3, raw=bytes(m), attachments=[{"name": "a.pdf", "content_type": "application/pdf"}])
    got = attachments.download(found, 1)
    assert (
        got is not None and got.data == b"data" and got.content_type == "application/octet-stream"
    )


def test_the_feed_is_well_formed_atom_even_with_control_characters():
    entry = feed.Entry(
        title="bad \x00\x08 chars <b>",
        url="https://l.example/archive/x/thread/1/",
        updated=datetime(2026, 3, 2, tzinfo=UTC),
        author="Anne",
        summary="a & b",
    )
    data = feed.atom("List", "https://l.example/f", "https://l.example/", entry.updated, [entry])
    root = ET.fromstring(data)
    ns = {"a": feed.ATOM}
    assert root.findtext("a:entry/a:title", namespaces=ns) == "bad  chars <b>"
    assert root.findtext("a:updated", namespaces=ns) == "2026-03-02T00:00:00Z"
