"""mtaplugin behind a real private Sendmail 8.17 (from Debian's package files), wired with
contrib/sendmail/mtaplugin.m4 itself: the same milter as with Postfix, and the list
domains from mtaplugin's lookup server through Sendmail's access map."""

from __future__ import annotations

import sqlite3
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.db import make_engine, sessionmaker_for
from mtaplugin.manage import domains, lists, members
from mtaplugin.model import HeldMessage, MailingList
from mtaplugin.model.enums import Action
from mtaplugin.testing import wait_for
from mtaplugin.testing.sendmail import CONTRIB, SendmailLab
from tests.conftest import BACKENDS, fresh_database
from tests.helpers import make_post, unique

DOMAIN = "lists.test"


@pytest.fixture(scope="module", params=BACKENDS)
def sendmail(request: pytest.FixtureRequest, lab_root: Path) -> Iterator[SendmailLab]:
    url = fresh_database(request, request.param, lab_root)
    engine = make_engine(url)
    with sessionmaker_for(engine).begin() as s:
        domains.create(s, DOMAIN, "sendmail tests")
    engine.dispose()
    name = f"sendmail-{request.param}"
    dns = request.getfixturevalue("lab_dns")  # every DMARC/DKIM/SPF lookup goes there
    with SendmailLab(root=lab_root / name, database_url=url, name=name, env=dns.environ()) as lab:
        yield lab


def _sessions(lab: SendmailLab) -> sessionmaker[Session]:
    return sessionmaker_for(make_engine(lab.database_url))


def make_list(lab: SendmailLab, *regular: str, **settings: object) -> MailingList:
    with _sessions(lab).begin() as s:
        mlist = lists.create(s, f"{unique('list')}@{DOMAIN}")
        for key, value in settings.items():
            setattr(mlist, key, value)
        for email in regular:
            members.add(s, mlist, email)
        s.flush()
        s.expunge(mlist)
    return mlist


def waits(lab: SendmailLab, condition: Callable[[], object], timeout: float = 60) -> None:
    try:
        wait_for(condition, timeout=timeout)
    except TimeoutError:
        raise AssertionError(f"{lab.sendmail.log()[-3000:]}\n---\n{lab.log()[-3000:]}") from None


def copies(lab: SendmailLab, marker: str, email: str) -> int:
    return sum(1 for m in lab.sink.to(email) if marker.encode() in m.data)


def test_member_post_reaches_every_member(sendmail: SendmailLab) -> None:
    mlist = make_list(sendmail, "ann@example.org", "bob@example.org", "cy@example.net")
    subject = unique("sendmail-post")
    post = make_post("ann@example.org", mlist.posting_address, subject=subject)

    assert sendmail.send("ann@example.org", [mlist.posting_address], post) is None

    people = ("ann@example.org", "bob@example.org", "cy@example.net")
    waits(sendmail, lambda: all(copies(sendmail, subject, p) for p in people))
    assert [copies(sendmail, subject, p) for p in people] == [1, 1, 1]
    assert b"Hello, list." in sendmail.sink.to("cy@example.net")[-1].data
    # The milter replaced the list recipient by the members.
    assert mlist.posting_address not in sendmail.sink.recipients()


def test_nonmember_post_is_refused_at_end_of_data_naming_the_rule(sendmail: SendmailLab):
    mlist = make_list(sendmail, "ann@example.org", default_nonmember_action=Action.reject)
    subject = unique("sendmail-refused")
    refused = sendmail.send(
        "spammer@example.com",
        [mlist.posting_address],
        make_post("spammer@example.com", mlist.posting_address, subject=subject),
    )
    assert refused is not None and (refused.stage, refused.code) == ("data", 550), refused
    assert "5.7.1" in refused.text and "nonmember-moderation" in refused.text
    assert f"Posts to {mlist.fqdn_listname} from nonmembers are not accepted" in refused.text
    assert not copies(sendmail, subject, "ann@example.org")


def test_held_post_is_stored_before_the_250(sendmail: SendmailLab) -> None:
    mlist = make_list(sendmail, "ann@example.org")
    subject = unique("sendmail-held")
    post = make_post("stranger@example.com", mlist.posting_address, subject=subject)

    assert sendmail.send("stranger@example.com", [mlist.posting_address], post) is None

    with _sessions(sendmail)() as s:
        held = s.scalars(select(HeldMessage).where(HeldMessage.mailing_list_id == mlist.id))
        assert [h.subject for h in held] == [subject]


def test_list_domains_come_from_the_access_map(sendmail: SendmailLab) -> None:
    refused = sendmail.send(
        "ann@example.org", [f"no-such-list@{DOMAIN}"], make_post("ann@example.org", "x")
    )
    assert refused is not None and (refused.stage, refused.code) == ("rcpt", 550), refused
    assert "no such list" in refused.text
    # A domain that holds no list is not relayed for this client ...
    host = f"{unique('dom')}.test"
    refused = sendmail.send("ann@example.org", [f"team@{host}"], make_post("ann@example.org", "x"))
    assert refused is not None and refused.code == 550 and "Relaying denied" in refused.text
    # ... until it does: the access map reads the list database on every lookup.
    with _sessions(sendmail).begin() as s:
        domains.create(s, host)
        members.add(s, lists.create(s, f"team@{host}"), "dee@example.org")
    subject = unique("new-domain")
    post = make_post("dee@example.org", f"team@{host}", subject=subject)
    assert sendmail.send("dee@example.org", [f"team@{host}"], post) is None
    waits(sendmail, lambda: copies(sendmail, subject, "dee@example.org"))


def test_a_locked_database_gives_4xx_and_the_retry_goes_through(sendmail: SendmailLab) -> None:
    mlist = make_list(sendmail, "ivy@example.org")
    subject = unique("sendmail-locked")
    post = make_post("ivy@example.org", mlist.posting_address, subject=subject)
    if sendmail.database_url.startswith("sqlite"):
        lock = sqlite3.connect(sendmail.database_url[len("sqlite:///") :], isolation_level=None)
        lock.execute("BEGIN EXCLUSIVE")
        try:
            refused = sendmail.send("ivy@example.org", [mlist.posting_address], post)
        finally:
            lock.execute("ROLLBACK")
            lock.close()
    else:
        # PostgreSQL: the list database refuses every connection for a while (the
        # server itself keeps running for the other tests).
        import psycopg
        from psycopg import sql

        url = make_engine(sendmail.database_url).url
        admin = f"host={url.host} port={url.port} user={url.username} dbname=postgres"
        name = sql.Identifier(str(url.database))
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS false").format(name))
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                (url.database,),
            )
            try:
                refused = sendmail.send("ivy@example.org", [mlist.posting_address], post)
            finally:
                conn.execute(sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS true").format(name))
    assert refused is not None and 400 <= refused.code < 500, refused
    assert not copies(sendmail, subject, "ivy@example.org")

    attempts: list[object] = []

    def retried() -> bool:
        attempts.append(sendmail.send("ivy@example.org", [mlist.posting_address], post))
        return attempts[-1] is None

    wait_for(retried, timeout=60, interval=2)
    waits(sendmail, lambda: copies(sendmail, subject, "ivy@example.org"))


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
    sendmail: SendmailLab,
) -> None:
    """Two lists in one transaction: each list's copy is stored in the outbox and the
    worker submits it to the re-injection daemon of mtaplugin.m4."""
    one = make_list(sendmail, "eve@example.org", "fay@example.org")
    two = make_list(sendmail, "eve@example.org", "gil@example.org")
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
