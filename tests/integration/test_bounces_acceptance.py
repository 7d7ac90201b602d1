"""The acceptance of issue 15 (bounces, VERP, the envelope sender, the scheduler), tried as
a new user would, through a real private Postfix, on SQLite and on PostgreSQL:

1. a post to a list that VERPs every post (``[bounces] verp_delivery_interval = 1``)
   reaches every member with ``MAIL FROM:<list-bounces+member=domain@…>``;
2. the DSN (RFC 3464, as a receiving MTA writes it) for one member, sent back to the
   envelope sender the sink saw, on five different days, raises that member's bounce score
   to the threshold, disables delivery, then the warnings go out and finally the member is
   removed; the owner hears of the disable and of the removal (the list's default
   settings: no notice per increment); every step is read over REST (the real
   mailmanclient against the real gunicorn ``mtaplugin api``) and on the web members page
   (the same gunicorn, logged in as the owner);
3. a qmail bounce (a format only flufl.bounce reads) for a nonmember reaches the owner.

The fourth point -- a moderator with ``admin_immed_notify`` off gets the daily reminder --
is tests/integration/test_scheduler_path.py, through the same Postfix lab.

**The clock.**  The lab runs ``mtaplugin milter`` alone: no worker runs jobs or the outbox
behind the test's back.  The test runs them itself, as the worker would, on a world of its
own (``wiring.build(settings, clock=ManualClock)`` on the lab's database): the outbox
delivery (through the lab's re-injection listener, ``outbox.xverp`` as the Postfix labs set
it) and the jobs ``bounces`` and ``bounce-warnings`` at the test clock's time.

Every one of the five DSNs goes through the real Postfix and the real milter.  But the
milter stamps the bounce event with the machine's time when it decides (``event.at``), and
a score counts at most one bounce per day by that stamp: the five real DSNs all fall on
today and count once.  So on days 2 to 5 the same DSN is also decided in this process by
the very engine the milter runs (``wiring.list_engine(world).decide(Envelope, raw)``),
whose world has the test clock, moved one day each time.  That day's real DSN, decided
just after, is processed after it and counts nothing (same day as a bounce already
counted): the test checks that too.  No production code has a test hook and no row is
edited by hand.
"""

from __future__ import annotations

import email
import email.policy
import email.utils
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.message import Message
from email.policy import compat32
from pathlib import Path

import pytest
import requests
from mailmanclient import Client
from sqlalchemy import select

from mtaplugin import config, wiring
from mtaplugin.bounces import verp
from mtaplugin.bounces.standing import when
from mtaplugin.clock import ManualClock
from mtaplugin.enums import BounceKind, MemberRole
from mtaplugin.manage import members, users
from mtaplugin.model import BounceEvent, MailingList
from mtaplugin.posting.verdict import Discard
from mtaplugin.testing import wait_for_port
from mtaplugin.testing.lab import Lab
from mtaplugin.testing.process import MtapluginProcess
from mtaplugin.testing.sink import Received
from mtaplugin.vocabulary.envelope import Envelope
from mtaplugin.vocabulary.job import Job, JobContext
from mtaplugin.worker.registry import BOUNCE_WARNINGS, PROCESS_BOUNCES
from tests.conftest import BACKENDS
from tests.helpers import make_post, unique
from tests.integration.conftest import LabPool, lab_database, postfix_lab
from tests.integration.labs import make_list, session_on, waits

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "bounces"
ADMIN = ("restadmin", "restpass")
PASSWORD = "owner's long passphrase"
_CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


