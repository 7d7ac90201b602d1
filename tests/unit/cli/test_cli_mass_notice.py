"""``mtaplugin members add`` with many addresses tells the owners once (Mailman 2.1's mass
subscription), naming them all."""

from __future__ import annotations

import email

from sqlalchemy import select

from mtaplugin.manage import lists
from mtaplugin.model import OutboxMessage


def test_fifty_addresses_added_from_the_cli_give_one_owners_notice(run, db, team: str):
    assert run("members", "add", team, "olive@example.com", "--role", "owner").code == 0
    addresses = [f"p{n:02d}@mass.example" for n in range(50)]
    r = run("members", "add", team, *addresses, "--admin-notify", "--no-welcome-msg", "--quiet")
    assert r.code == 0, r.err
    with db() as s:
        pk = lists.get(s, team).id
        rows = s.scalars(select(OutboxMessage).where(OutboxMessage.mailing_list_id == pk)).all()
        notices = [email.message_from_bytes(row.raw) for row in rows]
    assert len(notices) == 1
    body = notices[0].get_payload(decode=True).decode()
    assert all(a in body for a in addresses)
