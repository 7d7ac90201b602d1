"""mtaplugin behind a real private Exim 4.96 (from Debian's package files), wired with the
contrib/exim/ snippets themselves: the ACLs decide during the SMTP dialogue, the routers
and the LMTP transport (or the pipe) deliver what reaches them undecided."""

from __future__ import annotations

import os
import sqlite3
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.db import make_engine, sessionmaker_for, upgrade
from mtaplugin.manage import domains, lists, members
from mtaplugin.model import HeldMessage, MailingList
from mtaplugin.model.enums import Action, MemberRole
from mtaplugin.testing import wait_for
from mtaplugin.testing.exim import EximLab
from mtaplugin.testing.postgres import PostgresServer
from tests.conftest import BACKENDS, fresh_database
from tests.helpers import make_post, unique

DOMAIN = "lists.test"
PASSTHROUGH = "passthrough.test"


def _open_database(url: str) -> None:
    """The pipe runs as nobody: it must be able to write the SQLite file and its journal."""
    if url.startswith("sqlite:///"):
        path = Path(url[len("sqlite:///") :])
        os.chmod(path.parent, 0o777)
        os.chmod(path, 0o666)


def dns_settings(request: pytest.FixtureRequest) -> str:
    """Every DMARC, DKIM and SPF lookup goes to the session's loopback DNS server."""
    dns = request.getfixturevalue("lab_dns")
    return f'[dns]\nnameservers = "{dns.host}"\nport = {dns.port}\n'


def _new_lab(
    request: pytest.FixtureRequest, lab_root: Path, backend: str, **kwargs: object
) -> EximLab:
    url = fresh_database(request, backend, lab_root)
    _open_database(url)
    engine = make_engine(url)
    with sessionmaker_for(engine).begin() as s:
        domains.create(s, DOMAIN, "exim tests")
    engine.dispose()
    name = f"exim-{backend}-{kwargs.get('transport', 'mtaplugin_lmtp')}"
    return EximLab(
        root=lab_root / name,
        database_url=url,
        passthrough_domains=(PASSTHROUGH,),
        name=name.replace("_", "-"),
        extra_settings=dns_settings(request),
        **kwargs,  # type: ignore[arg-type]
    )


@pytest.fixture(scope="module", params=BACKENDS)
def exim(request: pytest.FixtureRequest, lab_root: Path) -> Iterator[EximLab]:
    """The recommended setup: the ACLs, the routers and the LMTP transport."""
    with _new_lab(request, lab_root, request.param) as lab:
        yield lab


@pytest.fixture(scope="module")
def exim_pipe(request: pytest.FixtureRequest, lab_root: Path) -> Iterator[EximLab]:
    """Without the ACLs, every post decided at delivery by the pipe (SQLite)."""
    with _new_lab(request, lab_root, "sqlite", transport="mtaplugin_pipe", inline=False) as lab:
        yield lab


def _sessions(lab: EximLab) -> sessionmaker[Session]:
    return sessionmaker_for(make_engine(lab.database_url))


def make_list(lab: EximLab, *regular: str, **settings: object) -> MailingList:
    with _sessions(lab).begin() as s:
        mlist = lists.create(s, f"{unique('list')}@{DOMAIN}")
        for key, value in settings.items():
            setattr(mlist, key, value)
        for email in regular:
            members.add(s, mlist, email)
        s.flush()
        s.expunge(mlist)
    return mlist


def waits(lab: EximLab, condition: Callable[[], object], timeout: float = 60) -> None:
    """Wait for ``condition``; on a timeout, fail with Exim's and mtaplugin's logs."""
    try:
        wait_for(condition, timeout=timeout)
    except TimeoutError:
        noise = ("lost privilege", "queue run", "mail.log")
        logs = "\n".join(
            line
            for line in f"{lab.exim.log()}\n---\n{lab.log()}".splitlines()
            if not any(n in line for n in noise)
        )
        raise AssertionError(logs[-6000:]) from None


