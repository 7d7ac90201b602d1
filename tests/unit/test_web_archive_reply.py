"""Replying and starting threads from the archive's pages (SQLite and PostgreSQL).

The web app submits by SMTP to a small MTA on loopback (aiosmtpd) whose end of data asks
the real list engine, as a milter-equipped MTA does: so the list's own rules decide each
web post here (a member's is archived in its thread, a nonmember's held, a banned
address refused), and the page shows what that MTA answered."""

from __future__ import annotations

import email
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from email.message import Message
from email.policy import compat32
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP
from aiosmtpd.smtp import Envelope as SmtpEnvelope
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin import config, passwords
from mtaplugin.archive import compose
from mtaplugin.clock import ManualClock
from mtaplugin.engine import ListEngine
from mtaplugin.enums import ArchivePolicy, MemberRole
from mtaplugin.manage import bans, lists, members, users
from mtaplugin.model import ArchivedMessage, AuditEntry, HeldMessage
from mtaplugin.posting.verdict import Accept, Discard, Reject, TempFail
from mtaplugin.testing import free_port
from mtaplugin.vocabulary.envelope import Envelope
from mtaplugin.web.app import create_web_app
from mtaplugin.web.pages import archive_write
from tests.helpers import drain
from tests.unit import archive_rows
from tests.unit.archive_rows import START
from tests.unit.webclient import CHEAP_PASSWORDS, PASSWORD, SECRET, Client, Site, make_site

NOW = START + timedelta(days=2)


@dataclass
class EngineMta:
    """An SMTP server on loopback that decides each post with the list engine at end of
    data and answers as Postfix answers for its milter: 250 when the post was taken
    (accepted or held), the engine's refusal otherwise."""

    engine: ListEngine
    port: int = field(default_factory=free_port)
    received: list[tuple[str, list[str], bytes]] = field(default_factory=list)
    delivered: dict[str, list[str]] = field(default_factory=dict)

    async def handle_RCPT(
        self, server: SMTP, session: Any, envelope: SmtpEnvelope, address: str, options: Any
    ) -> str:
        envelope.rcpt_tos.append(address)
        return "250 2.1.5 Ok"

    async def handle_DATA(self, server: SMTP, session: Any, envelope: SmtpEnvelope) -> str:
        raw = bytes(envelope.original_content or b"")
        self.received.append((envelope.mail_from or "", list(envelope.rcpt_tos), raw))
        verdict = self.engine.decide(
            Envelope(
                mail_from=envelope.mail_from or "",
                recipients=[f"<{r}>" for r in envelope.rcpt_tos],
                client_address="127.0.0.1",
            ),
            raw,
        )
        drain(self.engine.sessions)  # the worker's part: the archive has it a moment later
        match verdict:
            case Accept(edits=edits):
                msgid = str(email.message_from_bytes(raw)["Message-ID"])
                self.delivered[msgid] = list(edits.add_recipients)
                return "250 2.0.0 Ok: queued as 4ACCEPT"
            case Discard():
                return "250 2.0.0 Ok: queued as 4DISCARD"
            case Reject(reply=reply) | TempFail(reply=reply):
                return str(reply)
        raise AssertionError(verdict)

    def last(self) -> Message:
        return email.message_from_bytes(self.received[-1][2], policy=compat32)


