"""Digests: posts kept at the archive-copy point, built (MIME, RFC 1153 plain, summary) and
sent through the outbox in one transaction with the removal of what they hold."""

from __future__ import annotations

import email
import re
from datetime import UTC, datetime, timedelta
from email.message import Message

import pytest
from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.clock import ManualClock
from mtaplugin.config import OutboxSettings, Settings
from mtaplugin.copies import unsubscribe
from mtaplugin.digests import build, send, store
from mtaplugin.engine import ListEngine
from mtaplugin.enums import DeliveryMode, DeliveryStatus, DigestFrequency, MemberRole
from mtaplugin.manage import held as held_ops
from mtaplugin.manage import lists, members
from mtaplugin.model import DigestEntry, Domain, OutboxMessage
from mtaplugin.posting.verdict import Accept
from mtaplugin.relay.deliver import Delivery
from mtaplugin.testing.transport import FakeTransport
from mtaplugin.vocabulary.envelope import Envelope
from mtaplugin.vocabulary.job import JobContext
from mtaplugin.wiring import build as build_world
from mtaplugin.worker.registry import SEND_DIGESTS
from tests import helpers
from tests.helpers import detached_list, drain, make_post
from tests.unit.sites import Roster, Site

START = datetime(2026, 12, 4, 9, 0, tzinfo=UTC)

PEOPLE: tuple[tuple[str, MemberRole], ...] = (
    ("anne@example.com", MemberRole.member),
    ("bob@example.com", MemberRole.member),
    ("dora@example.com", MemberRole.member),
    ("paul@example.com", MemberRole.member),
    ("sam@example.com", MemberRole.member),
    ("olive@example.com", MemberRole.owner),
)
MODES = {
    "dora@example.com": DeliveryMode.mime_digests,
    "paul@example.com": DeliveryMode.plaintext_digests,
    "sam@example.com": DeliveryMode.summary_digests,
}


@pytest.fixture
def site_roster() -> Roster:
    return Roster(PEOPLE)


def set_modes(site: Site, modes: dict[str, DeliveryMode], list_name: str = "team") -> None:
    with site.sessions.begin() as s:
        mlist = lists.get(s, site.addr(list_name))
        for email_, mode in modes.items():
            member = members.get(s, mlist, email_, MemberRole.member)
            member.delivery_mode = mode


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
def engine(site: Site, clock: ManualClock) -> ListEngine:
    set_modes(site, MODES)
    return ListEngine(site.sessions, site_owner="postmaster@site.test", clock=clock)


def envelope(rcpt: str, sender: str) -> Envelope:
    return helpers.envelope(rcpt, mail_from=sender, queue_id="Q1")


def post(engine: ListEngine, site: Site, subject: str, body: str = "Hello, list.\n") -> Accept:
    raw = make_post("Anne Example <anne@example.com>", site.address, subject, body)
    verdict = engine.decide(envelope(site.address, "anne@example.com"), raw)
    assert isinstance(verdict, Accept), verdict
    drain(site.sessions)  # the worker, a moment after the answer
    return verdict


def waiting(sessions: sessionmaker[Session], site: Site) -> list[DigestEntry]:
    with sessions() as s:
        rows = store.entries(s, site.mlist().id)
        s.expunge_all()
        return rows


def send_now(site: Site, now: datetime = START, secret: str = "") -> send.Sent:
    with site.sessions.begin() as s:
        return send.send(s, lists.get(s, site.address), now, secret_key=secret)


def digests(site: Site) -> list[OutboxMessage]:
    return [r for r in site.outbox() if r.kind == "digest"]


def for_member(site: Site, who: str) -> Message:
    (row,) = [r for r in digests(site) if who in r.recipients]
    return email.message_from_bytes(row.raw)


def test_posts_reach_regular_members_and_wait_for_the_digest(engine: ListEngine, site: Site):
    verdict = post(engine, site, "first")
    # In place: the regular members only.
    assert set(verdict.edits.add_recipients) == {"anne@example.com", "bob@example.com"}
    post(engine, site, "second")
    rows = waiting(site.sessions, site)
    assert [r.subject for r in rows] == ["first", "second"]
    # The archive copy: the list's headers, no footer.
    assert b"List-Id:" in rows[0].raw
    assert b"mailing list --" not in rows[0].raw
    assert digests(site) == []