def copies(lab: EximLab, marker: str, email: str) -> int:
    return sum(1 for m in lab.sink.to(email) if marker.encode() in m.data)


def held_posts(lab: EximLab, mlist: MailingList) -> list[HeldMessage]:
    with _sessions(lab)() as s:
        return list(s.scalars(select(HeldMessage).where(HeldMessage.mailing_list_id == mlist.id)))


# --- the recommended setup: decided in the SMTP dialogue ------------------------------------
def test_member_post_reaches_every_member_once(exim: EximLab) -> None:
    mlist = make_list(exim, "ann@example.org", "bob@example.org", "cy@example.net")
    subject = unique("exim-post")
    post = make_post("ann@example.org", mlist.posting_address, subject=subject)

    assert exim.send("ann@example.org", [mlist.posting_address], post) is None

    members_ = ("ann@example.org", "bob@example.org", "cy@example.net")
    waits(exim, lambda: all(copies(exim, subject, m) for m in members_))
    exim.exim.wait_queue_empty()
    assert [copies(exim, subject, m) for m in members_] == [1, 1, 1]
    assert b"Hello, list." in exim.sink.to("bob@example.org")[-1].data
    # The list address was decided in the ACL and dropped by the router: never delivered.
    assert mlist.posting_address not in exim.sink.recipients()
    waits(exim, lambda: f"<{mlist.posting_address}> R=mtaplugin_decided" in exim.exim.log())


def test_a_large_post_is_decided_whole(exim: EximLab) -> None:
    """The DATA query carries the whole post (Exim reads its spool file for mtaplugin):
    3 MB arrive intact, the last line included."""
    mlist = make_list(exim, "lee@example.org", max_message_size=0)  # no size limit
    subject = unique("exim-large")
    body = "".join(f"line {n:07d} of a large post\n" for n in range(110_000)) + "THE END\n"
    post = make_post("lee@example.org", mlist.posting_address, subject=subject, body=body)
    assert len(post) > 3_000_000

    assert exim.send("lee@example.org", [mlist.posting_address], post) is None

    waits(exim, lambda: copies(exim, subject, "lee@example.org"))
    (copy,) = [m for m in exim.sink.to("lee@example.org") if subject.encode() in m.data]
    assert b"line 0109999 of a large post" in copy.data and b"THE END" in copy.data


def test_nonmember_post_is_refused_at_data_naming_the_rule(exim: EximLab) -> None:
    mlist = make_list(exim, "ann@example.org", default_nonmember_action=Action.reject)
    subject = unique("exim-refused")
    refused = exim.send(
        "spammer@example.com",
        [mlist.posting_address],
        make_post("spammer@example.com", mlist.posting_address, subject=subject),
    )
    assert refused is not None and (refused.stage, refused.code) == ("data", 550), refused
    assert "5.7.1" in refused.text
    assert "nonmember-moderation" in refused.text
    assert f"Posts to {mlist.fqdn_listname} from nonmembers are not accepted" in refused.text
    exim.exim.wait_queue_empty()
    assert not copies(exim, subject, "ann@example.org")
    assert not exim.sink.to("spammer@example.com")  # no bounce: refused, not accepted


def test_held_post_is_stored_once_before_the_250(exim: EximLab) -> None:
    mlist = make_list(exim, "ann@example.org")
    subject = unique("exim-held")
    post = make_post("stranger@example.com", mlist.posting_address, subject=subject)

    assert exim.send("stranger@example.com", [mlist.posting_address], post) is None

    held = held_posts(exim, mlist)  # stored before the 250: no waiting
    assert [h.subject for h in held] == [subject]
    assert [r for r, _t in held[0].reasons] == ["nonmember-moderation"]
    exim.exim.wait_queue_empty()
    # The router did not decide again: one hold, and nothing delivered.
    assert len(held_posts(exim, mlist)) == 1
    assert not copies(exim, subject, "ann@example.org")


