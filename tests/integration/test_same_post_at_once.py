"""The same post decided twice at the same moment (issue 33, item 5): a sender's retry
racing its first try, or the post reaching the milter (SMTP) and the LMTP front end at
once.  Before the archive left the decision, the second decision's transaction hit the
archive's unique index (``UNIQUE constraint failed: archived_messages``) and the sender got
``451 4.3.0 internal error`` with a traceback in the log.

Now, as docs/reliability.md says: each submission is decided on its own and answered 250
(the members get one copy per submission: a bounded duplicate, which only a duplicate
check on Message-ID could remove), the archive keeps the post once, and nothing in the log
is an error.  Debian's Postfix lab (the milter and the LMTP front end), SQLite and PostgreSQL."""

from __future__ import annotations

import smtplib
from concurrent.futures import ThreadPoolExecutor
from email import message_from_bytes

from sqlalchemy import func, select

from mtaplugin.model.archive import ArchivedMessage
from mtaplugin.testing import wait_for
from mtaplugin.testing.lab import Lab
from mtaplugin.testing.mta import Refused
from tests.helpers import make_post, unique
from tests.integration.labs import copies, make_list, session_on, waits

#: submissions of the identical post: half over SMTP, half over LMTP, all at once
SMTP_TRIES = 3
LMTP_TRIES = 3


def _lmtp(lab: Lab, sender: str, rcpt: str, post: bytes) -> Refused | None:
    with smtplib.LMTP(str(lab.lmtp_socket), timeout=120) as lmtp:
        lmtp.ehlo("client.test")
        try:
            lmtp.sendmail(sender, [rcpt], post)
        except smtplib.SMTPRecipientsRefused as exc:
            code, text = exc.recipients[rcpt]
            return Refused("rcpt", code, text.decode(errors="replace"))
        except smtplib.SMTPDataError as exc:
            return Refused("data", exc.smtp_code, exc.smtp_error.decode(errors="replace"))
    return None


def _archived(lab: Lab, message_id: str) -> int:
    with session_on(lab) as db:
        return int(
            db.scalar(
                select(func.count())
                .select_from(ArchivedMessage)
                .where(ArchivedMessage.message_id.contains(message_id))
            )
            or 0
        )


def test_the_same_post_at_once_over_smtp_and_lmtp_is_a_bounded_duplicate(
    debian_lab: Lab,
) -> None:
    lab = debian_lab
    with session_on(lab) as db:
        posting = make_list(db, "ann@example.org", "bob@example.org").posting_address
    subject = unique("at-once")
    post = make_post("ann@example.org", posting, subject=subject)
    message_id = str(message_from_bytes(post)["Message-ID"]).strip("<>")
    log_before = len(lab.log())

    with ThreadPoolExecutor(SMTP_TRIES + LMTP_TRIES) as pool:
        answers = [
            pool.submit(lab.send, "ann@example.org", [posting], post) for _ in range(SMTP_TRIES)
        ] + [pool.submit(_lmtp, lab, "ann@example.org", posting, post) for _ in range(LMTP_TRIES)]
        refused = [f.result(timeout=300) for f in answers]

    log = lab.log()[log_before:]
    assert refused == [None] * (SMTP_TRIES + LMTP_TRIES), (refused, log[-4000:])
    # each submission decided once: one copy per submission, no more
    tries = SMTP_TRIES + LMTP_TRIES
    for member in ("ann@example.org", "bob@example.org"):
        waits(lab, lambda m=member: copies(lab, subject, m) >= tries, timeout=120)
    # the archive keeps the post once (the worker drains the journal after the 250s)
    wait_for(lambda: _archived(lab, message_id) >= 1, timeout=120, interval=0.5)
    assert _archived(lab, message_id) == 1
    log = lab.log()[log_before:]
    assert "UNIQUE" not in log and "Traceback" not in log and "internal error" not in log, log
    assert copies(lab, subject, "bob@example.org") == tries
