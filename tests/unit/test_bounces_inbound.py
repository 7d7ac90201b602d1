"""Bounces decided inline (mtaplugin.bounces.inbound through ListEngine.decide): the events
recorded for members, the forwarding of what names no member, and the bad input of
issue 15 (no recipient, a forged DSN for another list's member, a DSN over the size limit,
a bounce to a deleted list)."""

from __future__ import annotations

import email
import email.policy
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from mtaplugin.bounces import dsn, inbound
from mtaplugin.clock import ManualClock
from mtaplugin.engine import ListEngine
from mtaplugin.enums import (
    BounceContext,
    BounceKind,
    RequestType,
    UnrecognizedBounceDisposition,
)
from mtaplugin.manage import lists
from mtaplugin.model import BounceEvent, Member
from mtaplugin.posting.verdict import Accept, Discard, TempFail
from mtaplugin.vocabulary.addresses import Subaddress
from tests.helpers import envelope, make_post
from tests.unit.dbutil import pending_request
from tests.unit.sites import Roster, Site

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "bounces"
NOW = datetime(2026, 3, 2, 9, 30, tzinfo=UTC)


@pytest.fixture
def site_roster() -> Roster:
    # ``strict`` is another list of the site, with a member of its own
    return Roster(strict=("zed@example.com",))


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(NOW)


@pytest.fixture
def engine(site: Site, clock: ManualClock) -> ListEngine:
    return ListEngine(site.sessions, site_owner="postmaster@site.test", clock=clock)


def report(
    *failed: str,
    status: str = "5.1.1",
    action: str = "failed",
    words: str = "550 5.1.1 User unknown",
    body: str = "",
) -> bytes:
    """A Postfix-shaped DSN naming ``failed``."""
    blocks = "".join(
        f"Final-Recipient: rfc822; {who}\nOriginal-Recipient: rfc822;{who}\n"
        f"Action: {action}\nStatus: {status}\nDiagnostic-Code: smtp; {words}\n\n"
        for who in failed
    )
    return (
        "From: MAILER-DAEMON@mx.example.net (Mail Delivery System)\n"
        "To: team-bounces@lists.example\nSubject: Undelivered Mail Returned to Sender\n"
        "Message-ID: <dsn-1@mx.example.net>\nMIME-Version: 1.0\n"
        'Content-Type: multipart/report; report-type=delivery-status; boundary="B"\n\n'
        "--B\nContent-Type: text/plain\n\nThe mail system\n\n"
        "--B\nContent-Type: message/delivery-status\n\nReporting-MTA: dns; mx.example.net\n\n"
        f"{blocks}--B\nContent-Type: text/plain\n\n{body}\n--B--\n"
    ).encode()


def bounce(engine: ListEngine, site: Site, raw: bytes, local: str = "team-bounces") -> object:
    return engine.decide(envelope(site.addr(local), mail_from=""), raw)


def events(site: Site, list_name: str = "team") -> list[BounceEvent]:
    with site.sessions() as s:
        pk = lists.get(s, site.addr(list_name)).id
        query = select(BounceEvent).where(BounceEvent.mailing_list_id == pk)
        found = list(s.scalars(query.order_by(BounceEvent.id)))
        s.expunge_all()
        return found


def member_events(site: Site, list_name: str = "team") -> list[BounceEvent]:
    return [e for e in events(site, list_name) if not e.processed]


def scores(site: Site) -> list[int]:
    with site.sessions() as s:
        return list(s.scalars(select(Member.bounce_score)))


# --- members' bounces -------------------------------------------------------------------------


