"""The first path, end to end through a real private Postfix and the real milter."""

from __future__ import annotations

import sqlite3
import threading

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin.manage import domains, lists, members
from mtaplugin.model import HeldMessage
from mtaplugin.model.enums import Action, DeliveryMode, DeliveryStatus, MemberRole
from mtaplugin.testing import wait_for
from mtaplugin.testing.lab import Lab
from tests.helpers import make_post, unique
from tests.integration.conftest import DOMAIN, PASSTHROUGH, make_list


def delivered(lab: Lab, *emails: str, timeout: float = 30) -> None:
    wait_for(lambda: all(lab.sink.to(e) for e in emails), timeout=timeout)


def test_member_post_reaches_every_regular_member(lab: Lab, db: Session) -> None:
    mlist = make_list(db, "ann@example.org", "bob@example.org", "cy@example.net")
    digest = members.add(db, mlist, "dee@example.org")
    digest.delivery_mode = DeliveryMode.mime_digests
    disabled = members.add(db, mlist, "eve@example.org")
    disabled.delivery_status = DeliveryStatus.by_user
    db.commit()
    post = make_post("ann@example.org", mlist.posting_address, subject=unique("subject"))

    assert lab.send("ann@example.org", [mlist.posting_address], post) is None

    delivered(lab, "ann@example.org", "bob@example.org", "cy@example.net")
    got = [m for m in lab.sink.messages if post.split(b"Message-ID: ")[1][:20] in m.data]
    recipients = {r for m in got for r in m.recipients}
    assert recipients == {"ann@example.org", "bob@example.org", "cy@example.net"}
    # The list address itself was replaced, not delivered.
    assert mlist.posting_address not in lab.sink.recipients()

    # The post counter is written in batches, about once a second.
    def counted() -> bool:
        db.refresh(mlist)
        return mlist.post_id == 2

    wait_for(counted, timeout=10)


def test_unknown_list_in_a_list_domain_is_refused_at_rcpt(lab: Lab) -> None:
    refused = lab.send(
        "ann@example.org", [f"no-such-list@{DOMAIN}"], make_post("ann@example.org", "x")
    )
    assert refused is not None
    assert (refused.stage, refused.code) == ("rcpt", 550)
    assert "5.1.1" in refused.text
    assert "no such list" in refused.text


def test_passthrough_recipient_is_untouched_in_the_same_transaction(lab: Lab, db: Session) -> None:
    mlist = make_list(db, "fay@example.org")
    other = f"{unique('person')}@{PASSTHROUGH}"
    post = make_post("fay@example.org", mlist.posting_address)

    assert lab.send("fay@example.org", [mlist.posting_address, other], post) is None

    delivered(lab, "fay@example.org", other)
    assert lab.sink.to(other)[0].data.count(b"Hello, list.") == 1


def test_a_new_domain_is_accepted_at_once_and_others_are_not_relayed(lab: Lab, db: Session) -> None:
    host = f"{unique('dom')}.test"
    # (Another address than the list's: Postfix's resolver client caches its last answer.)
    refused = lab.send("gus@example.org", [f"info@{host}"], make_post("gus@example.org", "x"))
    assert refused is not None and refused.code == 554 and "Relay access denied" in refused.text

    domains.create(db, host)
    mlist = lists.create(db, f"team@{host}")
    members.add(db, mlist, "gus@example.org")
    db.commit()

    post = make_post("gus@example.org", f"team@{host}")
    assert lab.send("gus@example.org", [f"team@{host}"], post) is None
    delivered(lab, "gus@example.org")


def test_nonmember_post_is_held_with_the_raw_message(lab: Lab, db: Session) -> None:
    mlist = make_list(db, "hal@example.org")
    subject = unique("held")
    post = make_post("stranger@example.com", mlist.posting_address, subject=subject)

    assert lab.send("stranger@example.com", [mlist.posting_address], post) is None

    held = db.scalars(select(HeldMessage).where(HeldMessage.mailing_list_id == mlist.id)).all()
    assert len(held) == 1
    assert held[0].subject == subject
    assert held[0].sender == "stranger@example.com"
    assert f"Subject: {subject}".encode() in held[0].raw
    assert b"Hello, list." in held[0].raw
    assert any(rule == "nonmember-moderation" for rule, _text in held[0].reasons)
    assert not lab.sink.to("hal@example.org")