def test_send_builds_one_digest_per_kind_in_order(engine: ListEngine, site: Site):
    for subject in ("one", "two", "three"):
        post(engine, site, subject)
    sent = send_now(site)
    assert sent.issue is not None and (sent.issue.volume, sent.issue.number) == (1, 1)
    assert (sent.posts, sent.recipients) == (3, 3)
    assert waiting(site.sessions, site) == []
    rows = digests(site)
    assert sorted(r for row in rows for r in row.recipients) == sorted(MODES)
    for row in rows:
        assert row.mail_from == f"team-bounces@{site.host}"
        assert row.seal is not None and row.seal["seal_host"] == site.host

    mime = for_member(site, "dora@example.com")
    assert mime["Subject"] == "Team Digest, Vol 1, Issue 1"
    assert mime["List-Id"] and mime["From"] == f"team-request@{site.host}"
    assert mime.get_content_type() == "multipart/mixed"
    parts = mime.get_payload()
    assert isinstance(parts, list)
    masthead = parts[0].get_payload(decode=True).decode()
    assert "Send posts for the" in masthead and f"team@{site.host}" in masthead
    toc = parts[1].get_payload(decode=True).decode()
    assert toc.index("one") < toc.index("two") < toc.index("three")
    assert "Anne Example" in toc
    (inner,) = [p for p in parts if p.get_content_type() == "multipart/digest"]
    posts = inner.get_payload()
    assert [p.get_content_type() for p in posts] == ["message/rfc822"] * 3
    assert [p.get_payload()[0]["Subject"] for p in posts] == [
        "[Team] one",
        "[Team] two",
        "[Team] three",
    ]
    assert "[Team]" not in toc
    footer = parts[-1].get_payload(decode=True).decode()
    assert f"team-leave@{site.host}" in footer

    plain = for_member(site, "paul@example.com")
    assert plain.get_content_type() == "text/plain"
    text = plain.get_payload(decode=True).decode().replace("\r\n", "\n")
    assert "Today's Topics:" in text
    assert "-" * 70 in text and "\n" + "-" * 30 + "\n" in text
    assert text.index("Message: 1") < text.index("Message: 2") < text.index("Message: 3")
    assert "Subject: [Team] two" in text and "Hello, list." in text
    assert "End of Team Digest, Vol 1, Issue 1" in text

    summary = for_member(site, "sam@example.com").get_payload(decode=True).decode()
    assert "Today's Topics:" in summary and "Subject: three" in summary
    assert "Hello, list." not in summary

    with site.sessions() as s:
        mlist = lists.get(s, site.address)
        assert (mlist.volume, mlist.next_digest_number) == (1, 2)
        assert mlist.digest_last_sent_at is not None


def test_nothing_waiting_sends_nothing(engine: ListEngine, site: Site):
    sent = send_now(site)
    assert sent.issue is None and "no post" in sent.note
    assert digests(site) == []


def test_a_list_without_digest_members_keeps_nothing(site: Site, clock: ManualClock):
    engine = ListEngine(site.sessions, site_owner="postmaster@site.test", clock=clock)
    post(engine, site, "no digest here")
    assert waiting(site.sessions, site) == []
    assert engine.snapshots.cached(site.mlist().id, 0).digest_members == 0  # type: ignore[union-attr]


def test_size_threshold_sends_with_the_post(engine: ListEngine, site: Site):
    site.update(digest_size_threshold=1)
    post(engine, site, "small")
    assert digests(site) == [] and len(waiting(site.sessions, site)) == 1
    post(engine, site, "big", body="x" * 60 + "\n" * 20)
    assert waiting(site.sessions, site) == []
    (row,) = [r for r in digests(site) if "dora@example.com" in r.recipients]
    msg = email.message_from_bytes(row.raw)
    inner = next(p for p in msg.get_payload() if p.get_content_type() == "multipart/digest")
    subjects = [p.get_payload()[0]["Subject"] for p in inner.get_payload()]
    assert subjects == ["[Team] small", "[Team] big"]


