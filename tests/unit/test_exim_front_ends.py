"""The front ends that cannot edit a transaction: the LMTP server (per-recipient answers),
``mtaplugin inject`` (sysexits) and the Exim query protocol.  A real LMTP server on a unix
socket, the real command in a subprocess, real databases."""

from __future__ import annotations

import base64
import io
import os
import smtplib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import event

from mtaplugin.db import make_engine, sessionmaker_for
from mtaplugin.engine import ListEngine
from mtaplugin.frontends import pipe
from mtaplugin.frontends.exim import answer, message_from_spool, split_recipients
from mtaplugin.lists.domain_set import ListDomains
from mtaplugin.testing import free_port
from tests.helpers import make_post, unique
from tests.unit.lmtp_server import LmtpServer
from tests.unit.sites import Roster, Site

#: nothing listens on port 1: every connection is refused, as when PostgreSQL is down
DOWN_URL = "postgresql+psycopg://postgres@127.0.0.1:1/lists"


@pytest.fixture
def site_roster() -> Roster:
    """``team`` (holds nonmember posts) and ``strict`` (refuses them), both with anne."""
    return Roster.members("anne@example.com", "bob@example.com", strict=("anne@example.com",))


# --- LMTP -------------------------------------------------------------------------------------
@pytest.fixture
def lmtp(site: Site, tmp_path: Path) -> Iterator[LmtpServer]:
    with LmtpServer(tmp_path / "lmtp.sock", ListEngine(site.sessions)) as server:
        yield server


def data_replies(lmtp: smtplib.LMTP, count: int, message: bytes) -> list[tuple[int, bytes]]:
    """Send DATA and read one reply per accepted recipient (RFC 2033 §4.2)."""
    first = lmtp.data(message)
    return [first, *(lmtp.getreply() for _ in range(count - 1))]


def test_lmtp_answers_each_recipient_after_data(lmtp: LmtpServer, site: Site) -> None:
    post = make_post("stranger@example.net", site.addr("team"), subject=unique("lmtp"))
    with lmtp.client() as c:
        assert c.mail("stranger@example.net")[0] == 250
        assert c.rcpt(site.addr("team"))[0] == 250
        assert c.rcpt(site.addr("strict"))[0] == 250
        replies = data_replies(c, 2, post)
    (held_code, held_text), (refused_code, refused_text) = replies
    assert held_code == 250 and b"held for moderation" in held_text
    assert refused_code == 550
    assert b"5.7.1" in refused_text and b"nonmember-moderation" in refused_text
    assert len(site.held("team")) == 1
    assert site.held("strict") == []


def test_lmtp_accepted_post_is_in_the_outbox_for_the_members(lmtp: LmtpServer, site: Site):
    subject = unique("lmtp-post")
    with lmtp.client() as c:
        c.mail("anne@example.com")
        c.rcpt(site.addr("team"))
        post = make_post("anne@example.com", site.addr("team"), subject=subject)
        ((code, text),) = data_replies(c, 1, post)
    assert code == 250 and b"accepted" in text
    (row,) = site.outbox("team")
    assert sorted(row.recipients) == ["anne@example.com", "bob@example.com"]
    assert subject.encode() in row.raw
    assert row.mail_from == site.addr("team-bounces")


def test_lmtp_refuses_addresses_that_are_not_lists_at_rcpt(lmtp: LmtpServer, site: Site):
    with lmtp.client() as c:
        c.mail("anne@example.com")
        code, text = c.rcpt(site.addr("nosuchlist"))
        assert code == 550 and b"no such list" in text
        code, text = c.rcpt("someone@example.org")
        assert code == 550 and b"not a list address" in text


def test_lmtp_on_a_loopback_port(site: Site) -> None:
    with LmtpServer(free_port(), ListEngine(site.sessions)) as server, server.client() as c:
        c.mail("stranger@example.net")
        assert c.rcpt(site.addr("strict"))[0] == 250
        ((code, text),) = data_replies(c, 1, make_post("stranger@example.net", "x"))
    assert code == 550 and b"nonmember-moderation" in text


def test_lmtp_says_451_when_the_database_is_down(tmp_path: Path) -> None:
    engine = ListEngine(sessionmaker_for(make_engine(DOWN_URL, timeout=1)))
    with LmtpServer(tmp_path / "down.sock", engine) as server, server.client() as c:
        c.mail("anne@example.com")
        code, text = c.rcpt("team@lists.example")
    assert code == 451 and b"4.3.0" in text and b"list database" in text


# --- inject (the pipe) ------------------------------------------------------------------------
def run_inject(engine: ListEngine, recipient: str, sender: str, post: bytes) -> tuple[int, str]:
    err = io.StringIO()
    status = pipe.run(engine, recipient, sender, io.BytesIO(post), err)
    return status, err.getvalue()


def test_inject_exit_status_for_each_outcome(site: Site) -> None:
    engine = ListEngine(site.sessions)
    team, strict = site.addr("team"), site.addr("strict")
    member_post = make_post("anne@example.com", team)
    assert run_inject(engine, team, "anne@example.com", member_post) == (pipe.EX_OK, "")
    assert len(site.outbox("team")) == 1
    held = make_post("stranger@example.net", team)
    assert run_inject(engine, team, "stranger@example.net", held) == (pipe.EX_OK, "")
    assert len(site.held("team")) == 1

    status, err = run_inject(engine, strict, "x@example.net", make_post("x@example.net", strict))
    assert status == pipe.EX_NOPERM == 77
    assert "550 5.7.1" in err and "nonmember-moderation" in err

    status, err = run_inject(engine, site.addr("nosuch"), "a@b.example", member_post)
    assert status == pipe.EX_NOUSER == 67 and "no such list" in err

    no_from = b"To: " + team.encode() + b"\nSubject: x\n\nbody\n"
    status, err = run_inject(engine, team, "anne@example.com", no_from)
    assert status == pipe.EX_DATAERR == 65 and "From: address" in err


