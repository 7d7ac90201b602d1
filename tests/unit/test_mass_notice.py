"""A mass subscription (or unsubscription) from the web admin's page tells the owners
once, naming every address, as Mailman 2.1 does -- not once per address."""

from __future__ import annotations

import email
from email.message import Message
from pathlib import Path

import pytest
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.manage import lists
from tests.unit.webclient import Site, make_site


@pytest.fixture
def site(module_sessions: sessionmaker[Session], tmp_path: Path) -> Site:
    site = make_site(module_sessions, tmp_path / "var")
    site.update(admin_notify_mchanges=True, send_welcome_message=False)
    return site


def owner_notices(site: Site) -> list[Message]:
    return [
        email.message_from_bytes(row.raw)
        for row in site.outbox()
        if f"owner@{site.host}" in row.recipients
    ]


def test_fifty_addresses_give_one_owners_notice_listing_them(site: Site):
    client = site.client()
    client.login(f"owner@{site.host}")
    lines = "\n".join(f"p{n:02d}@mass.example" for n in range(50))
    done = client.post(f"/lists/{site.list_id}/mass", {"op": "subscribe", "addresses": lines})
    assert done.status_code == 200 and "Subscribed 50" in done.text
    [notice] = owner_notices(site)
    body = notice.get_payload(decode=True).decode()
    assert all(f"p{n:02d}@mass.example" in body for n in range(50))
    assert "50" in notice["Subject"]

    gone = client.post(
        f"/lists/{site.list_id}/mass",
        {
            "op": "unsubscribe",
            "addresses": "\n".join(f"p{n:02d}@mass.example" for n in range(10)),
            "confirm_name": site.address,
        },
    )
    assert gone.status_code == 200
    notices = owner_notices(site)
    assert len(notices) == 2
    left = notices[1].get_payload(decode=True).decode()
    assert all(f"p{n:02d}@mass.example" in left for n in range(10))
    assert "p10@mass.example" not in left


def test_one_address_gets_the_usual_notice_and_quiet_gets_none(site: Site):
    client = site.client()
    client.login(f"owner@{site.host}")
    client.post(f"/lists/{site.list_id}/mass", {"op": "subscribe", "addresses": "one@x.example"})
    [notice] = owner_notices(site)
    assert "one@x.example joined" in notice["Subject"]
    client.post(
        f"/lists/{site.list_id}/mass",
        {"op": "subscribe", "addresses": "two@x.example\nthree@x.example", "quiet": "1"},
    )
    assert len(owner_notices(site)) == 1
    with site.sessions() as s:
        assert lists.get(s, site.address).admin_notify_mchanges


def test_a_mass_subscription_reads_the_list_s_welcome_once_and_the_next_one_anew(
    module_sessions: sessionmaker[Session], site: Site
):
    """The welcome each new member gets comes from the list's own text, looked up once
    per mass subscription (not once per address); a text changed afterwards is what the
    next mass subscription sends."""
    from sqlalchemy import event

    from mtaplugin.enums import TemplateScope
    from mtaplugin.manage.subscriptions.subscribe import mass_subscribe
    from mtaplugin.model import Template

    site.update(send_welcome_message=True, admin_notify_mchanges=False)
    with module_sessions.begin() as s:
        mlist = lists.get(s, site.address)
        row = Template(
            scope=TemplateScope.list,
            mailing_list_id=mlist.id,
            name="list:user:notice:welcome",
            text="Hello {{ user_email }}, first text",
        )
        s.add(row)
    engine = module_sessions.kw["bind"]
    lookups: list[str] = []

    def count(conn, cursor, statement, params, context, executemany):  # type: ignore[no-untyped-def]
        if "FROM templates" in statement:
            lookups.append(statement)

    event.listen(engine, "before_cursor_execute", count)
    try:
        with module_sessions.begin() as s:
            entries = [(f"w{n}@welcome.example", "") for n in range(5)]
            mass_subscribe(s, lists.get(s, site.address), entries, send_admin_notice=False)
    finally:
        event.remove(engine, "before_cursor_execute", count)
    assert len(lookups) == 1
    welcomes = [r for r in site.outbox() if r.recipients[0].endswith("@welcome.example")]
    assert len(welcomes) == 5
    assert all(b"first text" in r.raw for r in welcomes)
    assert b"Hello w3@welcome.example" in b"".join(r.raw for r in welcomes)
    with module_sessions.begin() as s:
        s.get(Template, row.id).text = "Hello again, second text"  # type: ignore[union-attr]
    with module_sessions.begin() as s:
        mass_subscribe(s, lists.get(s, site.address), [("x@welcome.example", "")])
    (last,) = [r for r in site.outbox() if r.recipients == ["x@welcome.example"]]
    assert b"second text" in last.raw


def test_a_batch_sent_in_chunks_gives_one_owners_notice_with_its_last_chunk(site: Site):
    """The page (mass.js) sends its addresses 200 at a time, each chunk naming the batch:
    the owners hear once, with the last chunk, of every address of the batch."""
    client = site.client()
    client.login(f"owner@{site.host}")
    url = f"/lists/{site.list_id}/mass"
    chunks = [[f"c{c}-{n}@chunks.example" for n in range(3)] for c in range(3)]
    batch = "0f8e2c1a-5b7d-4e3f-9a1b-2c3d4e5f6a7b"
    for c, chunk in enumerate(chunks):
        form = {"op": "subscribe", "addresses": "\n".join(chunk), "batch": batch}
        if c == len(chunks) - 1:
            form["last"] = "1"
        else:
            assert owner_notices(site) == []
        done = client.post(url, form, headers={"Accept": "application/json"})
        assert done.status_code == 200 and done.json["done"] == 3
    [notice] = owner_notices(site)
    body = notice.get_payload(decode=True).decode()
    assert all(email in body for chunk in chunks for email in chunk)
    assert "9" in notice["Subject"]

    # a batch stopped by a refused chunk: the page sends an empty last chunk, and the
    # owners hear of what went through
    other = "1a2b3c4d-0000-4000-8000-000000000001"
    client.post(url, {"op": "subscribe", "addresses": "d1@chunks.example", "batch": other})
    bad = client.post(
        url,
        {"op": "subscribe", "addresses": "not an address", "batch": other},
        headers={"Accept": "application/json"},
    )
    assert bad.status_code == 400
    client.post(url, {"op": "subscribe", "addresses": "", "batch": other, "last": "1"})
    notices = owner_notices(site)
    assert len(notices) == 2
    assert "d1@chunks.example joined" in notices[1]["Subject"]

    # removed in chunks: one notice too; quiet: none
    gone = "1a2b3c4d-0000-4000-8000-000000000002"
    for c, chunk in enumerate(chunks):
        form = {"op": "unsubscribe", "addresses": "\n".join(chunk), "batch": gone}
        form["confirm_name"] = site.address
        if c == len(chunks) - 1:
            form["last"] = "1"
        client.post(url, form, headers={"Accept": "application/json"})
    notices = owner_notices(site)
    assert len(notices) == 3 and "9 addresses left" in notices[2]["Subject"]
    quiet = "1a2b3c4d-0000-4000-8000-000000000003"
    for c, chunk in enumerate(chunks):
        form = {"op": "subscribe", "addresses": "\n".join(chunk), "batch": quiet, "quiet": "1"}
        if c == len(chunks) - 1:
            form["last"] = "1"
        client.post(url, form, headers={"Accept": "application/json"})
    assert len(owner_notices(site)) == 3