def test_no_digest_member_left_drops_the_waiting_posts(engine: ListEngine, site: Site):
    post(engine, site, "kept")
    with site.sessions.begin() as s:  # the digest members leave the list
        for who in MODES:
            members.remove(s, lists.get(s, site.address), who, MemberRole.member)
    sent = send_now(site)
    assert sent.issue is None and sent.dropped == 1 and "no digest member" in sent.note
    assert waiting(site.sessions, site) == [] and digests(site) == []
    with site.sessions() as s:
        assert lists.get(s, site.address).next_digest_number == 1


def test_a_disabled_digest_member_gets_none(engine: ListEngine, site: Site):
    post(engine, site, "p")
    with site.sessions.begin() as s:
        m = members.get(s, lists.get(s, site.address), "paul@example.com", MemberRole.member)
        m.delivery_status = DeliveryStatus.by_bounces
    send_now(site)
    assert all("paul@example.com" not in r.recipients for r in digests(site))
    assert any("dora@example.com" in r.recipients for r in digests(site))


def test_digests_disabled_gives_digest_members_regular_copies(engine: ListEngine, site: Site):
    site.update(digests_enabled=False)
    verdict = post(engine, site, "regular for all")
    assert "dora@example.com" in verdict.edits.add_recipients
    assert waiting(site.sessions, site) == []


def test_a_race_sends_nothing_twice(engine: ListEngine, site: Site):
    post(engine, site, "once")
    with site.sessions.begin() as s:
        mlist = lists.get(s, site.address)
        # Another process sends the digest between this one's read and its delete.
        original = store.entries
        rows = original(s, mlist.id)
        s.execute(DigestEntry.__table__.delete())
        store.entries = lambda *_a: rows  # type: ignore[assignment]
        try:
            with pytest.raises(send.DigestRace):
                send.send(s, mlist, START)
        finally:
            store.entries = original
        s.rollback()
    assert len(waiting(site.sessions, site)) == 1
    assert digests(site) == []


def test_a_send_cut_short_leaves_every_post_for_the_next(
    engine: ListEngine, site: Site, monkeypatch: pytest.MonkeyPatch
):
    post(engine, site, "a")
    post(engine, site, "b")
    calls = []

    def dies(*args: object, **kw: object) -> object:
        calls.append(1)
        if len(calls) == 2:  # after the first kind was queued and the posts deleted
            raise RuntimeError("killed")
        return real(*args, **kw)

    real = send.outbox.enqueue
    monkeypatch.setattr(send.outbox, "enqueue", dies)
    with pytest.raises(RuntimeError):
        send_now(site)
    monkeypatch.undo()
    # Nothing of the cut-short send stays: the posts wait, no digest is queued.
    assert [e.subject for e in waiting(site.sessions, site)] == ["a", "b"]
    assert digests(site) == []
    send_now(site)
    assert len(digests(site)) == 3 and waiting(site.sessions, site) == []
    with site.sessions() as s:
        assert lists.get(s, site.address).next_digest_number == 2


def test_a_member_leaving_digests_gets_one_last_digest(engine: ListEngine, site: Site):
    set_modes(site, {"sam@example.com": DeliveryMode.regular})  # nothing waits: no last one
    post(engine, site, "owed to dora")
    set_modes(site, {"dora@example.com": DeliveryMode.regular})
    verdict = post(engine, site, "regular for dora")
    assert "dora@example.com" in verdict.edits.add_recipients
    sent = send_now(site)
    assert sent.recipients == 2  # paul, and dora once more
    (row,) = [r for r in digests(site) if "dora@example.com" in r.recipients]
    assert b"owed to dora" in row.raw
    assert all("sam@example.com" not in r.recipients for r in digests(site))
    # Only once.
    post(engine, site, "later")
    send_now(site, START + timedelta(hours=1))
    assert len([r for r in digests(site) if "dora@example.com" in r.recipients]) == 1


def test_a_member_leaving_digests_twice_gets_the_last_digest_once(engine: ListEngine, site: Site):
    """Dora leaves MIME digests, comes back to plain ones and leaves again before the
    digest goes out: two "one last digest" rows, one digest for her (in the last kind)."""
    post(engine, site, "owed to dora")
    set_modes(site, {"dora@example.com": DeliveryMode.regular})
    set_modes(site, {"dora@example.com": DeliveryMode.plaintext_digests})
    set_modes(site, {"dora@example.com": DeliveryMode.regular})
    sent = send_now(site)
    assert sent.recipients == 3  # paul, sam, and dora once more
    dora = [r for r in digests(site) for rcpt in r.recipients if rcpt == "dora@example.com"]
    assert len(dora) == 1
    assert "plain" in email.message_from_bytes(dora[0].raw).get_content_type()