def test_inject_says_75_when_the_database_is_down() -> None:
    engine = ListEngine(sessionmaker_for(make_engine(DOWN_URL, timeout=1)))
    status, err = run_inject(engine, "team@lists.example", "a@b.example", b"From: a@b\n\nx\n")
    assert status == pipe.EX_TEMPFAIL == 75
    assert err.startswith("451 4.3.0")


def test_inject_reads_the_pipe_environment_and_drops_a_from_line(site: Site) -> None:
    """The command as Exim's pipe runs it: recipient in $RECIPIENT, sender in $SENDER,
    an mbox From line in front when the transport adds one."""
    strict = site.addr("strict")
    post = b"From x@example.net Thu Dec  3 10:00:00 2026\n" + make_post("x@example.net", strict)
    env = dict(
        os.environ,
        MTAPLUGIN_DATABASE_URL=site.url,
        RECIPIENT=strict,
        SENDER="x@example.net",
        MESSAGE_ID="1xZAmu-0003kq-1N",
    )
    proc = subprocess.run(
        [sys.executable, "-m", "mtaplugin.cli", "inject"],
        input=post, env=env, capture_output=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 77, proc.stderr
    assert b"nonmember-moderation" in proc.stderr

    env["MTAPLUGIN_DATABASE_URL"] = DOWN_URL
    env["MTAPLUGIN_DATABASE_TIMEOUT"] = "1"
    proc = subprocess.run(
        [sys.executable, "-m", "mtaplugin.cli", "inject"],
        input=post, env=env, capture_output=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 75, proc.stderr


# --- the Exim query protocol -----------------------------------------------------------------
def b64(text: str | bytes) -> bytes:
    return base64.b64encode(text.encode() if isinstance(text, str) else text)


def data_request(sender: str, recipients: list[str], post: bytes) -> bytes:
    headers, _sep, body = post.partition(b"\n\n")
    fields = [sender, ", ".join(recipients), "192.0.2.1", "client.test", "", "1xZAmu-0003kq-1N"]
    spool = b"1xZAmu-0003kq-1N-D\n" + body
    return b" ".join([b"DATA", *(b64(f) for f in fields), b64(headers), b64(spool)]) + b"\n"


def test_exim_rcpt_and_list_queries(site: Site) -> None:
    engine = ListEngine(site.sessions)
    assert answer(engine, b"RCPT " + b64(site.addr("team")) + b"\n") == "LIST"
    assert answer(engine, b"RCPT " + b64("someone@example.org")) == "PASS"
    refused = answer(engine, b"RCPT " + b64(site.addr("nosuch")))
    assert refused.startswith("REJECT 550 5.1.1 ") and "no such list" in refused
    assert answer(engine, b"LIST " + b64(site.addr("team"))) == "yes"
    assert answer(engine, b"LIST " + b64("someone@example.org")) == "no"
    assert answer(engine, b"RCPT not-base64!").startswith("DEFER 451")
    assert answer(engine, b"HELLO").startswith("DEFER 451")


def test_exim_list_query_for_a_members_copy_asks_no_database(site: Site) -> None:
    """The router asks LIST for every member's copy: an address in no list domain is
    answered from the kept answer for its domain, one query per domain."""
    engine = ListEngine(site.sessions)
    known = ListDomains(engine.db)
    assert answer(engine, b"LIST " + b64(site.addr("team")), known) == "yes"
    queries: list[str] = []
    event.listen(engine.db, "before_cursor_execute", lambda *a: queries.append(a[2]))
    members = [f"m{i}@example{i % 7}.net" for i in range(40)]
    assert {answer(engine, b"LIST " + b64(m), known) for m in members} == {"no"}
    assert {answer(engine, b"RCPT " + b64(m), known) for m in members} == {"PASS"}
    assert len(queries) == 7  # one per member domain
    assert answer(engine, b"LIST " + b64(site.addr("team")), known) == "yes"
    refused = answer(engine, b"RCPT " + b64(site.addr("nosuch")), known)
    assert refused.startswith("REJECT 550 5.1.1 ")


def test_exim_data_query_decides_the_whole_transaction(site: Site) -> None:
    engine = ListEngine(site.sessions)
    team, strict = site.addr("team"), site.addr("strict")
    subject = unique("acl")
    post = make_post("anne@example.com", team, subject=subject)
    other = "friend@elsewhere.example"

    assert answer(engine, data_request("anne@example.com", [team, other], post)) == (
        f"ACCEPT <;{team}"
    )
    (row,) = site.outbox("team")
    assert subject.encode() in row.raw and b"Hello, list." in row.raw

    refused = answer(engine, data_request("x@example.net", [strict], make_post("x@b.c", strict)))
    assert refused.startswith("REJECT 550 5.7.1 ") and "nonmember-moderation" in refused
    assert answer(engine, data_request("a@b.example", [other], post)) == "NONE"

    down = ListEngine(sessionmaker_for(make_engine(DOWN_URL, timeout=1)))
    assert answer(down, data_request("a@b.example", [team], post)).startswith("DEFER 451 4.3.0")


def test_spool_helpers() -> None:
    raw = message_from_spool(b"From: a@b\nSubject: x\n", b"1xZAmu-0003kq-1N-D\nline 1\nline 2\n")
    assert raw == b"From: a@b\r\nSubject: x\r\n\r\nline 1\r\nline 2\r\n"
    assert split_recipients("a@b.example, c@d.example") == ["a@b.example", "c@d.example"]