def test_owner_address_reaches_the_owners_and_a_suffix_routes_to_lmtp(exim: EximLab) -> None:
    """-owner mail is decided in the ACL like a post; submitted locally, the router's
    local_part_suffix and list lookup send -owner to the LMTP front end."""
    mlist = make_list(exim, "mia@example.org")
    with _sessions(exim).begin() as s:
        members.add(s, lists.get(s, mlist.fqdn_listname), "boss@example.org", MemberRole.owner)
    owner = mlist.fqdn_listname.replace("@", "-owner@")
    subject = unique("exim-owner")
    post = make_post("someone@example.com", owner, subject=subject)

    assert exim.send("someone@example.com", [owner], post) is None
    waits(exim, lambda: copies(exim, subject, "boss@example.org"))
    assert not copies(exim, subject, "mia@example.org")

    local = unique("exim-owner-local")
    proc = subprocess.run(
        [str(exim.exim.binary), "-C", str(exim.exim.conf), "-odi", "-f", "someone@example.com",
         owner],
        input=make_post("someone@example.com", owner, subject=local),
        capture_output=True, env=exim.exim.env(), timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    waits(exim, lambda: copies(exim, local, "boss@example.org"))
    line = f"<{owner}> R=mtaplugin_lists T=mtaplugin_lmtp"
    waits(exim, lambda: line in exim.exim.log())


def test_unknown_list_is_refused_at_rcpt(exim: EximLab) -> None:
    refused = exim.send(
        "ann@example.org", [f"no-such-list@{DOMAIN}"], make_post("ann@example.org", "x")
    )
    assert refused is not None and (refused.stage, refused.code) == ("rcpt", 550), refused
    assert "5.1.1" in refused.text and "no such list" in refused.text


def test_other_recipients_get_the_original(exim: EximLab) -> None:
    mlist = make_list(exim, "fay@example.org")
    other = f"{unique('person')}@{PASSTHROUGH}"
    subject = unique("exim-mixed")
    post = make_post("fay@example.org", mlist.posting_address, subject=subject)

    assert exim.send("fay@example.org", [mlist.posting_address, other], post) is None

    wait_for(lambda: copies(exim, subject, "fay@example.org") and copies(exim, subject, other))
    exim.exim.wait_queue_empty()
    assert copies(exim, subject, "fay@example.org") == 1
    assert copies(exim, subject, other) == 1


def test_a_locally_submitted_post_is_decided_by_the_lmtp_transport(exim: EximLab) -> None:
    mlist = make_list(exim, "gus@example.org", "hal@example.org")
    subject = unique("exim-local")
    post = make_post("gus@example.org", mlist.posting_address, subject=subject)
    proc = subprocess.run(
        [str(exim.exim.binary), "-C", str(exim.exim.conf), "-odi", "-f", "gus@example.org",
         mlist.posting_address],
        input=post, capture_output=True, env=exim.exim.env(), timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr

    waits(exim, lambda: copies(exim, subject, "hal@example.org"))
    line = f"<{mlist.posting_address}> R=mtaplugin_lists T=mtaplugin_lmtp"
    waits(exim, lambda: line in exim.exim.log())
    assert copies(exim, subject, "gus@example.org") == 1


# --- the database cannot answer ------------------------------------------------------------
class Outage:
    """Makes the list database unable to answer: SQLite locked by another writer for
    longer than database.timeout, or the PostgreSQL server stopped."""

    def __init__(self, url: str, server: PostgresServer | None) -> None:
        self.url = url
        self.server = server
        self.lock: sqlite3.Connection | None = None

    def __enter__(self) -> None:
        if self.server is not None:
            self.server.stop()
        else:
            self.lock = sqlite3.connect(self.url[len("sqlite:///") :], isolation_level=None)
            self.lock.execute("BEGIN EXCLUSIVE")

    def __exit__(self, *exc: object) -> None:
        if self.server is not None:
            self.server.resume()
        elif self.lock is not None:
            self.lock.execute("ROLLBACK")
            self.lock.close()


@pytest.fixture(scope="module", params=BACKENDS)
def exim_outage(request: pytest.FixtureRequest, lab_root: Path) -> Iterator[tuple[Outage, EximLab]]:
    """A lab whose database can be made to fail (PostgreSQL: a server of its own)."""
    server = None
    if request.param == "postgresql":
        server = PostgresServer(lab_root / "pg-exim-stoppable").start()
        server.execute("CREATE DATABASE lists")
        url = server.url("lists")
        upgrade(url)
    else:
        url = fresh_database(request, "sqlite", lab_root)
    engine = make_engine(url)
    with sessionmaker_for(engine).begin() as s:
        domains.create(s, "stopped.test")
        members.add(s, lists.create(s, "outage@stopped.test"), "ann@example.org")
    engine.dispose()
    name = f"exim-outage-{request.param}"
    lab = EximLab(
        root=lab_root / name, database_url=url, name=name, extra_settings=dns_settings(request)
    )
    with lab:
        yield Outage(url, server), lab
    if server is not None:
        server.stop()


def test_database_outage_gives_4xx_and_the_retry_is_delivered(exim_outage) -> None:
    outage, lab = exim_outage
    post = make_post("ann@example.org", "outage@stopped.test", subject="during the outage")
    with outage:
        refused = lab.send("ann@example.org", ["outage@stopped.test"], post)
    assert refused is not None and 400 <= refused.code < 500, refused
    assert refused.stage in {"rcpt", "data"}
    assert "list database" in refused.text
    assert not lab.sink.to("ann@example.org")

    # The sender's MTA retries: the same post now goes through.
    attempts: list[object] = []

    def retried() -> bool:
        attempts.append(lab.send("ann@example.org", ["outage@stopped.test"], post))
        return attempts[-1] is None

    wait_for(retried, timeout=90, interval=2)
    waits(lab, lambda: lab.sink.to("ann@example.org"))
    assert b"during the outage" in lab.sink.to("ann@example.org")[0].data


# --- the pipe variant, decided at delivery ----------------------------------------------------
def test_pipe_delivers_a_member_post_to_every_member(exim_pipe: EximLab) -> None:
    mlist = make_list(exim_pipe, "jo@example.org", "kim@example.org")
    subject = unique("pipe-post")
    post = make_post("jo@example.org", mlist.posting_address, subject=subject)

    assert exim_pipe.send("jo@example.org", [mlist.posting_address], post) is None

    waits(exim_pipe, lambda: copies(exim_pipe, subject, "kim@example.org"))
    assert copies(exim_pipe, subject, "jo@example.org") == 1
    # (Exim logs the pipe's delivery once the command has exited: maybe after the copy.)
    waits(exim_pipe, lambda: "R=mtaplugin_lists T=mtaplugin_pipe" in exim_pipe.exim.log())


def test_pipe_refusal_is_a_bounce_with_the_rule(exim_pipe: EximLab) -> None:
    mlist = make_list(exim_pipe, "lou@example.org", default_nonmember_action=Action.reject)
    subject = unique("pipe-refused")
    sender = f"{unique('nonmember')}@example.com"
    post = make_post(sender, mlist.posting_address, subject=subject)

    # Without the ACLs Exim has said 250 before anyone decided ...
    assert exim_pipe.send(sender, [mlist.posting_address], post) is None

    # ... so the refusal can only be a bounce (exit 77, EX_NOPERM), with mtaplugin's text.
    waits(exim_pipe, lambda: exim_pipe.sink.to(sender))
    bounce = exim_pipe.sink.to(sender)[0]
    assert bounce.mail_from in {"", "<>"}
    assert b"nonmember-moderation" in bounce.data
    assert not copies(exim_pipe, subject, "lou@example.org")
