"""The email interface through ListEngine.decide: -request commands, -join/-leave, -confirm
tokens, moderation by reply, the loop and auto-reply guards, the reply caps."""

from __future__ import annotations

import email
import email.header
from email.message import Message

import pytest
from sqlalchemy import select

from mtaplugin.clock import ManualClock
from mtaplugin.commands.mail import CommandPolicy
from mtaplugin.engine import ListEngine
from mtaplugin.enums import (
    DeliveryMode,
    MemberRole,
    RequestType,
    ResponseAction,
    RosterVisibility,
    SubscriptionPolicy,
)
from mtaplugin.mailauth.identity import AuthenticationPolicy
from mtaplugin.manage import lists, members
from mtaplugin.manage.subscriptions import WorkflowSettings
from mtaplugin.model import (
    AuditEntry,
    HeldMessage,
    Member,
    PendingRequest,
)
from mtaplugin.model.base import utcnow
from mtaplugin.posting.verdict import Accept, Discard
from mtaplugin.vocabulary.envelope import Envelope, Post
from tests.helpers import confirm_token as token_in
from tests.helpers import make_post, unique
from tests.helpers import plain_text as body
from tests.unit.sites import Roster, Site

VERIFIER = "mx.test"


@pytest.fixture
def site_roster() -> Roster:
    """anne, and the list's owner and moderator."""
    return Roster(
        (
            ("anne@example.com", MemberRole.member),
            ("olive@example.com", MemberRole.owner),
            ("mod@example.com", MemberRole.moderator),
        )
    )


@pytest.fixture
def engine(site: Site) -> ListEngine:
    return command_engine(site)


def command_engine(site: Site) -> ListEngine:
    """The engine of the email command tests: it trusts :data:`VERIFIER`'s
    Authentication-Results, and answers three commands a day per address."""
    return ListEngine(
        site.sessions,
        site_owner="postmaster@site.test",
        auth_policy=AuthenticationPolicy(trusted_authserv_ids=frozenset({VERIFIER})),
        command_policy=CommandPolicy(workflow=WorkflowSettings(), replies_per_day=3),
    )


def send(
    engine: ListEngine,
    sender: str,
    rcpt: str,
    subject: str = "",
    body: str = "\n",
    authenticated: bool = False,
    headers: dict[str, str] | None = None,
    mail_from: str | None = None,
):
    hdrs = dict(headers or {})
    if authenticated:
        domain = sender.rpartition("@")[2]
        hdrs["Authentication-Results"] = f"{VERIFIER}; dkim=pass header.d={domain}"
    raw = make_post(sender, rcpt, subject=subject, body=body, headers=hdrs)
    env = Envelope(
        mail_from=sender if mail_from is None else mail_from,
        recipients=[f"<{rcpt}>"],
        client_address="192.0.2.1",
        queue_id="Q1",
    )
    return engine.decide(env, raw)


def command(engine: ListEngine, site: Site, sender: str, subject: str = "", body: str = "\n"):
    """An authenticated mail to the team list's -request address."""
    return send(
        engine, sender, site.addr("team-request"), subject=subject, body=body, authenticated=True
    )


def autoresponds(site: Site, to: str, action: ResponseAction, text: str) -> None:
    """The team list answers mail ``to`` its ``requests``, ``owner`` or ``postings`` address
    with ``text``, then does ``action``."""
    text_field = "request" if to == "requests" else to  # (Mailman's own names)
    site.update(**{f"autorespond_{to}": action, f"autoresponse_{text_field}_text": text})


def team_member(site: Site, email: str) -> Member:
    """The member ``email`` of the team list, as it is now (detached)."""
    with site.sessions() as s:
        return members.get(s, lists.get(s, site.addr("team")), email, MemberRole.member)


def test_command_addresses_are_accepted_at_rcpt(engine: ListEngine, site: Site):
    for local in ("team-request", "team-join", "team-leave", "team-confirm"):
        check = engine.check_recipient(f"<{site.addr(local)}>")
        assert check.reply is None and check.is_list


