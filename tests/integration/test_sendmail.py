"""mtaplugin behind a real private Sendmail 8.17 (from Debian's package files), wired with
contrib/sendmail/mtaplugin.m4 itself: the same milter as with Postfix, and the list
domains from mtaplugin's lookup server through Sendmail's access map.  What is Sendmail's
own; the scenarios every front end shares are in test_front_ends.py."""

from __future__ import annotations

import smtplib
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.orm import Session

from mtaplugin.testing.mta import send
from mtaplugin.testing.sendmail import CONTRIB, SendmailLab
from tests.helpers import make_post, unique
from tests.integration.labs import (
    PASSTHROUGH,
    copies,
    copy_data,
    make_list,
    milter_connection,
    queue_id,
    session_on,
    waits,
)


@pytest.fixture
def sendmail_db(sendmail: SendmailLab) -> Iterator[Session]:
    with session_on(sendmail) as s:
        yield s


def test_the_contrib_sendmail_mc_recipe_builds_a_configuration_sendmail_reads(
    sendmail: SendmailLab, tmp_path: Path
) -> None:
    """contrib/sendmail/sendmail.mc, with mtaplugin.m4 where it says to put it, gives a
    sendmail.cf that Sendmail reads without a complaint and that has the milter in it."""
    box = sendmail.sendmail
    mtaplugin_m4 = tmp_path / "mtaplugin.m4"
    mtaplugin_m4.write_text((CONTRIB / "mtaplugin.m4").read_text())
    mc = (CONTRIB / "sendmail.mc").read_text().replace("/etc/mail/mtaplugin.m4", str(mtaplugin_m4))
    (tmp_path / "sendmail.mc").write_text(mc)
    cfdir = box.tree / "usr/share/sendmail/cf"
    built = subprocess.run(
        [str(box.tree / "usr/bin/m4"), f"-D_CF_DIR_={cfdir}/", f"{cfdir}/m4/cf.m4",
         str(tmp_path / "sendmail.mc")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert built.returncode == 0 and not built.stderr, built.stderr
    cf = tmp_path / "sendmail.cf"
    cf.write_text(built.stdout)
    assert "Xmtaplugin, S=unix:/run/mtaplugin/milter.sock, F=T" in built.stdout
    assert "Kdomains socket -T<TMPF> unix:/run/mtaplugin/lookup.sock" in built.stdout
    # Address test mode reads the whole file; a bad line is reported on stderr.
    checked = subprocess.run(
        box.wrapped("-C", str(cf), "-bt"),
        input="", capture_output=True, text=True, timeout=60, env=box.env(),
    )  # fmt: skip
    assert checked.returncode == 0
    assert "sendmail.cf: line" not in checked.stdout + checked.stderr, checked.stdout


def test_a_post_to_two_lists_goes_through_the_outbox_and_the_reinjection_daemon(
    sendmail: SendmailLab, sendmail_db: Session
) -> None:
    """Two lists in one transaction: each list's copy is stored in the outbox and the
    worker submits it to the re-injection daemon of mtaplugin.m4."""
    one = make_list(sendmail_db, "eve@example.org", "fay@example.org")
    two = make_list(sendmail_db, "eve@example.org", "gil@example.org")
    subject = unique("two-lists")
    post = make_post("eve@example.org", one.posting_address, subject=subject,
                     headers={"Cc": two.posting_address})  # fmt: skip

    assert (
        sendmail.send("eve@example.org", [one.posting_address, two.posting_address], post) is None
    )

    people = ("eve@example.org", "fay@example.org", "gil@example.org")
    waits(sendmail, lambda: all(copies(sendmail, subject, p) for p in people))
    # eve is on both lists: one copy from each.
    waits(sendmail, lambda: copies(sendmail, subject, "eve@example.org") == 2)
    assert copies(sendmail, subject, "fay@example.org") == 1


def test_mail_for_another_domain_leaves_the_milter_at_data(
    sendmail: SendmailLab, sendmail_db: Session
) -> None:
    """As with Postfix: a transaction without a list recipient steps aside at DATA, and
    Sendmail delivers it without sending the milter its header, body or end of message."""
    other = f"{unique('person')}@{PASSTHROUGH}"
    subject = unique("not-for-a-list")
    post = sendmail.prepare(make_post("ivy@example.org", other, subject))
    # From 127.0.0.1, which Sendmail lets relay anywhere (the lab's posts come from
    # 127.0.0.2, which may relay only to the list domains).
    smtp = smtplib.SMTP(
        "127.0.0.1", sendmail.smtp_port, timeout=60, source_address=("127.0.0.1", 0)
    )
    smtp.ehlo("client.test")

    assert send(smtp, "ivy@example.org", [other], post) is None

    waits(sendmail, lambda: copies(sendmail, subject, other))
    line = milter_connection(sendmail, queue_id(copy_data(sendmail, subject, other)))
    assert "transactions=1 stepped_aside=1 headers=0 body_chunks=0 ends_of_message=0" in line

    mlist = make_list(sendmail_db, "ivy@example.org")
    subject = unique("list-post")
    post = make_post("ivy@example.org", mlist.posting_address, subject=subject)
    assert sendmail.send("ivy@example.org", [mlist.posting_address], post) is None
    waits(sendmail, lambda: copies(sendmail, subject, "ivy@example.org"))
    delivered = copy_data(sendmail, subject, "ivy@example.org")
    line = milter_connection(sendmail, queue_id(delivered))
    assert "transactions=1 stepped_aside=0" in line and "ends_of_message=1" in line
