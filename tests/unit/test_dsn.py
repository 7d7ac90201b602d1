"""mtaplugin.bounces.dsn: reading bounces, over tests/corpus/bounces (real-world shapes:
Postfix, Exim, Sendmail, qmail, Exchange/O365, Gmail, a delay notice, a vacation reply)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mtaplugin.bounces import dsn
from mtaplugin.enums import BounceKind

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "bounces"

HARD, POLICY, DELAYED = BounceKind.hard, BounceKind.policy, BounceKind.delayed


def read(name: str) -> dsn.Report:
    return dsn.parse((CORPUS / name).read_bytes())


@pytest.mark.parametrize(
    ("name", "email", "kind", "status", "words"),
    [
        ("postfix_user_unknown.eml", "anne@example.org", HARD, "5.1.1", "User unknown"),
        ("postfix_delayed.eml", "carol@slow.example", DELAYED, "4.4.1", "timed out"),
        # no DSN part: flufl.bounce finds the address (X-Failed-Recipients), the status and
        # the words are read from the lines after it
        ("exim_plain.eml", "dave@gone.example", HARD, "5.1.1", "No such user"),
        ("sendmail_user_unknown.eml", "erin@example.edu", HARD, "5.1.1", "User unknown"),
        ("qmail_no_mailbox.eml", "frank@oldhost.example", HARD, "5.1.1", "no mailbox"),
        ("o365_spam_block.eml", "grace@contoso.example", POLICY, "5.7.1", "Spamhaus"),
        ("gmail_mailbox_full.eml", "heidi@gmail.example", DELAYED, "5.2.2", "over quota"),
        # Status 5.0.0 gives way to the precise code quoted in Diagnostic-Code
        ("exchange_500_quoted.eml", "ivan@fabrikam.example", HARD, "5.1.10", "RecipientNotFound"),
    ],
)
def test_each_shape_names_its_recipient_and_kind(
    name: str, email: str, kind: BounceKind, status: str, words: str
) -> None:
    report = read(name)
    (failure,) = report.failures
    assert (failure.email, failure.kind, failure.status) == (email, kind, status)
    assert words in failure.diagnostic
    assert report.is_report and not report.auto_reply
    assert report.message_id.startswith("<") and report.message_id.endswith(">")


def test_original_recipient_comes_first_and_the_final_one_is_kept() -> None:
    (failure,) = read("exchange_500_quoted.eml").failures
    # Original-Recipient is what we sent to (lower-cased); Final-Recipient after aliasing
    assert failure.email == "ivan@fabrikam.example"
    assert failure.addresses == ("ivan@fabrikam.example", "ivan.petrov@mbx.fabrikam.example")


def test_a_bounce_with_no_recipient_gives_no_failure() -> None:
    report = read("no_recipient.eml")
    assert report.failures == ()
    assert report.is_report  # from MAILER-DAEMON
    assert not report.auto_reply


def test_a_vacation_reply_is_an_auto_reply_not_a_report() -> None:
    report = read("vacation_reply.eml")
    assert report.failures == ()
    assert report.auto_reply and not report.is_report


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"\x00\xff\xfe garbage",
        b"Content-Type: multipart/report; boundary=x\n\n--x\nContent-Type: message/delivery-status"
        b"\n\nFinal-Recipient: rfc822; \nAction: failed\n",
        b"Content-Type: message/delivery-status\n\nFinal-Recipient: rfc822;a@b.example\n"
        b"Action: failed\nStatus: 5.1.1\n",
        b"Content-Type: text/plain; charset=x-no-such-charset\nX-Failed-Recipients: a@b.example"
        b"\n\n\xe9\xe9 550 5.1.1\n",
    ],
)
def test_odd_input_never_raises(raw: bytes) -> None:
    report = dsn.parse(raw)
    assert all("@" in f.email for f in report.failures)


def test_an_unparsed_status_part_is_read_from_its_text() -> None:
    # a lone delivery-status part (no multipart/report around it)
    raw = (
        b"From: MAILER-DAEMON@x.example\nContent-Type: message/delivery-status\n\n"
        b"Reporting-MTA: dns; x.example\n\nFinal-Recipient: rfc822;A@B.example\n"
        b"Action: failed\nStatus: 5.1.1\n"
    )
    (failure,) = dsn.parse(raw).failures
    assert (failure.email, failure.kind, failure.status) == ("a@b.example", HARD, "5.1.1")


def test_success_notices_are_no_failures() -> None:
    raw = (
        b"Content-Type: multipart/report; report-type=delivery-status; boundary=b\n\n"
        b"--b\nContent-Type: message/delivery-status\n\nReporting-MTA: dns; x.example\n\n"
        b"Final-Recipient: rfc822; a@b.example\nAction: delivered\nStatus: 2.0.0\n\n"
        b"Final-Recipient: rfc822; c@d.example\nAction: expanded\nStatus: 2.0.0\n--b--\n"
    )
    assert dsn.parse(raw).failures == ()


@pytest.mark.parametrize(
    ("action", "status", "words", "kind"),
    [
        ("failed", "5.1.1", "", HARD),
        ("failed", "5.1.2", "", HARD),
        ("failed", "5.2.1", "", HARD),
        ("failed", "5.2.2", "mailbox full", DELAYED),
        ("failed", "5.2.3", "message too big", POLICY),
        ("failed", "5.3.4", "", POLICY),
        ("failed", "5.3.2", "", HARD),
        ("failed", "5.4.4", "no MX", HARD),
        ("failed", "5.4.7", "expired", HARD),
        ("failed", "5.5.0", "mailbox unavailable", HARD),
        ("failed", "5.6.1", "", POLICY),
        ("failed", "5.7.1", "user unknown", POLICY),
        ("failed", "5.7.26", "DMARC", POLICY),
        ("failed", "5.0.0", "User unknown", HARD),
        ("failed", "5.0.0", "blocked by RBL", POLICY),
        ("failed", "", "550 rejected: listed in a blocklist", POLICY),
        ("failed", "", "", HARD),
        # the sender gave up after days of 4xx (Postfix's maximal_queue_lifetime)
        ("failed", "4.4.1", "", HARD),
        ("failed", "4.2.2", "", DELAYED),
        ("delayed", "4.4.1", "", DELAYED),
        ("delayed", "5.1.1", "", DELAYED),
        ("relayed", "2.0.0", "", DELAYED),
        ("", "4.7.0", "", DELAYED),
        ("delivered", "2.0.0", "", None),
        ("expanded", "", "", None),
        ("failed", "2.0.0", "", None),
    ],
)
def test_what_we_chose_per_status_class(
    action: str, status: str, words: str, kind: BounceKind | None
) -> None:
    assert dsn.classify(action, status, words) is kind


@pytest.mark.parametrize(
    ("reply", "kind", "status"),
    [
        ("550 5.1.1 <a@b.example>: Recipient address rejected: User unknown", HARD, "5.1.1"),
        ("554 5.7.1 Service unavailable; client host blocked", POLICY, "5.7.1"),
        ("552 5.2.2 Mailbox full", DELAYED, "5.2.2"),
        ("550 No such user", HARD, ""),
        ("550 Message rejected as spam", POLICY, ""),
    ],
)
def test_an_smtp_refusal_is_read_as_a_bounce(reply: str, kind: BounceKind, status: str) -> None:
    assert dsn.kind_of_reply(reply) == (kind, status)


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("550 5.1.1 user unknown", "5.1.1"),
        ("host [10.4.5.6] said: 550 no", ""),
        ("version 2.4.5.1", ""),
        ("(#5.1.1)", "5.1.1"),
        ("ends with 5.7.1.", "5.7.1"),
        ("O365 5.7.133 RESOLVER", "5.7.133"),
    ],
)
def test_status_codes_are_not_pieces_of_ip_addresses(text: str, code: str) -> None:
    assert dsn.status_in(text) == code


def test_cut_keeps_the_start_and_says_what_was_left_out() -> None:
    raw = b"Subject: x\n\n" + b"a" * 5000
    assert dsn.cut(raw, 0) == raw
    assert dsn.cut(raw, 10_000) == raw
    kept = dsn.cut(raw, 1024)
    assert kept.startswith(b"Subject: x\n\n") and len(kept) < 1100
    assert b"bytes not kept" in kept


def test_a_reader_that_trips_gives_no_failures(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(msg: object) -> list[dsn.Failure]:
        raise ValueError("a bug")

    monkeypatch.setattr(dsn, "_rfc3464", broken)
    report = dsn.parse((CORPUS / "postfix_user_unknown.eml").read_bytes())
    assert report.failures == () and report.is_report