def test_unknown_or_expired_token_is_refused_at_rcpt(engine: ListEngine, site: Site):
    check = engine.check_recipient(f"<{site.addr('team-confirm+' + 'ab' * 20)}>")
    assert check.reply is not None and (check.reply.code, check.reply.enhanced) == (550, "5.1.1")
    assert "no pending request has this token" in check.reply.text
    send(engine, "tok@example.net", site.addr("team-join"))
    (conf,) = site.mails_to("tok@example.net")
    token = token_in(conf)
    assert engine.check_recipient(f"<{site.addr('team-confirm+' + token)}>").reply is None
    with site.sessions.begin() as s:
        from mtaplugin.model.base import utcnow

        pending = s.scalars(select(PendingRequest).where(PendingRequest.token == token)).one()
        pending.expires_at = utcnow()
    assert engine.check_recipient(f"<{site.addr('team-confirm+' + token)}>").reply is not None


def test_a_token_expires_on_the_engine_s_clock(site: Site):
    """One clock: the RCPT check of a confirmation token reads the engine's clock, not the
    wall clock (a token live by the wall clock is refused once the engine's time is past
    its expiry)."""
    clock = ManualClock(utcnow())
    engine = ListEngine(site.sessions, site_owner="postmaster@site.test", clock=clock)
    send(engine, "tick@example.net", site.addr("team-join"))
    (conf,) = site.mails_to("tick@example.net")
    confirm = f"<{site.addr('team-confirm+' + token_in(conf))}>"
    assert engine.check_recipient(confirm).reply is None
    clock.advance(days=365)
    check = engine.check_recipient(confirm)
    assert check.reply is not None and check.reply.code == 550


def test_subscribe_by_mail_needs_the_reply_to_the_confirmation(engine: ListEngine, site: Site):
    verdict = send(engine, "zoe@example.net", site.addr("team-request"), subject="subscribe")
    # Removed from the transaction: nothing is delivered, nothing loops.
    assert isinstance(verdict, Discard)
    assert not site.is_member("zoe@example.net")
    (confirmation,) = [m for m in site.mails_to("zoe@example.net") if m["Reply-To"]]
    assert "confirmation is needed to join" in str(confirmation["Subject"])
    token = token_in(confirmation)
    assert str(confirmation["From"]) == site.addr(f"team-confirm+{token}")
    # A reply to the confirmation (anything in it) makes the member.
    send(engine, "zoe@example.net", site.addr(f"team-confirm+{token}"), subject="Re: confirm")
    assert site.is_member("zoe@example.net")
    welcome = site.mails_to("zoe@example.net")[-1]
    assert "Welcome" in str(welcome["Subject"])
    # Single use.
    send(engine, "zoe@example.net", site.addr(f"team-confirm+{token}"))
    last = site.mails_to("zoe@example.net")[-1]
    assert "no pending request" in body(last)


def test_join_address_and_leave_address(engine: ListEngine, site: Site):
    send(engine, "yan@example.net", site.addr("team-join"))
    (conf,) = [m for m in site.mails_to("yan@example.net") if m["Reply-To"]]
    send(engine, "yan@example.net", site.addr(f"team-confirm+{token_in(conf)}"))
    assert site.is_member("yan@example.net")
    send(engine, "yan@example.net", site.addr("team-leave"))
    assert site.is_member("yan@example.net")  # unauthenticated: a confirmation first
    conf = [m for m in site.mails_to("yan@example.net") if m["Reply-To"]][-1]
    assert "leave" in str(conf["Subject"])
    send(engine, "yan@example.net", site.addr(f"team-confirm+{token_in(conf)}"))
    assert not site.is_member("yan@example.net")
    assert "left" in str(site.mails_to("yan@example.net")[-1]["Subject"])


