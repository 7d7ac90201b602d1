"""Postfix as Debian ships it: the stock main.cf and master.cf (smtpd, cleanup,
trivial-rewrite and lmtp chrooted to the queue directory) with contrib/postfix added as it
is (``debian_lab``).  The end-to-end scenarios run here too (``postfix-debian`` in
test_front_ends.py); this file holds what is the Debian setup's own: the chroot, the
list-domain tables mtaplugin writes, and an mtaplugin outage that defers list mail only."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from mtaplugin.manage import domains, lists, members
from mtaplugin.testing.lab import Lab
from mtaplugin.testing.postfix import CONTRIB, DEFAULT_TABLES
from tests.helpers import make_post, unique
from tests.integration.labs import (
    PASSTHROUGH,
    DatabaseOutage,
    copies,
    make_list,
    session_on,
    waits,
)
from tests.replies import POSTFIX_LOOKUP_FAILED, POSTFIX_RELAY_DENIED, TRY_LATER, said


def _chrooted_to(queue: Path) -> set[str]:
    """The names of the running processes whose root is ``queue``."""
    names = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.readlink(f"/proc/{pid}/root") == str(queue):
                names.add(Path(f"/proc/{pid}/comm").read_text().strip())
        except OSError:
            continue
    return names


def test_the_contrib_lines_work_with_debians_chrooted_postfix(debian_lab: Lab) -> None:
    lab = debian_lab
    main = (lab.postfix.conf / "main.cf").read_text()
    assert Path("/usr/share/postfix/main.cf.debian").read_text() in main
    # contrib/postfix/main.cf as it is, but for where the lab keeps the tables (and the
    # relay domain the lab passes through before the list domains)
    contrib = (CONTRIB / "main.cf").read_text().replace(DEFAULT_TABLES, str(lab.tables))
    contrib = contrib.replace("relay_domains = ", f"relay_domains = {PASSTHROUGH}, ")
    assert contrib in main
    assert (
        f"127.0.0.1:{lab.smtp_port} inet n - y - - smtpd"
        in (lab.postfix.conf / "master.cf").read_text()
    )

    mlist = make_list_on(lab, "ann@example.org")
    subject = unique("chroot")
    post = make_post("ann@example.org", mlist, subject=subject)
    assert lab.send("ann@example.org", [mlist], post) is None
    waits(lab, lambda: copies(lab, subject, "ann@example.org"))
    # The smtpd that took the post (and its cleanup) run inside the queue directory.
    assert {"smtpd", "cleanup"} <= _chrooted_to(lab.postfix.queue)


def make_list_on(lab: Lab, *regular: str) -> str:
    with session_on(lab) as s:
        return make_list(s, *regular).posting_address


def test_a_new_list_domain_reaches_postfixs_table_within_seconds(debian_lab: Lab) -> None:
    lab = debian_lab
    host = f"{unique('dom')}.test"
    refused = lab.send("gus@example.org", [f"info@{host}"], make_post("gus@example.org", "x"))
    assert said(refused) == ("rcpt", POSTFIX_RELAY_DENIED), refused
    with session_on(lab) as s:
        domains.create(s, host)
        members.add(s, lists.create(s, f"team@{host}"), "gus@example.org")
        s.commit()
    waits(lab, lambda: host in (lab.tables / "transport").read_text(), timeout=15)
    assert f"{host} mtaplugin_list_mail" in (lab.tables / "domains").read_text()
    assert f"{host} lmtp:unix:mtaplugin/lmtp.sock" in (lab.tables / "transport").read_text()
    subject = unique("new-domain")
    post = make_post("gus@example.org", f"team@{host}", subject=subject)

    # Postfix's processes notice the rebuilt table and reopen it.
    def relayed() -> bool:
        return lab.send("gus@example.org", [f"team@{host}"], post) is None

    waits(lab, relayed, timeout=30)
    waits(lab, lambda: copies(lab, subject, "gus@example.org"))


def _queued(lab: Lab) -> list[dict[str, Any]]:
    proc = subprocess.run(
        ["postqueue", "-c", str(lab.postfix.conf), "-j"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def _submit_locally(lab: Lab, sender: str, recipient: str, message: bytes) -> None:
    """sendmail(1) on the lab's Postfix: pickup and cleanup (non_smtpd_milters)."""
    subprocess.run(
        ["sendmail", "-C", str(lab.postfix.conf), "-f", sender, recipient],
        input=message,
        check=True,
        timeout=30,
    )