@pytest.fixture(autouse=True)
def cheap_argon2(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(passwords, "PASSWORDS", CHEAP_PASSWORDS)
    monkeypatch.setattr(archive_write, "POLL_INTERVAL", 0.01)


@pytest.fixture
def mta(module_sessions: sessionmaker[Session]) -> Iterator[EngineMta]:
    mta = EngineMta(ListEngine(module_sessions))
    controller = Controller(mta, hostname="127.0.0.1", port=mta.port, ready_timeout=10)
    controller.start()
    yield mta
    controller.stop()


def web_site(
    sessions: sessionmaker[Session], var: Path, port: int, clock: ManualClock, per_minute: int = 3
) -> Site:
    site = make_site(sessions, var)
    settings = config.load(
        environ={
            "MTAPLUGIN_SITE_SECRET_KEY": SECRET,
            "MTAPLUGIN_SITE_VAR_DIR": str(var),
            "MTAPLUGIN_WEB_SUBMIT_PORT": str(port),
            "MTAPLUGIN_WEB_POSTS_PER_MINUTE": str(per_minute),
        }
    )
    site.app = create_web_app(settings, site.sessions, clock)
    with site.sessions.begin() as s:
        mlist = lists.get(s, site.address)
        mlist.archive_policy = ArchivePolicy.public
        members.add(s, mlist, f"mia@{site.host}", MemberRole.member)
        mia = users.add_user(s, f"mia@{site.host}", PASSWORD)
        mia.display_name = "Mia Member"
        users.add_user(s, f"eve@{site.host}", PASSWORD)
    return site


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(NOW)


@pytest.fixture
def site(module_sessions: sessionmaker[Session], tmp_path: Path, mta: EngineMta, clock) -> Site:
    return web_site(module_sessions, tmp_path / "var", mta.port, clock)


@dataclass
class Parent:
    list_id: str
    thread_id: int
    digest: str
    message_id: str

    def url(self, tail: str = "") -> str:
        return f"/archive/{self.list_id}/{tail}"


@pytest.fixture
def parent(site: Site) -> Parent:
    with site.sessions.begin() as s:
        mlist = lists.get(s, site.address)
        first = archive_rows.post(
            s, mlist, "[Team] Milter timeouts", "Our milter is slow.\nAny idea?", date=START
        )
        assert first.thread_id is not None
        return Parent(
            mlist.list_id, first.thread_id, first.message_id_hash, f"<{first.message_id}>"
        )


def logged_in(site: Site, local: str) -> Client:
    client = site.client()
    assert client.login(f"{local}@{site.host}").status_code == 303
    return client


def reply(client: Client, parent: Parent, body: str, **fields: str) -> Any:
    page = client.get(parent.url(f"message/{parent.digest}/reply"))
    assert page.status_code == 200, page.text
    sent = dict([(k, v) for k, v in _form(page.text, parent.url(f"message/{parent.digest}/reply"))])
    sent.update(body=body, **fields)
    return client.post(parent.url(f"message/{parent.digest}/reply"), sent)


def _form(html: str, action: str) -> list[tuple[str, str]]:
    from tests.unit.webclient import form_of

    return [(k, v) for k, v in form_of(html, action.rstrip("/")) if k != "csrf_token"]


def archived(site: Site) -> dict[str, ArchivedMessage]:
    with site.sessions() as s:
        mlist = lists.get(s, site.address)
        rows = s.scalars(select(ArchivedMessage).where(ArchivedMessage.mailing_list_id == mlist.id))
        return {m.message_id: m for m in rows}


# --- composing (pure) -------------------------------------------------------------------


def test_the_reply_subject_drops_the_prefix_and_repeated_re():
    assert compose.reply_subject("[Team] Re: AW: Milter timeouts") == "Re: Milter timeouts"
    assert compose.reply_subject("Milter timeouts") == "Re: Milter timeouts"
    assert compose.reply_subject("") == "Re:"


def test_references_follow_the_parent_chain():
    p = compose.Parent("<c@x>", in_reply_to="<b@x>", references=("<a@x>", "<b@x>"))
    assert compose.references(p) == ["<a@x>", "<b@x>", "<c@x>"]
    only_irt = compose.Parent("<c@x>", in_reply_to="<b@x>")
    assert compose.references(only_irt) == ["<b@x>", "<c@x>"]
    long = compose.Parent("<z@x>", references=tuple(f"<{n}@x>" for n in range(40)))
    chain = compose.references(long)
    assert len(chain) == compose.MAX_REFERENCES
    assert chain[0] == "<0@x>" and chain[-2:] == ["<39@x>", "<z@x>"]


#: what a reply composed on the web is made of, unless a test says otherwise
REPLY = {"sender": "mia@example.org", "sender_name": "Mia", "list_address": "team@lists.test"}
REPLY |= {"subject": "Re: hi", "body": "Thanks.", "message_id": "<web.1@lists.test>", "date": NOW}


def test_the_message_has_the_headers_of_a_reply():
    forged = {  # a header smuggled into the name and the subject
        "sender_name": "Mia\r\nBcc: evil@example.org",
        "subject": "Re: hi\nBcc: evil@example.org",
    }
    body = "Thanks.\nÄrger gibt es nicht."
    parent = compose.Parent("<p@x>", references=("<r@x>",))
    raw = compose.message(**REPLY | forged | {"body": body}, parent=parent)
    msg = email.message_from_bytes(raw, policy=compat32)
    assert msg["Bcc"] is None and len(msg.get_all("Subject")) == 1
    assert msg["To"] == "team@lists.test" and msg["Message-ID"] == "<web.1@lists.test>"
    assert msg["In-Reply-To"] == "<p@x>" and msg["References"] == "<r@x> <p@x>"
    assert "mia@example.org" in msg["From"]
    assert msg.get_payload(decode=True).decode(msg.get_content_charset()).startswith("Thanks.")
    assert b"\r\n" in raw and b"\n" not in raw.replace(b"\r\n", b"")


def test_an_address_that_is_not_ascii_is_written_in_utf8():
    jörg = {"sender": "jörg@example.org", "sender_name": "Jörg", "subject": "Grüße"}
    raw = compose.message(**REPLY | jörg | {"body": "Äh.", "message_id": "<web.2@lists.test>"})
    assert "jörg@example.org".encode() in raw and b"=?utf-8?q?j" not in raw


def test_web_posts_go_to_the_public_listener_by_default():
    settings = config.load(environ={})
    assert (settings.web.submit_host, settings.web.submit_port) == ("127.0.0.1", 25)
    assert settings.web.submit_port != settings.outbox.port  # not the milter-less one


def test_quoted_text_is_marked_line_by_line():
    assert compose.quoted("a\n\n> b\n \n\n", "Anne") == "Anne wrote:\n> a\n>\n>> b\n\n"


# --- the form ---------------------------------------------------------------------------


def test_an_anonymous_visitor_is_asked_to_log_in(site, parent, mta):
    client = site.client()
    page = client.get(parent.url(f"message/{parent.digest}/reply"))
    assert page.status_code == 303 and page.headers["location"].startswith("/login?next=")
    assert client.get(parent.url("new")).status_code == 303
    # nor can a form be posted without a session (its CSRF token is missing)
    client.post(parent.url(f"message/{parent.digest}/reply"), {"body": "x"}, csrf=False)
    assert client.posted is not None and client.posted.status_code == 403
    assert mta.received == []


def test_the_reply_form_is_prefilled_and_quotes_on_request(site, parent):
    client = logged_in(site, "mia")
    page = client.get(parent.url(f"message/{parent.digest}/reply"))
    fields = dict(_form(page.text, parent.url(f"message/{parent.digest}/reply")))
    assert fields["subject"] == "Re: Milter timeouts"
    assert fields["sender"] == f"mia@{site.host}" and fields["body"] == ""
    quoted = client.get(parent.url(f"message/{parent.digest}/reply"), query_string="quote=1")
    fields = dict(_form(quoted.text, parent.url(f"message/{parent.digest}/reply")))
    assert fields["body"] == "Anne Example wrote:\n> Our milter is slow.\n> Any idea?\n\n"
    # the posts and the archive's menu link to the forms
    thread = client.get(parent.url(f"thread/{parent.thread_id}/"))
    assert f"/message/{parent.digest}/reply" in thread.text
    assert f'href="/archive/{parent.list_id}/new"' in thread.text


def test_a_post_without_the_csrf_token_is_refused(site, parent, mta):
    client = logged_in(site, "mia")
    client.post(
        parent.url(f"message/{parent.digest}/reply"),
        {"sender": f"mia@{site.host}", "subject": "Re: x", "body": "forged"},
        csrf=False,
    )
    assert client.posted is not None and client.posted.status_code == 403
    assert mta.received == []


# --- what the list decides --------------------------------------------------------------


def test_a_members_reply_reaches_the_members_and_joins_the_thread(site, parent, mta):
    client = logged_in(site, "mia")
    page = reply(client, parent, "Raise the milter timeout.\n")
    assert client.posted is not None and client.posted.status_code == 303
    sent = mta.last()
    assert mta.received[-1][0] == f"mia@{site.host}"
    assert mta.received[-1][1] == [site.address]
    assert sent["From"] == f"Mia Member <mia@{site.host}>"
    assert sent["In-Reply-To"] == parent.message_id == sent["References"]
    assert sent["Subject"] == "Re: Milter timeouts"
    message_id = sent["Message-ID"]
    assert message_id.startswith("<web.") and message_id.endswith(f"@{site.host}>")
    # distributed to the members, archived under its parent
    assert "anne@example.com" in mta.delivered[message_id]
    row = archived(site)[message_id]
    first = archived(site)[parent.message_id.strip("<>")]  # (archive_rows: no brackets)
    assert row.parent_id == first.id and row.thread_id == parent.thread_id
    # the thread page, with the reply, says what happened
    assert page.status_code == 200
    assert "Your post was sent to the list and is in its archive." in page.text
    assert "250 2.0.0 Ok: queued as 4ACCEPT" in page.text
    assert "Raise the milter timeout." in page.text


def test_a_new_thread_from_the_web(site, parent, mta):
    client = logged_in(site, "mia")
    form = client.get(parent.url("new"))
    assert form.status_code == 200 and "Start a new thread" in form.text
    page = client.post(
        parent.url("new"),
        {"sender": f"mia@{site.host}", "subject": "Upgrading to 3.2", "body": "Who did?"},
    )
    sent = mta.last()
    assert sent["In-Reply-To"] is None and sent["References"] is None
    row = archived(site)[sent["Message-ID"]]
    assert row.parent_id is None and row.thread_id != parent.thread_id
    assert "Upgrading to 3.2" in page.text and "Who did?" in page.text


def test_a_nonmembers_reply_is_held_and_the_page_says_so(site, parent, mta):
    client = logged_in(site, "eve")
    page = reply(client, parent, "I am not subscribed.\n")
    message_id = mta.last()["Message-ID"]
    assert message_id not in archived(site) and message_id not in mta.delivered
    with site.sessions() as s:
        held = s.scalars(select(HeldMessage).where(HeldMessage.message_id == message_id)).all()
    assert len(held) == 1 and held[0].sender == f"eve@{site.host}"
    assert "Your post is held for the list&#39;s moderators" in page.text
    assert page.status_code == 200 and "4DISCARD" in page.text


def test_a_banned_address_is_refused_with_the_mta_s_words(site, parent, mta):
    with site.sessions.begin() as s:
        bans.add(s, lists.get(s, site.address), f"eve@{site.host}")
    client = logged_in(site, "eve")
    page = reply(client, parent, "Let me in.\n")
    assert page.status_code == 403
    assert "The list refused your post. The mail server said: 550" in page.text
    # the form keeps what was written
    assert "Let me in." in page.text
    assert mta.last()["Message-ID"] not in archived(site)


def test_from_is_one_of_the_users_own_addresses(site, parent, mta):
    client = logged_in(site, "eve")
    page = reply(client, parent, "I am Anne now.\n", sender="anne@example.com")
    assert page.status_code == 400 and "From: choose one of your own addresses." in page.text
    assert mta.received == []


def test_an_empty_message_is_refused_naming_the_field(site, parent, mta):
    client = logged_in(site, "mia")
    page = reply(client, parent, "  \n")
    assert page.status_code == 400 and "Message: write your message." in page.text
    page = reply(client, parent, "text", subject=" ")
    assert page.status_code == 400 and "Subject: write a subject." in page.text
    assert mta.received == []


# --- who may write ----------------------------------------------------------------------


@pytest.mark.parametrize("who, status", [("eve", 404), ("mia", 200), ("mod", 200)])
def test_a_private_archive_takes_posts_from_its_readers_only(site, parent, mta, who, status):
    site.update(archive_policy=ArchivePolicy.private)
    client = logged_in(site, who)
    assert client.get(parent.url(f"message/{parent.digest}/reply")).status_code == status
    assert client.get(parent.url("new")).status_code == status
    client.post(parent.url("new"), {"sender": f"{who}@{site.host}", "subject": "s", "body": "b"})
    assert client.posted is not None
    assert client.posted.status_code == (404 if status == 404 else 303)
    assert len(mta.received) == (0 if status == 404 else 1)


def test_no_archive_no_form(site, parent, mta):
    site.update(archive_policy=ArchivePolicy.never)
    client = logged_in(site, "mia")
    assert client.get(parent.url(f"message/{parent.digest}/reply")).status_code == 404


def test_a_reply_to_a_removed_post_is_gone(site, parent):
    with site.sessions.begin() as s:
        s.scalars(
            select(ArchivedMessage).where(
                ArchivedMessage.mailing_list_id == lists.get(s, site.address).id,
                ArchivedMessage.message_id_hash == parent.digest,
            )
        ).one().removed = True
    client = logged_in(site, "mia")
    assert client.get(parent.url(f"message/{parent.digest}/reply")).status_code == 410


# --- the rate limit, the MTA away ----------------------------------------------------------


def test_a_user_sends_at_most_posts_per_minute(site, parent, mta, clock):
    client = logged_in(site, "mia")
    for n in range(3):
        assert reply(client, parent, f"post {n}\n").status_code == 200
    page = reply(client, parent, "one too many\n")
    assert page.status_code == 429 and "wait a minute" in page.text
    assert len(mta.received) == 3
    # another user is not counted with mia
    assert reply(logged_in(site, "eve"), parent, "mine\n").status_code == 200
    clock.advance(timedelta(seconds=61))
    assert reply(client, parent, "a minute later\n").status_code == 200
    assert len(mta.received) == 5
    with site.sessions() as s:
        entries = s.scalars(
            select(AuditEntry).where(AuditEntry.action == archive_write.ACTION)
        ).all()
    assert {e.actor for e in entries} >= {f"web:mia@{site.host}", f"web:eve@{site.host}"}


def test_posts_per_minute_zero_turns_posting_off(module_sessions, tmp_path, mta, clock):
    site = web_site(module_sessions, tmp_path / "var", mta.port, clock, per_minute=0)
    with site.sessions.begin() as s:
        mlist = lists.get(s, site.address)
        digest = archive_rows.post(s, mlist, "Hello", "hi").message_id_hash
        list_id = mlist.list_id
    client = logged_in(site, "mia")
    page = client.get(f"/archive/{list_id}/message/{digest}/reply")
    assert page.status_code == 403 and "Posting from the web is off" in page.text


def test_the_mta_unreachable_keeps_the_form_and_sends_nothing(module_sessions, tmp_path, clock):
    site = web_site(module_sessions, tmp_path / "var", free_port(), clock)
    with site.sessions.begin() as s:
        mlist = lists.get(s, site.address)
        p = archive_rows.post(s, mlist, "Hello", "hi")
        parent = Parent(mlist.list_id, p.thread_id or 0, p.message_id_hash, p.message_id)
    client = logged_in(site, "mia")
    page = reply(client, parent, "Still here after the outage.\n")
    assert page.status_code == 503
    assert "The mail server could not be reached; your post was not sent." in page.text
    assert "Still here after the outage." in page.text
    with site.sessions() as s:  # not counted against the rate limit
        assert not s.scalars(
            select(AuditEntry).where(AuditEntry.actor == f"web:mia@{site.host}")
        ).all()


def test_from_defaults_to_the_subscribed_address(site, parent, mta):
    """A user whose preferred address is not subscribed writes as the one that is (and
    may still choose the other, which the form marks as not subscribed)."""
    with site.sessions.begin() as s:
        mia = users.user_by_email(s, f"mia@{site.host}")
        assert mia is not None
        users.add_address(s, mia, f"mia.private@{site.host}").verified_on = NOW
        users.set_preferred(s, mia, f"mia.private@{site.host}")
        users.add_address(s, mia, f"mia.unverified@{site.host}")
    client = logged_in(site, "mia")
    page = client.get(parent.url(f"message/{parent.digest}/reply"))
    fields = dict(_form(page.text, parent.url(f"message/{parent.digest}/reply")))
    assert fields["sender"] == f"mia@{site.host}"
    assert f"mia.private@{site.host} (not subscribed)" in page.text
    # an address of the user's that nobody verified is not offered, nor taken
    assert f"mia.unverified@{site.host}" not in page.text
    page = reply(client, parent, "hi\n", sender=f"mia.unverified@{site.host}")
    assert page.status_code == 400 and mta.received == []