def test_authenticated_sender_joins_and_leaves_at_once(engine: ListEngine, site: Site):
    command(engine, site, "kim@example.org", body="join digest=mime\n")
    assert site.is_member("kim@example.org")
    member = team_member(site, "kim@example.org")
    assert member.delivery_mode is DeliveryMode.mime_digests
    command(engine, site, "kim@example.org", subject="unsubscribe")
    assert not site.is_member("kim@example.org")


def test_forged_leave_does_not_remove_the_member(engine: ListEngine, site: Site):
    send(engine, "anne@example.com", site.addr("team-leave"), mail_from="evil@example.net")
    assert site.is_member("anne@example.com")


def test_moderate_policy_waits_for_an_authenticated_moderator(engine: ListEngine, site: Site):
    site.update(subscription_policy=SubscriptionPolicy.moderate)
    send(engine, "lee@example.org", site.addr("team-request"), subject="join", authenticated=True)
    assert not site.is_member("lee@example.org")
    request = site.mails_to("mod@example.com")[-1]
    assert "asks to join" in str(request["Subject"])
    token = token_in(request)
    # Not authenticated: nothing changes.
    send(engine, "mod@example.com", site.addr(f"team-confirm+{token}"), body="approve\n")
    assert not site.is_member("lee@example.org")
    send(
        engine,
        "mod@example.com",
        site.addr(f"team-confirm+{token}"),
        body="approve\n",
        authenticated=True,
    )
    assert site.is_member("lee@example.org")


def test_who_is_gated_by_roster_visibility(engine: ListEngine, site: Site):
    site.update(member_roster_visibility=RosterVisibility.members)
    send(engine, "stranger@example.net", site.addr("team-request"), subject="who")
    assert "not available" in body(site.mails_to("stranger@example.net")[-1])
    send(engine, "anne@example.com", site.addr("team-request"), subject="who")
    reply = body(site.mails_to("anne@example.com")[-1])
    assert "anne@example.com" in reply and "Members of" in reply


def test_body_commands_stop_at_end_and_one_reply_sums_up(engine: ListEngine, site: Site):
    text = "help\necho hi there\nwho\nend\nleave\n"
    send(engine, "olive@example.com", site.addr("team-request"), subject="Re: hello", body=text)
    (reply,) = site.mails_to("olive@example.com")
    content = body(reply)
    assert "echo hi there" in content and "Members of" in content and "join [digest" in content
    assert "> leave" not in content
    assert reply["Auto-Submitted"] == "auto-replied"


@pytest.mark.parametrize(
    ("headers", "mail_from"),
    [
        ({"Precedence": "bulk"}, None),
        ({"Auto-Submitted": "auto-replied"}, None),
        ({}, ""),
        ({}, "MAILER-DAEMON@example.net"),
    ],
)
def test_automatic_mail_is_ignored(engine: ListEngine, site: Site, headers, mail_from):
    send(
        engine,
        "bot@example.net",
        site.addr("team-request"),
        subject="help",
        headers=headers,
        mail_from=mail_from,
    )
    assert site.outbox() == []


def test_replies_are_capped_with_one_no_more_today_notice(engine: ListEngine, site: Site):
    for _ in range(6):
        send(engine, "pat@example.net", site.addr("team-request"), subject="help")
    got = site.mails_to("pat@example.net")
    assert len(got) == 4
    assert "Last automatic reply" in str(got[-1]["Subject"])


def test_set_needs_authentication(engine: ListEngine, site: Site):
    send(engine, "anne@example.com", site.addr("team-request"), subject="set digest mime")
    assert "not authenticated" in body(site.mails_to("anne@example.com")[-1])
    command(engine, site, "anne@example.com", subject="set digest off")
    assert "set digest off: done" in body(site.mails_to("anne@example.com")[-1])
    member = team_member(site, "anne@example.com")
    assert member.delivery_mode is DeliveryMode.regular
    command(engine, site, "anne@example.com", subject="set digest mime")
    reply = body(site.mails_to("anne@example.com")[-1])
    assert "set digest mime: done" in reply
    member = team_member(site, "anne@example.com")
    assert member.delivery_mode is DeliveryMode.mime_digests