@dataclass
class BounceLab:
    """The milter-only Postfix lab, the gunicorn ``mtaplugin api`` on its database, and
    the test's own world (the worker's part) on the test clock."""

    lab: Lab
    api_port: int
    clock: ManualClock
    world: wiring.World

    @property
    def web(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    def rest(self) -> Client:
        return Client(f"{self.web}/3.1", *ADMIN)

    def deliver(self) -> int:
        """The worker's outbox pass, until nothing due is left; how many were sent."""
        delivery = wiring.outbox_delivery(self.world)
        sent = 0
        while True:
            result = delivery.run()
            sent += result.sent
            assert result.deferred == result.failed == 0, result
            if not result.claimed:
                return sent

    def run(self, job: Job) -> int:
        """A scheduler job, now (the test clock), as the worker runs it."""
        return job.run(JobContext(self.world, self.clock()))


@pytest.fixture(scope="module", params=BACKENDS)
def bounce_lab(request: pytest.FixtureRequest, lab_pool: LabPool) -> Iterator[BounceLab]:
    backend = request.param
    name = f"bounces-acceptance-{backend}"
    url = lab_database(request, lab_pool.root, backend)
    lab = postfix_lab(lab_pool.root / name, url, lab_pool.dns, command=("milter",))
    # every post VERPed (Mailman's verp_delivery_interval = 1)
    lab.env["MTAPLUGIN_BOUNCES_VERP_DELIVERY_INTERVAL"] = "1"
    api = MtapluginProcess(lab_pool.root / name / "api")
    api.root.mkdir(parents=True, exist_ok=True)
    # The test clock starts an hour ahead of the machine's, so that what the milter puts
    # in the outbox (on the machine's time) is due for the test's worker.
    clock = ManualClock(datetime.now(UTC).replace(microsecond=0) + timedelta(hours=1))
    world = wiring.build(config.load(environ=lab.process_env()), clock=clock)
    try:
        with lab:
            api.start(("api",), lab.process_env(), lambda: _listening(lab.api_port))
            yield BounceLab(lab, lab.api_port, clock, world)
    finally:
        api.stop()
        world.close()


def _listening(port: int) -> bool:
    try:
        wait_for_port(port, timeout=0.2)
    except Exception:
        return False
    return True


# --- the mail -------------------------------------------------------------------------------
def dsn(reported_to: str, member: str, original: Message) -> bytes:
    """The DSN a receiving MTA sends back to ``reported_to`` (the envelope sender of the
    copy it refused): RFC 3464, ``multipart/report; report-type=delivery-status``, the
    member's mailbox unknown (5.1.1), the copy's headers returned."""
    headers = "".join(f"{k}: {v}\n" for k, v in original.items())
    boundary = unique("dsn-boundary")
    text = f"""\
From: Mail Delivery System <MAILER-DAEMON@mx.example.org>
To: {reported_to}
Subject: Undelivered Mail Returned to Sender
Date: {email.utils.formatdate(usegmt=True)}
Message-ID: <{unique("dsn")}@mx.example.org>
Auto-Submitted: auto-replied
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status;
\tboundary="{boundary}"

--{boundary}
Content-Type: text/plain; charset=us-ascii

This is the mail system at host mx.example.org.

I'm sorry to have to inform you that your message could not
be delivered to one or more recipients.

<{member}>: host mx.example.org[192.0.2.25] said: 550 5.1.1
    <{member}>: Recipient address rejected: User unknown in local recipient table

--{boundary}
Content-Type: message/delivery-status

Reporting-MTA: dns; mx.example.org
X-Postfix-Queue-ID: 4ZqAbC1234
Arrival-Date: {email.utils.formatdate(usegmt=True)}

Final-Recipient: rfc822; {member}
Original-Recipient: rfc822;{member}
Action: failed
Status: 5.1.1
Remote-MTA: dns; mx.example.org
Diagnostic-Code: smtp; 550 5.1.1 <{member}>: Recipient address rejected: User
    unknown in local recipient table

--{boundary}
Content-Type: text/rfc822-headers

{headers}
--{boundary}--
"""
    return text.replace("\n", "\r\n").encode()


def post(bl: BounceLab, mlist: MailingList, poster: str, people: tuple[str, ...]) -> str:
    """A post of ``poster`` to the list, delivered; its marker."""
    marker = unique("post")
    raw = make_post(poster, mlist.posting_address, subject=marker)
    assert bl.lab.send(poster, [mlist.posting_address], raw) is None
    # a VERPed post leaves through the outbox (stored by the milter before its 250)
    assert bl.deliver() == 1
    waits(bl.lab, lambda: set(people) <= set(copies_of(bl, marker)), timeout=30)
    return marker


def copies_of(bl: BounceLab, marker: str) -> dict[str, Received]:
    found: dict[str, Received] = {}
    for m in bl.lab.sink.messages:
        if marker.encode() in m.data:
            for r in m.recipients:
                assert r not in found, f"{r} got two copies"
                found[r] = m
    return found


def subject_of(m: Received) -> str:
    parsed = email.message_from_bytes(m.data, policy=email.policy.default)
    return " ".join(str(parsed["Subject"] or "").split())


def notices(bl: BounceLab, to: str, subject: str) -> list[Received]:
    """What ``to`` got whose Subject: has ``subject`` in it."""
    return [m for m in bl.lab.sink.to(to) if subject in subject_of(m)]


def arrives(bl: BounceLab, to: str, subject: str, count: int = 1) -> list[Received]:
    """Wait until ``to`` got ``count`` such notices (Postfix relays them to the sink)."""
    waits(bl.lab, lambda: len(notices(bl, to, subject)) >= count, timeout=30)
    got = notices(bl, to, subject)
    assert len(got) == count, [subject_of(m) for m in got]
    return got


def events(bl: BounceLab, mlist: MailingList) -> list[BounceEvent]:
    with bl.world.sessions() as s:
        query = select(BounceEvent).where(BounceEvent.mailing_list_id == mlist.id)
        found = list(s.scalars(query.order_by(BounceEvent.id)))
        s.expunge_all()
        return found


# --- what the owner sees --------------------------------------------------------------------
class OwnerViews:
    """The member's record as the owner reads it: REST and the web members page."""

    def __init__(self, bl: BounceLab, mlist: MailingList, owner: str) -> None:
        self.bl, self.mlist = bl, mlist
        self.rest = bl.rest().get_list(mlist.fqdn_listname)
        self.web = requests.Session()
        login = self.web.get(f"{bl.web}/login", timeout=30)
        csrf = _CSRF.search(login.text)
        assert csrf is not None, login.text[:500]
        done = self.web.post(
            f"{bl.web}/login",
            data={
                "email": owner,
                "password": PASSWORD,
                "next": "/",
                "csrf_token": csrf.group(1),
            },
            timeout=30,
        )
        assert done.status_code == 200 and "mtaplugin_session" in self.web.cookies, done.text

    def member(self, address: str) -> dict[str, object]:
        m = self.rest.get_member(address)
        return {
            "bounce_score": m.bounce_score,
            "last_bounce_received": m.rest_data.get("last_bounce_received"),
            "total_warnings_sent": m.total_warnings_sent,
            "delivery_status": m.preferences["delivery_status"],
        }

    def page(self) -> str:
        got = self.web.get(f"{self.bl.web}/lists/{self.mlist.list_id}/members", timeout=30)
        assert got.status_code == 200, got.text[:500]
        return got.text

    def row(self, address: str) -> str:
        page = self.page()
        assert f"<td>{address}</td>" in page, page
        return page.split(f"<td>{address}</td>")[1].split("</tr>")[0]

    def check(self, address: str, score: int, warnings: int, delivery: str | None) -> str:
        """The record over REST and on the page agree with these; the last bounce (REST).
        ``delivery``: the member's ``delivery_status`` preference (None: never set)."""
        rest = self.member(address)
        assert rest["bounce_score"] == score, rest
        assert rest["total_warnings_sent"] == warnings, rest
        assert rest["delivery_status"] == delivery, rest
        last = rest["last_bounce_received"]
        assert isinstance(last, str)
        row = self.row(address)
        assert f'<td class="bounce-score">{score}</td>' in row, row
        stamp = datetime.fromisoformat(last).replace(tzinfo=UTC)
        assert f'<td class="last-bounce">{when(stamp)}</td>' in row, row
        assert f'<td class="warnings-sent">{warnings}' in row, row
        shown = "enabled" if delivery is None else f"disabled by bounces on {last[:10]}"
        assert f'<td class="delivery">{shown}</td>' in row, row
        return last


def naive(at: datetime) -> str:
    return at.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="seconds")