def test_a_dsn_for_a_member_records_one_event_in_the_decision(
    engine: ListEngine, site: Site
) -> None:
    verdict = bounce(engine, site, report("Anne@Example.com"))
    # the -bounces recipient is dropped: nothing is delivered to a mailbox
    assert isinstance(verdict, Discard)
    (event,) = events(site)
    assert event.email == "anne@example.com"
    assert (event.kind, event.status, event.context) == (
        BounceKind.hard,
        "5.1.1",
        BounceContext.normal,
    )
    assert event.diagnostic == "550 5.1.1 User unknown"
    assert event.message_id == "<dsn-1@mx.example.net>"
    assert event.at == NOW
    assert not event.processed
    assert event.raw is None
    assert site.outbox() == []
    # scores are another job's: this one never touches them
    assert set(scores(site)) == {0}


def test_the_verp_address_names_the_member(engine: ListEngine, site: Site) -> None:
    # the DSN names the member's forwarding target, the return path the member
    raw = report("anne.real@elsewhere.example")
    bounce(engine, site, raw, local="team-bounces+anne=example.com")
    (event,) = events(site)
    assert (event.email, event.kind, event.status) == ("anne@example.com", BounceKind.hard, "5.1.1")


def test_verp_to_an_unparsable_report_still_counts_but_a_vacation_reply_does_not(
    engine: ListEngine, site: Site
) -> None:
    unparsable = (CORPUS / "no_recipient.eml").read_bytes()
    vacation = (CORPUS / "vacation_reply.eml").read_bytes()
    bounce(engine, site, unparsable, "team-bounces+bob=example.com")
    bounce(engine, site, vacation, "team-bounces+anne=example.com")
    (event,) = events(site)
    assert (event.email, event.kind, event.status) == ("bob@example.com", BounceKind.hard, "")
    assert site.outbox() == []


@pytest.mark.parametrize(
    ("status", "words", "kind"),
    [
        ("5.7.1", "554 5.7.1 blocked using Spamhaus", BounceKind.policy),
        ("5.2.2", "552 5.2.2 mailbox full", BounceKind.delayed),
        ("4.4.1", "connect timed out", BounceKind.delayed),
    ],
)
def test_policy_refusals_and_delays_are_recorded_with_their_kind(
    engine: ListEngine, site: Site, status: str, words: str, kind: BounceKind
) -> None:
    action = "delayed" if status.startswith("4") else "failed"
    bounce(engine, site, report("bob@example.com", status=status, action=action, words=words))
    (event,) = events(site)
    assert (event.email, event.kind, event.status) == ("bob@example.com", kind, status)


def test_one_event_per_member_and_strangers_are_left_out(engine: ListEngine, site: Site) -> None:
    raw = report("anne@example.com", "bob@example.com", "nobody@example.com")
    bounce(engine, site, raw)
    assert [e.email for e in events(site)] == ["anne@example.com", "bob@example.com"]
    assert site.outbox() == []


def test_a_probe_bounce_names_the_probed_member(
    engine: ListEngine, site: Site, clock: ManualClock
) -> None:
    with site.sessions.begin() as s:
        mlist = lists.get(s, site.address)
        week = timedelta(days=7)
        probe = pending_request(
            s, RequestType.probe, "bob@example.com", clock(), week, mailing_list_id=mlist.id
        )
        token = probe.token
    bounce(engine, site, report("bob@example.com"), local=f"team-bounces+{token}")
    (event,) = events(site)
    assert (event.email, event.context, event.processed) == (
        "bob@example.com",
        BounceContext.probe,
        False,
    )


def test_an_expired_probe_token_falls_back_to_the_dsn(
    engine: ListEngine, site: Site, clock: ManualClock
) -> None:
    bounce(engine, site, report("bob@example.com"), local="team-bounces+" + "ab" * 20)
    (event,) = events(site)
    assert (event.email, event.context) == ("bob@example.com", BounceContext.normal)


def test_with_other_recipients_only_the_bounces_address_is_removed(
    engine: ListEngine, site: Site
) -> None:
    env = envelope(site.addr("team-bounces"), "postmaster@elsewhere.example", mail_from="")
    verdict = engine.decide(env, report("anne@example.com"))
    assert isinstance(verdict, Accept)
    assert verdict.edits.del_recipients == (f"<{site.addr('team-bounces')}>",)
    assert verdict.edits.add_recipients == ()
    assert [e.email for e in events(site)] == ["anne@example.com"]