def _held_with_notice(
    engine: ListEngine, site: Site, subject: str, body: str = "\n"
) -> tuple[HeldMessage, Message]:
    """A nonmember's post ``subject``, held: the held row and the moderators' notice."""
    verdict = send(engine, "outsider@example.net", site.addr("team"), subject=subject, body=body)
    assert isinstance(verdict, Discard)
    notice = next(
        m
        for m in site.mails_to("mod@example.com")
        if "requires approval" in str(m["Subject"]) and subject in m.as_string()
    )
    with site.sessions() as s:
        held = s.scalars(select(HeldMessage).where(HeldMessage.subject == subject)).one()
    return held, notice


def _hold(engine: ListEngine, site: Site) -> tuple[int, str]:
    held, notice = _held_with_notice(engine, site, unique("held"), body="A post.\n")
    return held.id, token_in(notice)


def _reply(engine: ListEngine, site: Site, token: str, reply: tuple[str, str, dict]):
    """Answer the hold notice of ``token``: ``reply`` is (sender, body, how it is sent)."""
    sender, text, how = reply
    return send(engine, sender, site.addr(f"team-confirm+{token}"), body=text, **how)


#: Replies that change nothing: (sender, body, how it is sent).
REFUSED_REPLIES = [
    # Forged From: (no authentication).
    ("mod@example.com", "approve\n", {"mail_from": "attacker@example.net"}),
    # A nonmember with authentication.
    ("outsider@example.net", "discard\n", {"authenticated": True}),
    # No command.
    ("mod@example.com", "Thanks!\n", {"authenticated": True}),
    # The wrong moderator password (the list has one: "s3cret").
    ("anyone@example.net", "Approved: wrong\napprove\n", {}),
]

#: Replies that decide the held post: the reply, the audit entry's action, and a check of
#: that entry (who acted, or the reason).
DECIDING_REPLIES = [
    pytest.param(
        (
            "mod@example.com",
            "approve\n\n> quoted notice\n",
            {"authenticated": True, "subject": "Re: held"},
        ),
        "held.approve",
        lambda entry: entry.actor.startswith("mod@example.com (dkim:"),
        id="authenticated-moderator-approves",
    ),
    pytest.param(
        ("olive@example.com", "reject off topic\n", {"authenticated": True}),
        "held.reject",
        lambda entry: entry.detail["reason"] == "off topic",
        id="reject-records-the-reason",
    ),
    pytest.param(
        ("anyone@example.net", "approve\n", {"headers": {"Approved": "s3cret"}}),
        "held.approve",
        lambda entry: entry.actor == "anyone@example.net (moderator password)",
        id="moderator-password-for-compatibility",
    ),
]


@pytest.mark.parametrize(("reply", "action", "recorded"), DECIDING_REPLIES)
def test_a_moderator_reply_decides_the_held_post(
    engine: ListEngine, site: Site, reply, action: str, recorded
):
    from mtaplugin.passwords import hash_password

    site.update(moderator_password=hash_password("s3cret"))
    held_id, token = _hold(engine, site)
    assert isinstance(_reply(engine, site, token, reply), Discard)
    with site.sessions() as s:
        assert s.get(HeldMessage, held_id) is None
        entry = s.scalars(
            select(AuditEntry).where(AuditEntry.action == action).order_by(AuditEntry.id.desc())
        ).first()
        assert entry is not None and recorded(entry)
        assert s.scalar(select(PendingRequest).where(PendingRequest.token == token)) is None
    release = [r for r in site.outbox() if r.kind == "release"]
    assert bool(release) == (action == "held.approve")
    if release:
        assert "anne@example.com" in release[-1].recipients


