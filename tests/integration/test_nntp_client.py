"""The NNTP client against a real INN (the ``inn`` fixture: a private innd on loopback)."""

from __future__ import annotations

import uuid

import pytest

from mtaplugin.news import NewsError
from mtaplugin.news.nntp import NntpClient
from mtaplugin.testing import free_port
from mtaplugin.testing.inn import PASSWORD, USER, PrivateInn


def article(group: str, body: bytes = b"Hello, news.\n") -> tuple[str, bytes]:
    mid = f"<{uuid.uuid4().hex}@lab.test>"
    head = f"From: Ann <ann@lab.test>\nNewsgroups: {group}\nSubject: a test\nMessage-ID: {mid}\n\n"
    return mid, head.encode() + body


def find(client: NntpClient, group: str, mid: str) -> bytes:
    status = client.group(group)
    for number in range(status.last, status.first - 1, -1):
        text = client.article(number)
        if text is not None and f"Message-ID: {mid}".encode() in text:
            return text
    raise AssertionError(f"{mid} is not in {group}")


def test_post_and_read_back(inn: PrivateInn) -> None:
    mid, text = article("local.test", b"line one\n.starts with a dot\n..two dots\n.\nend\n")
    with NntpClient("127.0.0.1", inn.port) as client:
        before = client.group("local.test")
        client.post(text)
        after = client.group("local.test")
        assert after.last == before.last + 1
        got = find(client, "local.test", mid)
    body = got.split(b"\r\n\r\n", 1)[1]
    assert body == b"line one\r\n.starts with a dot\r\n..two dots\r\n.\r\nend\r\n"


def test_with_authinfo(inn: PrivateInn) -> None:
    mid, text = article("local.test")
    with NntpClient("127.0.0.1", inn.port, user=USER, password=PASSWORD) as client:
        client.post(text)
        assert find(client, "local.test", mid)


def test_wrong_password_is_refused(inn: PrivateInn) -> None:
    with pytest.raises(NewsError, match=r"AUTHINFO for 'gateway'.* 481") as e:
        NntpClient("127.0.0.1", inn.port, user=USER, password="wrong").connect()
    # 4xx: the articles wait in the queue until the admin fixes [nntp] password
    assert e.value.temporary


def test_missing_article_and_group(inn: PrivateInn) -> None:
    with NntpClient("127.0.0.1", inn.port) as client:
        status = client.group("local.other")
        assert client.article(status.last + 1000) is None
        with pytest.raises(NewsError, match="411") as e:
            client.group("no.such.group")
        assert not e.value.temporary


def test_a_duplicate_counts_as_posted(inn: PrivateInn) -> None:
    mid, text = article("local.test")
    with NntpClient("127.0.0.1", inn.port) as client:
        client.post(text)
        client.post(text)
        status = client.group("local.test")
        count = sum(
            1
            for n in range(status.first, status.last + 1)
            if (a := client.article(n)) is not None and mid.encode() in a
        )
    assert count == 1


def test_refused_article_is_an_error(inn: PrivateInn) -> None:
    with NntpClient("127.0.0.1", inn.port) as client, pytest.raises(NewsError, match="POST"):
        client.post(b"Subject: no From, no Newsgroups\n\nbody\n")


def test_nobody_listening_is_temporary() -> None:
    with pytest.raises(NewsError, match="cannot connect") as e:
        NntpClient("127.0.0.1", free_port(), timeout=2).connect()
    assert e.value.temporary
