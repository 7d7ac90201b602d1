"""News to list through a real private INN and a real Postfix (acceptance of issue 19):
an article posted to the group reaches the list's members once, decorated like a post.

It uses the ``inn`` fixture (a private INN 2 on loopback with the group ``local.test``;
the labs' ``[nntp]`` settings point at it).
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from mtaplugin.enums import MemberRole
from mtaplugin.manage import members
from mtaplugin.news.nntp import NntpClient
from mtaplugin.testing import wait_for
from mtaplugin.testing.inn import PrivateInn
from mtaplugin.testing.lab import Lab
from tests.helpers import run_mtaplugin, unique
from tests.integration.labs import copies, copy_of, make_list, run_job
from tests.integration.test_news_path import in_group, send

GROUP = "local.test"


def test_an_article_posted_to_the_group_reaches_the_members_once_decorated(
    lab: Lab, db: Session, inn: PrivateInn
) -> None:
    reader = f"{unique('reader')}@example.org"
    poster = f"{unique('poster')}@example.org"
    mlist = make_list(db, "ann@example.org", gateway_to_mail=True, linked_newsgroup=GROUP)
    members.add(db, mlist, reader, MemberRole.member)
    members.add(db, mlist, poster, MemberRole.member)
    db.commit()
    env = lab.process_env()
    # The first poll sets the watermark at the group's end (nothing old is gated).
    first = run_mtaplugin("news", "gate", mlist.fqdn_listname, env=env)
    assert first.returncode == 0, first.stderr
    assert "first poll" in first.stdout
    marker = unique("from-usenet-")
    message_id = f"<{marker}@news.example.org>"
    with NntpClient("127.0.0.1", inn.port) as news:
        news.post(
            (
                f"From: Poster <{poster}>\r\nNewsgroups: {GROUP}\r\n"
                f"Subject: {marker}\r\nMessage-ID: {message_id}\r\n\r\nhello from news\r\n"
            ).encode()
        )
    gated = run_mtaplugin("news", "gate", mlist.fqdn_listname, env=env)
    assert gated.returncode == 0, gated.stderr
    assert "1 articles gated" in gated.stdout
    wait_for(lambda: copies(lab, marker, reader) == 1, timeout=30)
    copy = copy_of(lab, marker, reader)
    # Decorated like a post: the subject prefix, the list's headers, To: the list.
    assert str(copy["Subject"]).startswith(f"[{mlist.display_name}]")
    assert mlist.list_id in str(copy["List-Id"])
    assert str(copy["To"]) == mlist.posting_address
    assert copy["Message-ID"] == message_id
    # Polled again (the job's next run, or a restart): not gated a second time.
    again = run_mtaplugin("news", "gate", mlist.fqdn_listname, env=env)
    assert again.returncode == 0 and "0 articles gated" in again.stdout
    assert copies(lab, marker, reader) == 1


def test_a_list_gatewayed_both_ways_does_not_get_its_own_posts_back(
    lab: Lab, db: Session, inn: PrivateInn
) -> None:
    member = f"{unique('both')}@example.org"
    mlist = make_list(
        db, member, gateway_to_news=True, gateway_to_mail=True, linked_newsgroup="local.other"
    )
    env = lab.process_env()
    assert "first poll" in run_mtaplugin("news", "gate", mlist.fqdn_listname, env=env).stdout
    marker = unique("round-trip-")
    message_id = send(lab, mlist.posting_address, member, marker)
    wait_for(lambda: copies(lab, marker, member) == 1, timeout=30)
    run_job(lab, "news-post")
    article = wait_for(lambda: in_group(inn, message_id, "local.other"), timeout=30)
    assert isinstance(article, bytes) and b"List-Id:" in article  # how the loop is seen
    gated = run_mtaplugin("news", "gate", mlist.fqdn_listname, env=env)
    assert gated.returncode == 0, gated.stderr
    assert "0 articles gated" in gated.stdout
    assert copies(lab, marker, member) == 1
