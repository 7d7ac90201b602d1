"""The old archive's links after the move from Mailman (SQLite and PostgreSQL, through the
Falcon app): HyperKitty's and Pipermail's URLs answer 301 with the same post, thread or
month of mtaplugin's archive; a private archive's links answer 404 to whoever may not
read it, as its pages do; Pipermail's article numbers come from the imported mbox."""

from __future__ import annotations

import io
from datetime import timedelta
from email.message import EmailMessage

import pytest
from falcon import testing

from mtaplugin.archive import pipermail
from mtaplugin.archive.hashing import message_id_hash
from mtaplugin.archive.importing import import_mbox
from mtaplugin.enums import ArchivePolicy
from mtaplugin.manage import lists
from tests.unit import archive_rows
from tests.unit.archive_rows import START
from tests.unit.test_web_archive import (  # noqa: F401 (fixtures)
    Archive,
    archive,
    logged_in,
    site,
)
from tests.unit.webclient import Site

pytestmark = pytest.mark.usefixtures("cheap_argon2")


def _to(answer: testing.Result) -> str:
    assert answer.status_code == 301, answer.text
    location: str = answer.headers["location"]
    return location


def test_hyperkitty_links_lead_to_the_same_post_thread_and_month(
    site: Site,  # noqa: F811 (the fixtures of test_web_archive)
    archive: Archive,  # noqa: F811
) -> None:
    client = site.client()
    fqdn = site.address
    for prefix in ("/hyperkitty", "/archives"):
        base = f"{prefix}/list/{fqdn}"
        assert _to(client.get(f"{base}/message/{archive.reply}/")).endswith(
            f"/archive/{archive.list_id}/message/{archive.reply}"
        )
        # a thread is named by the hash of a post in it
        assert _to(client.get(f"{base}/thread/{archive.deeper.lower()}/")).endswith(
            f"/archive/{archive.list_id}/thread/{archive.thread_id}"
        )
        assert _to(client.get(f"{base}/{START.year}/{START.month}/")).endswith(
            f"/archive/{archive.list_id}/{START.year}/{START.month}"
        )
        assert _to(client.get(f"{base}/{START.year}/{START.month}/2/")).endswith(
            f"/archive/{archive.list_id}/{START.year}/{START.month}"
        )
        assert _to(client.get(f"{base}/")).endswith(f"/archive/{archive.list_id}")
        assert client.get(f"{base}/message/{'A' * 32}/").status_code == 404
    assert client.get(f"/hyperkitty/list/nosuch@{site.host}/").status_code == 404


def test_a_private_archives_links_answer_404_to_strangers_and_redirect_members(
    site: Site,  # noqa: F811 (the fixtures of test_web_archive)
    archive: Archive,  # noqa: F811
) -> None:
    site.update(archive_policy=ArchivePolicy.private)
    link = f"/hyperkitty/list/{site.address}/message/{archive.first}/"
    assert site.client().get(link).status_code == 404
    assert logged_in(site, f"eve@{site.host}").get(link).status_code == 404
    member = logged_in(site, f"mia@{site.host}")
    assert _to(member.get(link)).endswith(f"/message/{archive.first}")


def _mbox(where: Site, count: int) -> bytes:
    """The list's Pipermail mbox: ``count`` posts, one a day from START."""
    out = io.BytesIO()
    for n in range(count):
        when = START + timedelta(days=n)
        msg = EmailMessage()
        msg["From"] = "anne@example.com"
        msg["To"] = where.address
        msg["Subject"] = f"pipermail {n}"
        msg["Message-ID"] = f"<pm{n}.{where.host}@example.com>"
        msg["Date"] = when.strftime("%a, %d %b %Y %H:%M:%S +0000")
        msg.set_content(f"post number {n}\n")
        out.write(f"From anne@example.com {when.strftime('%a %b %d %H:%M:%S %Y')}\n".encode())
        out.write(msg.as_bytes().replace(b"\r\n", b"\n") + b"\n")
    return out.getvalue()


def test_pipermail_links_lead_to_the_post_it_numbered_and_to_the_month(site: Site) -> None:  # noqa: F811 (the fixtures of test_web_archive)
    site.update(archive_policy=ArchivePolicy.public)
    with site.sessions() as s:
        mlist = lists.get(s, site.address)
        list_id, pk = mlist.list_id, mlist.id
    raw = _mbox(site, 3)
    import_mbox(site.sessions, pk, io.BytesIO(raw), START)
    assert pipermail.number_posts(site.sessions, pk, io.BytesIO(raw)) == 3
    # run again: nothing changes, nothing doubles
    assert pipermail.number_posts(site.sessions, pk, io.BytesIO(raw)) == 3
    client = site.client()
    month = f"{START.year}-{START.strftime('%B')}"
    with site.sessions() as s:
        second = pipermail.message_hash(s, pk, 1)
    assert second == message_id_hash(f"<pm1.{site.host}@example.com>")
    # the name "team" is on every test site's domain: the host the visitor asked decides

    def get(path: str) -> testing.Result:
        return client.get(path, host=site.host)

    assert _to(get(f"/pipermail/team/{month}/000001.html")).endswith(
        f"/archive/{list_id}/message/{second}"
    )
    for page in ("thread.html", "date.html", "subject.html", "author.html", ""):
        assert _to(get(f"/pipermail/team/{month}/{page}")).endswith(
            f"/archive/{list_id}/{START.year}/{START.month}"
        )
    assert _to(get(f"/pipermail/team/{month}.txt.gz")).endswith(
        f"/archive/{list_id}/{START.year}-{START.month}.mbox"
    )
    assert _to(get("/pipermail/team/")).endswith(f"/archive/{list_id}")
    assert get(f"/pipermail/team/{month}/000099.html").status_code == 404
    # without the host, "team" names several lists: no guess
    assert client.get("/pipermail/team/").status_code == 404


def test_pipermail_periods_are_read_as_pipermail_wrote_them() -> None:
    assert pipermail.month_of("2019-March") == (2019, 3)
    assert pipermail.month_of("2019-march") == (2019, 3)
    assert pipermail.month_of("2019q3") == (2019, 7)
    assert pipermail.month_of("Week-of-Mon-20190304") is None
    assert pipermail.month_of("2019-Brumaire") is None
    assert pipermail.article_of("012345.html") == 12345
    assert pipermail.article_of("thread.html") is None


def test_a_post_archived_from_the_list_is_found_by_its_hyperkitty_hash(site: Site) -> None:  # noqa: F811 (the fixtures of test_web_archive)
    site.update(archive_policy=ArchivePolicy.public)
    with site.sessions.begin() as s:
        mlist = lists.get(s, site.address)
        digest = archive_rows.post(s, mlist, "Hello", "hi").message_id_hash
        list_id = mlist.list_id
    answer = site.client().get(f"/hyperkitty/list/{site.address}/message/{digest}/")
    assert _to(answer).endswith(f"/archive/{list_id}/message/{digest}")