def test_posts_kept_before_digests_were_turned_off_still_go(engine: ListEngine, site: Site):
    post(engine, site, "kept")
    site.update(digests_enabled=False)
    sent = send_now(site)
    assert sent.posts == 1 and sent.recipients == 3


def test_a_list_of_digest_members_only_keeps_the_post(engine: ListEngine, site: Site):
    set_modes(site, {"anne@example.com": DeliveryMode.mime_digests})
    set_modes(site, {"bob@example.com": DeliveryMode.mime_digests})
    raw = make_post("anne@example.com", site.address, "only digests")
    verdict = engine.decide(envelope(site.address, "anne@example.com"), raw)
    # Answered 250; nobody gets a regular copy, the list address is not delivered as is.
    assert not isinstance(verdict, Accept) or not verdict.edits.add_recipients
    drain(site.sessions)
    assert [e.subject for e in waiting(site.sessions, site)] == ["only digests"]


def test_released_hold_joins_the_digest(engine: ListEngine, site: Site):
    site.update(default_member_action="hold")
    raw = make_post("anne@example.com", site.address, "held one")
    engine.decide(envelope(site.address, "anne@example.com"), raw)
    (held,) = site.held()
    with site.sessions.begin() as s:
        held_ops.approve(
            held_ops.Moderator(s, lists.get(s, site.address), "olive@example.com"), held.id
        )
    drain(site.sessions)
    assert [r.subject for r in waiting(site.sessions, site)] == ["held one"]


def test_one_click_digests_are_own_copies(engine: ListEngine, site: Site):
    post(engine, site, "p")
    with site.sessions.begin() as s:
        s.execute(
            update(Domain)
            .where(Domain.mail_host == site.host)
            .values(base_url="https://lists.test")
        )
    with site.sessions.begin() as s:
        mlist = lists.get(s, site.address)
        send.send(s, mlist, START, secret_key="s3cret")
    for row in digests(site):
        assert row.personalize is not None and row.personalize["digest"] is True
    # The worker makes each member's copy: its own link, and nothing else added.
    fake = FakeTransport()
    delivery = Delivery(site.sessions, OutboxSettings(), transport=fake, secret_key="s3cret")
    delivery.run()
    for who in MODES:
        (got,) = [m for m in fake.to(who) if f"team-request@{site.host}".encode() in m.data]
        msg = email.message_from_bytes(got.data)
        (link,) = re.findall(r"<(https://[^>]+)>", str(msg["List-Unsubscribe"]))
        token = link.rstrip("/").rsplit("/", 1)[-1]
        assert unsubscribe.verify("s3cret", token) == (site.list_id, who)
        assert msg["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
        assert got.data.count(b"To unsubscribe send an email") == 0  # no regular footer
        assert b"Digest, Vol 1, Issue 1" in got.data


def test_periodic_job_sends_lists_that_want_it(engine: ListEngine, site: Site, clock: ManualClock):
    post(engine, site, "daily")
    world = build_world(Settings(), db=site.sessions.kw["bind"], clock=clock)
    site.update(digest_send_periodic=False)
    ctx = JobContext(world, clock.advance(timedelta(days=1)))
    SEND_DIGESTS.run(ctx)
    assert digests(site) == []
    site.update(digest_send_periodic=True)
    assert SEND_DIGESTS.run(ctx) >= 1
    assert len(digests(site)) == 3 and waiting(site.sessions, site) == []


# --- pure parts ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("freq", "last", "now", "expected"),
    [
        (DigestFrequency.monthly, None, datetime(2026, 5, 1), (1, 2)),
        (DigestFrequency.monthly, datetime(2026, 4, 30), datetime(2026, 5, 1), (2, 1)),
        (DigestFrequency.monthly, datetime(2026, 5, 2), datetime(2026, 5, 30), (1, 2)),
        (DigestFrequency.yearly, datetime(2025, 12, 31), datetime(2026, 1, 1), (2, 1)),
        (DigestFrequency.quarterly, datetime(2026, 1, 5), datetime(2026, 3, 30), (1, 2)),
        (DigestFrequency.quarterly, datetime(2026, 3, 30), datetime(2026, 4, 1), (2, 1)),
        (DigestFrequency.weekly, datetime(2026, 12, 6), datetime(2026, 12, 7), (2, 1)),
        (DigestFrequency.daily, datetime(2026, 12, 6, 23), datetime(2026, 12, 7, 1), (2, 1)),
        (DigestFrequency.daily, datetime(2026, 12, 7, 1), datetime(2026, 12, 7, 23), (1, 2)),
    ],
)
def test_bump_as_mailman(freq, last, now, expected):
    mlist = detached_list(digest_volume_frequency=freq, digest_last_sent_at=last)
    mlist.volume, mlist.next_digest_number = 1, 1
    send.bump(mlist, now)
    assert (mlist.volume, mlist.next_digest_number) == expected
    assert mlist.digest_last_sent_at == now