def test_forged_wrong_or_empty_moderator_reply_changes_nothing(engine: ListEngine, site: Site):
    from mtaplugin.passwords import hash_password

    site.update(moderator_password=hash_password("s3cret"))
    held_id, token = _hold(engine, site)
    for reply in REFUSED_REPLIES:
        _reply(engine, site, token, reply)
        with site.sessions() as s:
            assert s.get(HeldMessage, held_id) is not None, reply
            assert s.scalar(select(PendingRequest).where(PendingRequest.token == token)), reply
    answers = [body(m) for m in site.mails_to("mod@example.com") if "results" in str(m["Subject"])]
    assert any("could not be authenticated" in a for a in answers)
    assert any("No decision was found" in a for a in answers)


def test_a_command_address_beside_another_recipient_is_removed(engine: ListEngine, site: Site):
    raw = make_post("zed@example.net", site.addr("team-request"), subject="help")
    env = Envelope(
        mail_from="zed@example.net",
        recipients=[f"<{site.addr('team-request')}>", "<friend@elsewhere.test>"],
    )
    verdict = engine.decide(env, raw)
    assert isinstance(verdict, Accept)
    assert verdict.edits.del_recipients == (f"<{site.addr('team-request')}>",)
    assert verdict.edits.add_recipients == ()


def test_expired_token_is_refused(engine: ListEngine, site: Site):
    send(engine, "old@example.net", site.addr("team-join"))
    with site.sessions.begin() as s:
        pending = s.scalars(
            select(PendingRequest).where(
                PendingRequest.email == "old@example.net",
                PendingRequest.request_type == RequestType.subscription,
            )
        ).one()
        from mtaplugin.model.base import utcnow

        pending.expires_at = utcnow()
        token = pending.token
    send(engine, "old@example.net", site.addr(f"team-confirm+{token}"))
    assert not site.is_member("old@example.net")
    assert "expired" in body(site.mails_to("old@example.net")[-1])


def test_autorespond_requests_discard_answers_once_per_grace_period(engine: ListEngine, site: Site):
    autoresponds(
        site,
        "requests",
        ResponseAction.respond_and_discard,
        "Hello, $listname is closed for requests.",
    )
    send(engine, "amy@example.net", site.addr("team-request"), subject="subscribe")
    send(engine, "amy@example.net", site.addr("team-request"), subject="subscribe")
    got = site.mails_to("amy@example.net")
    assert len(got) == 1  # one autoresponse, and no confirmation: the request was dropped
    assert "Auto-response" in str(got[0]["Subject"])
    assert f"team@{site.host} is closed" in body(got[0])
    assert not site.is_member("amy@example.net")


def test_autorespond_owner_continue_and_discard(engine: ListEngine, site: Site):
    autoresponds(
        site, "owner", ResponseAction.respond_and_continue, "The owners read mail on Mondays."
    )
    verdict = send(engine, "ask@example.net", site.addr("team-owner"), subject="question")
    assert isinstance(verdict, Accept)
    assert set(verdict.edits.add_recipients) == {"olive@example.com", "mod@example.com"}
    assert "Mondays" in body(site.mails_to("ask@example.net")[-1])
    site.update(autorespond_owner=ResponseAction.respond_and_discard)
    verdict = send(engine, "ask2@example.net", site.addr("team-owner"), subject="question")
    assert isinstance(verdict, Discard)
    assert "Mondays" in body(site.mails_to("ask2@example.net")[-1])
    # Automatic mail gets no autoresponse (but is still discarded).
    verdict = send(
        engine,
        "robot@example.net",
        site.addr("team-owner"),
        headers={"Auto-Submitted": "auto-generated"},
    )
    assert isinstance(verdict, Discard) and site.mails_to("robot@example.net") == []