# --- the acceptance ---------------------------------------------------------------------------
def test_a_dead_members_bounces_disable_warn_then_remove_them(bounce_lab: BounceLab) -> None:
    bl = bounce_lab
    lab, clock = bl.lab, bl.clock
    ann, bob, cy = "ann@example.org", f"{unique('bob')}@example.org", "cy@example.net"
    owner = f"{unique('owner')}@example.org"
    with session_on(lab) as s:
        mlist = make_list(s, ann, bob, cy)
        members.add(s, mlist, owner, MemberRole.owner)
        users.add_user(s, owner, PASSWORD)
        s.commit()
        s.expunge(mlist)
    bounces = mlist.bounces_address
    views = OwnerViews(bl, mlist, owner)
    assert views.member(bob) == {
        "bounce_score": 0,
        "last_bounce_received": None,
        "total_warnings_sent": 0,
        # as in Mailman: a member preference never set is not served
        "delivery_status": None,
    }

    # 1. A post reaches every member, each copy from the member's own VERP address.
    marker = post(bl, mlist, ann, (ann, bob, cy))
    got = copies_of(bl, marker)
    assert {p: got[p].mail_from for p in (ann, bob, cy)} == {
        p: verp.encode(bounces, p) for p in (ann, bob, cy)
    }
    # Postfix wrote the three senders itself, from one submission with XVERP.
    assert any(
        f"from=<{bounces}>" in line and "nrcpt=3" in line for line in lab.mta_log().splitlines()
    ), lab.mta_log()[-3000:]
    return_path = got[bob].mail_from  # where bob's server sends its DSN
    original = email.message_from_bytes(got[bob].data, policy=compat32)

    # 2. Day 1: bob's server refuses the copy and sends its DSN to that address.
    assert lab.send("", [return_path], dsn(return_path, bob, original)) is None
    waits(lab, lambda: events(bl, mlist), timeout=30)
    (first,) = events(bl, mlist)
    assert (first.email, first.kind, first.status) == (bob, BounceKind.hard, "5.1.1")
    assert bl.run(PROCESS_BOUNCES) == 1
    last = views.check(bob, 1, 0, None)
    assert last == naive(first.at)
    # the DSN was decided, not delivered: nobody got it
    assert not [m for m in lab.sink.messages if b"Undelivered Mail Returned" in m.data]

    engine = wiring.list_engine(bl.world)
    for day in range(2, 6):
        clock.advance(days=1)
        raw = dsn(return_path, bob, original)
        # That day's DSN, decided by the milter's engine on the test clock ...
        # (as Postfix hands them to the milter: in angle brackets)
        envelope = Envelope(mail_from="<>", recipients=[f"<{return_path}>"])
        assert isinstance(engine.decide(envelope, raw), Discard)
        # ... and through the real Postfix and milter, on the machine's clock.
        before = len(events(bl, mlist))
        assert lab.send("", [return_path], raw) is None
        waits(lab, lambda n=before: len(events(bl, mlist)) == n + 1, timeout=30)
        assert bl.run(PROCESS_BOUNCES) == 2
        today, real = events(bl, mlist)[-2:]
        assert today.at == clock() and real.at < clock() - timedelta(minutes=50)
        assert (today.email, real.email, real.processed) == (bob, bob, True)
        if day < 5:
            # one bounce a day counts: the real DSN of the same day adds nothing
            assert views.check(bob, day, 0, None) == naive(clock())
            assert bl.deliver() == 0  # the owner is not told of increments (the default)
    # Day 5: the threshold.  Delivery disabled, the owner told, the first warning sent.
    assert views.check(bob, 5, 1, "by_bounces") == naive(clock())
    assert bl.deliver() == 2
    disabled = arrives(bl, owner, f"{bob}'s delivery disabled on")
    assert [n.mail_from for n in disabled] == [bounces]
    warning = "mailing list is disabled"
    assert [n.mail_from for n in arrives(bl, bob, warning)] == [bounces]
    # bob no longer gets the list's posts; the others do
    later = post(bl, mlist, ann, (ann, cy))
    assert bob not in copies_of(bl, later)

    # The warnings, one every interval (7 days by default), then removal.
    interval = mlist.bounce_you_are_disabled_warnings_interval
    assert mlist.bounce_you_are_disabled_warnings == 3
    for sent in (2, 3):
        clock.advance(interval - timedelta(hours=1))
        assert bl.run(BOUNCE_WARNINGS) == 0  # not yet
        clock.advance(hours=1)
        assert bl.run(BOUNCE_WARNINGS) == 1
        assert bl.deliver() == 1
        arrives(bl, bob, warning, sent)
        assert views.check(bob, 5, sent, "by_bounces")
    assert {n.mail_from for n in notices(bl, bob, warning)} == {bounces}
    assert notices(bl, owner, "removed from") == []
    clock.advance(interval)
    assert bl.run(BOUNCE_WARNINGS) == 1
    assert bl.deliver() == 1
    removed = arrives(bl, owner, f"{bob} removed from")
    assert [n.mail_from for n in removed] == [bounces]
    with pytest.raises(ValueError):
        views.rest.get_member(bob)
    assert f"<td>{bob}</td>" not in views.page()
    assert {m.email for m in views.rest.members} == {ann, cy}
    # the owner heard of the disable and of the removal, nothing else; bob got 3 warnings
    assert len(lab.sink.to(owner)) == 2
    assert len(lab.sink.to(bob)) == 1 + 3  # the first post, the three warnings