def test_a_reject_action_refuses_at_data_with_the_rule_named(lab: Lab, db: Session) -> None:
    mlist = make_list(db, "ida@example.org", default_nonmember_action=Action.reject)

    refused = lab.send(
        "spam@example.com",
        [mlist.posting_address],
        make_post("spam@example.com", mlist.posting_address),
    )

    assert refused is not None
    assert (refused.stage, refused.code) == ("data", 550)
    assert "5.7.1" in refused.text
    assert "nonmember-moderation" in refused.text
    assert mlist.fqdn_listname in refused.text


def test_owner_address_fans_out_to_owners_and_moderators(lab: Lab, db: Session) -> None:
    mlist = make_list(db, "jo@example.org")
    members.add(db, mlist, "boss@example.org", MemberRole.owner)
    members.add(db, mlist, "mod@example.org", MemberRole.moderator)
    db.commit()
    owner = mlist.posting_address.replace("@", "-owner@")

    assert lab.send("x@example.com", [owner], make_post("x@example.com", owner)) is None

    delivered(lab, "boss@example.org", "mod@example.org")
    assert not [m for m in lab.sink.to("jo@example.org") if b"x@example.com" in m.data]


def test_database_outage_between_rcpt_and_data_gives_451(lab: Lab, db: Session) -> None:
    mlist = make_list(db, "kim@example.org")
    post = make_post("kim@example.org", mlist.posting_address, subject=unique("outage"))
    with lab.connect() as smtp:
        assert smtp.mail("kim@example.org")[0] == 250
        assert smtp.rcpt(mlist.posting_address)[0] == 250
        with database_down(lab):
            code, text = smtp.data(post)
    assert code == 451, text
    assert b"4.3.0" in text
    assert not lab.sink.to("kim@example.org")
    # Once the database is back, the sender's retry goes through.
    assert lab.send("kim@example.org", [mlist.posting_address], post) is None
    delivered(lab, "kim@example.org")


class database_down:
    """Make the lab database unreachable for the milter, then bring it back."""

    def __init__(self, lab: Lab) -> None:
        self.lab = lab
        self.release = threading.Event()
        self.locked = threading.Event()

    def __enter__(self) -> None:
        url = self.lab.database_url
        if url.startswith("sqlite"):
            path = url.split("///", 1)[1]
            self.conn = sqlite3.connect(path, isolation_level=None)
            self.conn.execute("BEGIN EXCLUSIVE")
        else:
            from sqlalchemy.engine import make_url

            u = make_url(url)
            self.dbname = u.database
            self._pg(
                f"ALTER DATABASE {self.dbname} ALLOW_CONNECTIONS false",
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                f"WHERE datname = '{self.dbname}' AND application_name = 'mtaplugin'",
            )

    def _pg(self, *statements: str) -> None:
        import psycopg
        from sqlalchemy.engine import make_url

        u = make_url(self.lab.database_url)
        with psycopg.connect(
            f"host={u.host} port={u.port} user={u.username} dbname=postgres", autocommit=True
        ) as conn:
            for sql in statements:
                conn.execute(sql)  # type: ignore[arg-type]

    def __exit__(self, *exc: object) -> None:
        if self.lab.database_url.startswith("sqlite"):
            self.conn.execute("ROLLBACK")
            self.conn.close()
        else:
            self._pg(f"ALTER DATABASE {self.dbname} ALLOW_CONNECTIONS true")


@pytest.fixture(autouse=True)
def _logs(lab: Lab) -> object:
    """On failure, pytest shows this teardown output: the tails of both logs."""
    yield
    print("--- mtaplugin log ---\n" + lab.log()[-3000:])
    print("--- postfix log ---\n" + lab.postfix.log()[-3000:])