def test_autorespond_postings_helper(site: Site):
    from mtaplugin.commands import replies

    autoresponds(
        site,
        "postings",
        ResponseAction.respond_and_continue,
        "Thanks for posting to {{ display_name }}.",
    )
    post = Post(make_post("poster@example.net", site.addr("team")))
    env = Envelope(mail_from="poster@example.net", recipients=[f"<{site.addr('team')}>"])
    with site.sessions.begin() as s:
        mlist = lists.get(s, site.addr("team"))
        assert (
            replies.autorespond(s, mlist, "postings", post, env, per_day=5, now=utcnow()) is False
        )
    assert "Thanks for posting to Team" in body(site.mails_to("poster@example.net")[-1])


def test_a_stranger_gets_the_confirmation_in_the_language_they_asked_for(
    engine: ListEngine, site: Site
):
    send(
        engine,
        "jan@example.de",
        site.addr("team-request"),
        subject="subscribe",
        headers={"Accept-Language": "de-DE, en;q=0.5"},
    )
    (confirmation,) = site.mails_to("jan@example.de")  # the only answer
    assert "Ihre Bestätigung ist nötig" in str(
        email.header.make_header(email.header.decode_header(confirmation["Subject"]))
    )
    assert "vermutlich Sie" in body(confirmation)
    send(engine, "jan@example.de", site.addr(f"team-confirm+{token_in(confirmation)}"))
    welcome = site.mails_to("jan@example.de")[-1]
    assert "Willkommen auf der Liste" in body(welcome)
    member = team_member(site, "jan@example.de")
    assert member.preferred_language == "de"
    # Later command replies come in German without asking again.
    send(engine, "jan@example.de", site.addr("team-request"), subject="help")
    assert "E-Mail-Befehle der Liste" in body(site.mails_to("jan@example.de")[-1])


def test_who_filters_and_mailman21_set_aliases(engine: ListEngine, site: Site):
    site.update(member_roster_visibility=RosterVisibility.public)
    with site.sessions.begin() as s:
        mlist = lists.get(s, site.addr("team"))
        members.add(
            s, mlist, "dig@example.com", delivery_mode=DeliveryMode.mime_digests
        ).hide_address = False
        members.get(s, mlist, "anne@example.com", MemberRole.member).hide_address = False
    send(engine, "q@example.net", site.addr("team-request"), subject="who mode=digest")
    reply = body(site.mails_to("q@example.net")[-1])
    assert "dig@example.com" in reply and "anne@example.com" not in reply
    command(engine, site, "anne@example.com", body="set nomail on\n")
    send(engine, "q2@example.net", site.addr("team-request"), subject="who delivery=disabled")
    reply = body(site.mails_to("q2@example.net")[-1])
    assert "anne@example.com" in reply and "dig@example.com" not in reply
    command(engine, site, "anne@example.com", body="set nodupes on\nset show\n")
    shown = body(site.mails_to("anne@example.com")[-1])
    assert "delivery off" in shown and "duplicates off" in shown


def test_hold_notice_to_the_poster_is_in_their_language(engine: ListEngine, site: Site):
    site.update(emergency=True)
    with site.sessions.begin() as s:
        mlist = lists.get(s, site.addr("team"))
        members.get(s, mlist, "anne@example.com", MemberRole.member).preferred_language = "fr"
    send(engine, "anne@example.com", site.addr("team"), subject="urgent", authenticated=True)
    notice = site.mails_to("anne@example.com")[-1]
    assert "attend l'approbation" in str(
        email.header.make_header(email.header.decode_header(notice["Subject"]))
    )
    assert "est retenu jusqu'à ce qu'un modérateur l'examine" in body(notice)


def test_autorespond_postings_discard_on_the_accept_path(engine: ListEngine, site: Site):
    autoresponds(
        site,
        "postings",
        ResponseAction.respond_and_discard,
        "This list is closed for the holidays.",
    )
    verdict = send(engine, "anne@example.com", site.addr("team"), subject="a post")
    assert isinstance(verdict, Discard)
    assert "closed for the holidays" in body(site.mails_to("anne@example.com")[-1])
    site.update(autorespond_postings=ResponseAction.respond_and_continue)
    verdict = send(engine, "anne@example.com", site.addr("team"), subject="another post")
    assert isinstance(verdict, Accept) and verdict.edits.add_recipients