def test_with_mtaplugin_down_only_list_mail_waits(debian_lab: Lab) -> None:
    lab = debian_lab
    mlist = make_list_on(lab, "kim@example.org", "lou@example.org")
    subject = unique("outage")
    post = make_post("kim@example.org", mlist, subject=subject)
    local_subject = unique("local")
    local_post = make_post("kim@example.org", mlist, subject=local_subject)
    other = unique("other")

    lab.stop_mtaplugin()
    try:
        # Mail for a domain without lists goes on as if mtaplugin did not exist.
        assert (
            lab.send(
                "kim@example.org",
                [f"max@{PASSTHROUGH}"],
                make_post("kim@example.org", f"max@{PASSTHROUGH}", subject=other),
            )
            is None
        )
        waits(lab, lambda: copies(lab, other, f"max@{PASSTHROUGH}"), timeout=30)
        # List mail is refused with a 4xx at RCPT: the client's MTA keeps it and retries.
        refused = lab.send("kim@example.org", [mlist], post)
        assert said(refused) == ("rcpt", POSTFIX_LOOKUP_FAILED), refused
        # A list post that got in without the milter (here: sendmail(1), whose milter
        # is skipped while unreachable) waits in Postfix's queue for the LMTP front end.
        _submit_locally(lab, "kim@example.org", mlist, local_post)

        def deferred() -> list[dict[str, Any]]:
            return [
                q
                for q in _queued(lab)
                if q.get("queue_name") == "deferred"
                and any(r.get("address") == mlist for r in q["recipients"])
            ]

        waits(lab, deferred, timeout=30)
        (entry,) = deferred()
        (rcpt,) = entry["recipients"]
        assert "mtaplugin/lmtp.sock" in rcpt["delay_reason"], rcpt
        assert not copies(lab, subject, "lou@example.org")
        assert not copies(lab, local_subject, "lou@example.org")
        # nothing bounced to the poster
        assert not [m for m in lab.sink.to("kim@example.org") if m.mail_from in {"", "<>"}]
    finally:
        lab.start_mtaplugin()

    # Back up: the client's retry goes through, and the queued post is decided by the
    # LMTP front end (postqueue -f: Postfix's own retry would come within seconds too).
    assert lab.send("kim@example.org", [mlist], post) is None
    subprocess.run(["postqueue", "-c", str(lab.postfix.conf), "-f"], check=True, timeout=30)
    waits(lab, lambda: copies(lab, subject, "lou@example.org"), timeout=60)
    waits(lab, lambda: copies(lab, local_subject, "lou@example.org"), timeout=60)
    assert copies(lab, subject, "lou@example.org") == 1
    assert copies(lab, local_subject, "lou@example.org") == 1
    # never delivered to the list address itself
    assert mlist not in lab.sink.recipients()


def test_with_the_list_database_down_only_list_mail_waits(debian_lab: Lab) -> None:
    lab = debian_lab
    mlist = make_list_on(lab, "nat@example.org")
    subject, other = unique("db-down"), unique("other")
    post = make_post("nat@example.org", mlist, subject=subject)
    with DatabaseOutage(lab.database_url):
        refused = lab.send("nat@example.org", [mlist], post)
        if lab.database_url.startswith("sqlite"):
            # SQLite locked by another writer: in write-ahead-log mode the RCPT lookup
            # still reads; the decision cannot write, so end of data answers 451
            assert said(refused) == ("data", TRY_LATER), refused
        else:
            # the lookup server answers TEMP: the list-mail check fails, 4xx at RCPT
            assert said(refused) == ("rcpt", POSTFIX_LOOKUP_FAILED), refused
        passing = make_post("nat@example.org", f"oz@{PASSTHROUGH}", subject=other)
        assert lab.send("nat@example.org", [f"oz@{PASSTHROUGH}"], passing) is None
        waits(lab, lambda: copies(lab, other, f"oz@{PASSTHROUGH}"), timeout=30)
    assert lab.send("nat@example.org", [mlist], post) is None
    waits(lab, lambda: copies(lab, subject, "nat@example.org"))
