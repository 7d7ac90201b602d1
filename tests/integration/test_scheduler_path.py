"""The scheduler through a real private Postfix: a moderator who turned the immediate
notice of each hold off (``admin_immed_notify``) still hears of the held post, from the
daily ``pending-reminders`` job, delivered by the lab's worker through Postfix."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from mtaplugin.enums import MemberRole
from mtaplugin.manage import members
from mtaplugin.model import HeldMessage
from mtaplugin.testing import wait_for
from mtaplugin.testing.lab import Lab
from tests.helpers import make_post, run_mtaplugin, unique
from tests.integration.labs import copies, copy_of, make_list


def test_a_moderator_with_immediate_notices_off_gets_the_daily_reminder(
    lab: Lab, db: Session
) -> None:
    moderator = f"{unique('mod')}@example.org"
    mlist = make_list(db, "ann@example.org", admin_immed_notify=False)
    members.add(db, mlist, moderator, MemberRole.moderator)
    db.commit()
    stranger = f"{unique('stranger')}@example.net"
    marker = unique("held-post-")
    post = make_post(stranger, mlist.posting_address, subject=marker)
    assert lab.send(stranger, [mlist.posting_address], post) is None
    wait_for(lambda: held(db, mlist.id) == 1, timeout=30)
    # No immediate notice (admin_immed_notify is off) ...
    assert copies(lab, marker, moderator) == 0
    # ... but the daily reminder, run now as the worker would run it once a day.
    done = run_mtaplugin("jobs", "run", "pending-reminders", env=lab.process_env())
    assert done.returncode == 0, done.stderr
    subject = f"1 moderator request(s) waiting on {mlist.fqdn_listname}"
    wait_for(lambda: copies(lab, subject, moderator) == 1, timeout=30)
    reminder = copy_of(lab, subject, moderator)
    assert f"The list {mlist.fqdn_listname} has 1 requests waiting" in reminder.get_payload()
    assert lab.sink.to(moderator)[-1].mail_from == mlist.bounces_address
    # Run again the same day: no second reminder.
    again = run_mtaplugin("jobs", "run", "pending-reminders", env=lab.process_env())
    assert again.returncode == 0, again.stderr
    assert copies(lab, subject, moderator) == 1


def held(db: Session, list_id: int) -> int:
    db.expire_all()
    query = select(func.count(HeldMessage.id)).where(HeldMessage.mailing_list_id == list_id)
    return int(db.scalar(query) or 0)