# --- what names no member ---------------------------------------------------------------------


def forwarded(site: Site) -> tuple[list[str], email.message.Message]:
    (row,) = site.outbox()
    assert row.mail_from == ""  # a notice about a bounce never bounces back
    return row.recipients, email.message_from_bytes(row.raw, policy=email.policy.default)


def test_a_dsn_naming_no_member_goes_to_the_administrators(engine: ListEngine, site: Site) -> None:
    raw = (CORPUS / "qmail_no_mailbox.eml").read_bytes()
    assert isinstance(bounce(engine, site, raw), Discard)
    to, notice = forwarded(site)
    assert sorted(to) == ["mod@example.com", "olive@example.com"]
    assert "Uncaught bounce" in str(notice["Subject"])
    body = notice.get_body()  # type: ignore[attr-defined]
    assert "no member address could be found" in " ".join(body.get_content().split())
    (attached,) = [p for p in notice.walk() if p.get_content_type() == "message/rfc822"]
    # the bounce itself, readable: message/rfc822 is never base64 (RFC 2046 5.2.1); this
    # bounce is all ASCII, so 7bit
    assert attached["Content-Transfer-Encoding"] == "7bit"
    (bounced,) = attached.get_payload()
    assert bounced["Subject"] == "failure notice"
    assert "qmail-send program" in bounced.get_content()
    (event,) = events(site)
    assert (event.email, event.processed) == ("", True)
    assert event.raw == raw
    assert "frank@oldhost.example" in event.diagnostic


def test_a_forged_dsn_naming_a_member_of_another_list_records_nothing_for_them(
    engine: ListEngine, site: Site
) -> None:
    bounce(engine, site, report("zed@example.com"))
    assert member_events(site) == []
    assert events(site, "strict") == []
    to, _notice = forwarded(site)
    assert "zed@example.com" not in to


def test_an_owner_or_moderator_is_no_member_here(engine: ListEngine, site: Site) -> None:
    bounce(engine, site, report("olive@example.com", "mod@example.com"))
    assert member_events(site) == []
    forwarded(site)


def test_verp_naming_a_nonmember_is_forwarded(engine: ListEngine, site: Site) -> None:
    bounce(engine, site, report("x@example.com"), local="team-bounces+zed=example.com")
    assert member_events(site) == []
    forwarded(site)


def test_a_dsn_with_no_recipient_is_forwarded(engine: ListEngine, site: Site) -> None:
    bounce(engine, site, (CORPUS / "no_recipient.eml").read_bytes())
    assert member_events(site) == []
    forwarded(site)


@pytest.mark.parametrize(
    ("disposition", "to"),
    [
        (UnrecognizedBounceDisposition.site_owner, ["postmaster@site.test"]),
        (UnrecognizedBounceDisposition.discard, None),
    ],
)
def test_forward_unrecognized_bounces_to(
    engine: ListEngine,
    site: Site,
    disposition: UnrecognizedBounceDisposition,
    to: list[str] | None,
) -> None:
    site.update(forward_unrecognized_bounces_to=disposition)
    bounce(engine, site, (CORPUS / "no_recipient.eml").read_bytes())
    if to is None:
        assert site.outbox() == []
    else:
        assert forwarded(site)[0] == to
    (event,) = events(site)
    assert event.processed and event.raw is not None


def test_an_auto_reply_to_the_bounces_address_is_ignored(engine: ListEngine, site: Site) -> None:
    bounce(engine, site, (CORPUS / "vacation_reply.eml").read_bytes())
    assert events(site) == []
    assert site.outbox() == []


