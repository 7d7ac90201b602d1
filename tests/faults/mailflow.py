"""Posts offered to a list through a private Postfix lab as a sending MTA offers them,
while a test breaks the list database or DNS underneath; then the count of what came out.

:class:`Flow` offers numbered posts (``[fault N]`` in the subject): a 250 is counted and the
post is done; a 4xx is counted and the post is offered again later (as a sending MTA's queue
does) until it gets a 250 or the flow gives up; a 5xx is counted as refused (no fault
scenario expects one).  :meth:`Flow.settle` waits for the sink and fills the
:class:`~tests.faults.ledger.FaultRow`: every accepted post must reach every member exactly
once (a duplicate is counted, a missing copy is ``lost``).
"""

from __future__ import annotations

import itertools
import re
import smtplib
import time
from collections import Counter
from dataclasses import dataclass, field

from mtaplugin.testing.lab import Lab
from tests.faults.ledger import FaultRow
from tests.helpers import make_post

_flows = itertools.count(1)


@dataclass
class Attempt:
    post: int
    code: int
    text: str


@dataclass
class Flow:
    lab: Lab
    list_address: str
    poster: str
    members: list[str]
    row: FaultRow
    #: tells this flow's posts from another's ("[fault TAG N]"); by default unique to the
    #: flow, so that a late copy of an earlier flow's post is not taken for a duplicate
    tag: str = field(default_factory=lambda: f"f{next(_flows)}-")
    #: the posts that got their 250, in order
    accepted: list[int] = field(default_factory=list)
    #: the posts still waiting for a retry (4xx so far)
    waiting: list[int] = field(default_factory=list)
    attempts: list[Attempt] = field(default_factory=list)
    _next: int = 0

    @property
    def domain(self) -> str:
        return self.list_address.split("@", 1)[1]

    def _attempt(self, post: int) -> Attempt:
        """One SMTP transaction for ``post``.  Other traffic first in the same session, as on
        a real server: Postfix's smtpd keeps its last address resolution (a failure while
        the database was down) until it resolves another address."""
        message = make_post(
            self.poster, self.list_address, subject=f"post [fault {self.tag}{post}]"
        )
        try:
            with self.lab.connect() as smtp:
                smtp.mail(self.poster)
                smtp.rcpt(f"other-{len(self.attempts)}@{self.domain}")
                smtp.rset()
                code, text = smtp.mail(self.poster)
                if code == 250:
                    code, text = smtp.rcpt(self.list_address)
                if code == 250:
                    code, text = smtp.data(message)
        except smtplib.SMTPResponseException as exc:
            # smtplib raises for a refused DATA command: the server's own answer
            code, text = exc.smtp_code, exc.smtp_error
        except OSError as exc:
            # a dropped connection is a temporary failure to the sending MTA
            code, text = 421, str(exc).encode()
        attempt = Attempt(post, code, text.decode(errors="replace"))
        self.attempts.append(attempt)
        return attempt

    def _offer(self, post: int) -> Attempt:
        attempt = self._attempt(post)
        if attempt.code == 250:
            self.row.accepted += 1
            self.accepted.append(post)
        elif 400 <= attempt.code < 500:
            self.row.deferred += 1
            self.waiting.append(post)
        else:
            self.row.refused += 1
        return attempt

    def offer_new(self) -> Attempt:
        """Offer the next new post once."""
        self._next += 1
        self.row.offered += 1
        return self._offer(self._next)

    def retry_waiting(self) -> None:
        """Offer every deferred post again once (the sending MTA's queue run)."""
        waiting, self.waiting = self.waiting, []
        for post in waiting:
            self._offer(post)

    def drain(self, timeout: float = 120.0, interval: float = 1.0) -> None:
        """Retry the deferred posts until all got a 250 (AssertionError after ``timeout``)."""
        deadline = time.monotonic() + timeout
        while self.waiting:
            if time.monotonic() > deadline:
                last = self.attempts[-1]
                raise AssertionError(
                    f"posts {self.waiting} still deferred after {timeout} s: "
                    f"{last.code} {last.text}\n{self.lab.log()[-3000:]}"
                )
            time.sleep(interval)
            self.retry_waiting()

    def copies(self) -> Counter[tuple[int, str]]:
        """(post, member) → copies that reached the sink."""
        found: Counter[tuple[int, str]] = Counter()
        subject = re.compile(
            rb"^Subject: .*\[fault " + re.escape(self.tag.encode()) + rb"(\d+)\]", re.MULTILINE
        )
        for member in self.members:
            for msg in self.lab.sink.to(member):
                match = subject.search(msg.data)
                if match:
                    found[(int(match.group(1)), member)] += 1
        return found

    def settle(self, timeout: float = 90.0) -> FaultRow:
        """Wait until every accepted post reached every member (or ``timeout``), then fill
        in delivered, duplicates and lost."""
        expected = {(p, m) for p in self.accepted for m in self.members}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if expected <= set(self.copies()):
                break
            time.sleep(0.5)
        time.sleep(1.0)  # a late duplicate still in Postfix's queue
        copies = self.copies()
        self.row.delivered = sum(1 for key in copies if key in expected)
        self.row.duplicates = sum(n - 1 for key, n in copies.items() if key in expected)
        self.row.lost = len(expected - set(copies))
        unexpected = [key for key in copies if key not in expected]
        if unexpected:
            # a copy of a post that was never answered 250: counted, and shown
            self.row.notes.append(f"copies of posts never accepted: {sorted(unexpected)[:5]}")
        return self.row