def test_a_banned_sender_cannot_join_by_mail_and_a_join_sends_the_lists_notices(
    engine: ListEngine, site: Site
):
    from mtaplugin.manage import bans

    with site.sessions.begin() as s:
        bans.add(s, lists.get(s, site.addr("team")), "^.*@spam\\.example$")
    site.update(send_welcome_message=True, admin_notify_mchanges=True)
    send(engine, "eve@spam.example", site.addr("team-join"), authenticated=True)
    assert not site.is_member("eve@spam.example")
    (reply,) = site.mails_to("eve@spam.example")
    assert "eve@spam.example is banned from" in body(reply)
    with site.sessions() as s:
        assert not s.scalars(
            select(PendingRequest).where(PendingRequest.email == "eve@spam.example")
        ).all()
    send(engine, "lou@example.org", site.addr("team-join"), authenticated=True)
    assert site.is_member("lou@example.org")
    assert any("Welcome" in str(m["Subject"]) for m in site.mails_to("lou@example.org"))
    assert any(
        "lou@example.org joined" in str(m["Subject"]) for m in site.mails_to("olive@example.com")
    )


def test_who_leaves_out_hidden_addresses_but_not_for_the_staff(engine: ListEngine, site: Site):
    site.update(member_roster_visibility=RosterVisibility.public)
    with site.sessions.begin() as s:
        mlist = lists.get(s, site.addr("team"))
        members.add(s, mlist, "shown@example.com").hide_address = False
        members.add(s, mlist, "quiet@example.com")  # hide_address: the default, hidden
    send(engine, "q@example.net", site.addr("team-request"), subject="who")
    reply = body(site.mails_to("q@example.net")[-1])
    assert "shown@example.com" in reply
    assert "quiet@example.com" not in reply and "anne@example.com" not in reply
    assert "and 2 who hide their address" in reply
    send(engine, "mod@example.com", site.addr("team-request"), subject="who")
    reply = body(site.mails_to("mod@example.com")[-1])
    assert "quiet@example.com" in reply and "shown@example.com" in reply
    # set hide off by mail: then the address is shown
    command(engine, site, "anne@example.com", subject="set hide off")
    send(engine, "q3@example.net", site.addr("team-request"), subject="who")
    assert "anne@example.com" in body(site.mails_to("q3@example.net")[-1])


def test_set_topics_by_mail(engine: ListEngine, site: Site):
    command(engine, site, "anne@example.com", subject="set topics release")
    assert "has no topics" in body(site.mails_to("anne@example.com")[-1])
    site.update(
        topics_enabled=True,
        topics=[["release", "release", ""], ["social", "dinner", "food"]],
    )
    command(
        engine,
        site,
        "anne@example.com",
        body="set topics Release, nosuch\nset topics RELEASE\nset nonmatching on\nset show\n",
    )
    reply = body(site.mails_to("anne@example.com")[-1])
    assert "no such topic on" in reply and "nosuch" in reply
    assert "set topics release: done" in reply
    assert "topics release" in reply and "nonmatching on" in reply
    member = team_member(site, "anne@example.com")
    assert member.topics == ["release"] and member.receive_nonmatching_topics


def test_the_hold_notice_names_the_post_by_request_id_and_message_id(
    engine: ListEngine, site: Site
):
    held, notice = _held_with_notice(engine, site, unique("named"))
    msgid = email.message_from_bytes(held.raw)["Message-ID"]
    assert msgid.endswith("@client.test>")
    text = body(notice)
    assert f"Message-ID: {msgid}" in text
    assert f"held approve {site.addr('team')} {held.id}" in text