def test_with_bounce_processing_off_nothing_is_recorded_nor_forwarded(
    engine: ListEngine, site: Site
) -> None:
    site.update(process_bounces=False)
    for raw in (report("anne@example.com"), (CORPUS / "no_recipient.eml").read_bytes()):
        assert isinstance(bounce(engine, site, raw), Discard)
    assert events(site) == []
    assert site.outbox() == []


# --- size, deleted lists ----------------------------------------------------------------------


def test_a_dsn_over_the_size_limit_is_decided_and_what_is_kept_is_cut(
    engine: ListEngine, site: Site
) -> None:
    site.update(max_message_size=1)  # KiB
    big = "x" * 70 + "\n"
    assert isinstance(bounce(engine, site, report("anne@example.com", body=big * 200)), Discard)
    assert [e.email for e in member_events(site)] == ["anne@example.com"]
    raw = (CORPUS / "no_recipient.eml").read_bytes() + big.encode() * 200
    bounce(engine, site, raw)
    (kept,) = [e for e in events(site) if e.processed]
    assert kept.raw is not None and len(kept.raw) < 1100
    assert b"bytes not kept" in kept.raw


def test_a_bounce_to_a_deleted_list_is_refused_at_rcpt(engine: ListEngine, site: Site) -> None:
    before = engine.check_recipient(f"<{site.addr('strict-bounces+zed=example.com')}>")
    assert (before.reply, before.subaddress) == (None, Subaddress.bounces)
    with site.sessions.begin() as s:
        lists.remove(s, site.addr("strict"))
    for local in ("strict-bounces", "strict-bounces+zed=example.com"):
        check = engine.check_recipient(f"<{site.addr(local)}>")
        assert check.reply is not None
        assert (check.reply.code, check.reply.enhanced) == (550, "5.1.1")


# --- the pure decision ------------------------------------------------------------------------


def test_decide_is_pure_and_names_its_reason() -> None:
    members = {"anne@example.com"}.__contains__
    parsed = dsn.parse(report("anne@example.com", "zed@example.com"))
    decision = inbound.decide(parsed, members)
    assert [b.email for b in decision.events] == ["anne@example.com"]
    assert not decision.forward and "zed@example.com" in decision.why
    off = inbound.decide(parsed, members, process_bounces=False)
    assert off.events == () and not off.forward and "off" in off.why


def test_a_failure_half_way_writes_nothing_and_asks_for_a_retry(
    engine: ListEngine, site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> bytes:
        raise RuntimeError("template store gone")

    monkeypatch.setattr(inbound, "unrecognized_bounce_notice", broken)
    # a member's event and a stranger's forwarding in one transaction: the event was
    # added before the forwarding failed
    env = envelope(site.addr("team-bounces"), site.addr("team-bounces+zed=example.com"))
    verdict = engine.decide(env, report("anne@example.com"))
    assert isinstance(verdict, TempFail)
    assert verdict.reply.code == 451
    assert events(site) == []
    assert site.outbox() == []


def test_a_persons_mail_to_the_bounces_address_names_nobody(engine: ListEngine, site: Site) -> None:
    # bounce phrases in a plain message from a person: flufl.bounce's heuristics would
    # find anne@ in it, but it is no report and was not sent from <>
    text = (
        "Hi. This is the qmail-send program at example.net.\n"
        "I'm afraid I wasn't able to deliver your message to the following addresses.\n\n"
        "<anne@example.com>:\nSorry, no mailbox here by that name. (#5.1.1)\n"
    )
    raw = make_post("mallory@example.net", site.addr("team-bounces"), body=text)
    env = envelope(site.addr("team-bounces"), mail_from="mallory@example.net")
    assert dsn.parse(raw).failures  # what the heuristics see
    assert isinstance(engine.decide(env, raw), Discard)
    assert member_events(site) == []
    forwarded(site)
    # the same from <> is a bounce
    engine.decide(envelope(site.addr("team-bounces"), mail_from=""), raw)
    assert [e.email for e in member_events(site)] == ["anne@example.com"]