def test_a_qmail_bounce_for_a_nonmember_reaches_the_owner(bounce_lab: BounceLab) -> None:
    bl = bounce_lab
    owner = f"{unique('owner')}@example.org"
    with session_on(bl.lab) as s:
        mlist = make_list(s, "ann@example.org")
        members.add(s, mlist, owner, MemberRole.owner)
        s.commit()
        s.expunge(mlist)
    raw = (CORPUS / "qmail_no_mailbox.eml").read_bytes()
    raw = raw.replace(b"team-bounces@lists.test", mlist.bounces_address.encode())
    raw = raw.replace(b"<20261204093000.12345.qmail@", f"<{unique('qmail')}@".encode())

    assert bl.lab.send("", [mlist.bounces_address], raw) is None

    waits(bl.lab, lambda: events(bl, mlist), timeout=30)
    (event,) = events(bl, mlist)
    # flufl.bounce read the qmail text: the recipient and its status, no member of the list
    assert event.email == "" and event.status == "5.1.1"
    assert event.diagnostic == "unrecognized: names no member: frank@oldhost.example"
    assert bl.deliver() == 1
    waits(bl.lab, lambda: bl.lab.sink.to(owner), timeout=30)
    (notice,) = bl.lab.sink.to(owner)
    assert notice.mail_from in {"", "<>"}
    assert f"Uncaught bounce notification for {mlist.fqdn_listname}".encode() in notice.data
    # the bounce itself attached, as it came
    parsed = email.message_from_bytes(notice.data, policy=email.policy.default)
    attached = [p.get_payload(decode=True) or b"" for p in parsed.walk() if not p.is_multipart()]
    assert any(b"Sorry, no mailbox here by that name" in a for a in attached), attached
    assert "ann@example.org" not in {e.email for e in events(bl, mlist)}