def texts() -> build.Texts:
    return build.Texts("en", "MASTHEAD", "", "FOOTER")


def test_a_broken_post_is_still_in_both_digests():
    mlist = detached_list(list_name="t", mail_host="x.test", display_name="T")
    broken = (
        b"From: a@b.test\r\nSubject: broken\r\nContent-Type: multipart/mixed; boundary=zz\r\n"
        b"\r\n--zz\r\nContent-Type: text/plain; charset=nosuch\r\n\r\nstill here\r\n"
    )
    posts = [build.DigestPost.of(broken)]
    issue = build.Issue(1, 1, START)
    mime = email.message_from_bytes(
        build.build(DeliveryMode.mime_digests, mlist, issue, texts(), posts)
    )
    assert b"still here" in mime.as_bytes()
    plain = build.build(DeliveryMode.plaintext_digests, mlist, issue, texts(), posts)
    assert b"still here" in plain and b"Subject: broken" in plain


def test_an_attachment_is_named_in_the_plain_digest():
    mlist = detached_list(list_name="t", mail_host="x.test", display_name="T")
    from email.message import EmailMessage

    msg = EmailMessage()
    msg["From"], msg["Subject"] = "a@b.test", "with file"
    msg.set_content("see attached")
    msg.add_attachment(b"\x00" * 5000, maintype="application", subtype="pdf", filename="r.pdf")
    posts = [build.DigestPost.of(msg.as_bytes())]
    plain = build.build(
        DeliveryMode.plaintext_digests, mlist, build.Issue(1, 1, START), texts(), posts
    )
    body = email.message_from_bytes(plain).get_payload(decode=True).decode()
    assert "see attached" in body and "application/pdf" in body and "r.pdf" in body


def test_a_non_ascii_subject_and_text():
    mlist = detached_list(list_name="t", mail_host="x.test", display_name="Équipe")
    raw = make_post("Zoë <z@b.test>", "t@x.test", "Grüße", "Schöne Grüße\n")
    posts = [build.DigestPost.of(raw)]
    out = build.build(
        DeliveryMode.plaintext_digests, mlist, build.Issue(2, 7, START), texts(), posts
    )
    msg = email.message_from_bytes(out)
    assert str(email.header.make_header(email.header.decode_header(msg["Subject"]))) == (
        "Équipe Digest, Vol 2, Issue 7"
    )
    body = msg.get_payload(decode=True).decode("utf-8")
    assert "Schöne Grüße" in body and "Grüße (Zoë)" in body


@pytest.mark.parametrize(
    ("subject", "prefix", "shown"),
    [
        ("[Team] hello", "[Team] ", "hello"),
        ("Re: [Team] hello", "[Team] ", "Re: hello"),
        ("[Team 12] hello", "[Team %d] ", "hello"),
        ("hello [Team]", "[Team] ", "hello [Team]"),
        ("[Other] hello", "[Team] ", "[Other] hello"),
    ],
)
def test_the_table_of_contents_leaves_the_prefix_out(subject, prefix, shown):
    raw = make_post("Ann <a@b.test>", "t@x.test", subject)
    assert build.DigestPost.of(raw, prefix).subject == shown
