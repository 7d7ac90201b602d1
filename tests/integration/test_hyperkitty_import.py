"""HyperKitty's archive moved in straight from its database (issue 31): a real HyperKitty
(in its throw-away virtualenv, as for the ``hyperkitty`` archiver) archives a thread of
three posts through its own archiving API -- the third a reply that names its parent only
in ``References`` (HyperKitty keeps the parent, not the field) and carries an attachment,
sent from a +02:00 time zone.  ``mtaplugin archive import LIST --hyperkitty-db URL`` then
reads HyperKitty's SQLite database and the archive holds the same posts: Message-IDs (so
the hashes HyperKitty's links carry are ours too), dates, the thread, the attachment.  Run
again, it adds nothing."""

from __future__ import annotations

import email
from collections.abc import Iterator
from email.message import EmailMessage
from email.utils import parsedate_to_datetime
from pathlib import Path

import pytest
from sqlalchemy import create_engine, select, text

from mtaplugin import config
from mtaplugin.archivers import hyperkitty as hk_api
from mtaplugin.cli.archive import import_archive
from mtaplugin.config.mail import ArchiversSettings
from mtaplugin.db import make_engine, sessionmaker_for, upgrade
from mtaplugin.manage import domains, lists
from mtaplugin.model import ArchivedMessage
from tests.helpers import unique
from tests.integration.test_archivers_path import KEY, HyperKitty, hyperkitty  # noqa: F401


def post(n: int, mid: str, subject: str, **fields: str) -> bytes:
    msg = EmailMessage()
    msg["From"] = f"Ann Example <ann{n}@example.org>"
    msg["To"] = "team@hk.example"
    msg["Subject"] = subject
    msg["Date"] = f"Thu, 03 Dec 2026 1{n}:00:00 +0200"
    msg["Message-ID"] = f"<{mid}>"
    for name, value in fields.items():
        msg[name.replace("_", "-")] = value
    msg.set_content(f"post number {n}\n")
    return msg.as_bytes()


@pytest.fixture
def site(tmp_path: Path) -> Iterator[tuple[config.Settings, str]]:
    url = f"sqlite:///{tmp_path}/lists.db"
    upgrade(url)
    engine = make_engine(url)
    host = f"{unique('hk')}.example"
    address = f"team@{host}"
    with sessionmaker_for(engine).begin() as s:
        domains.create(s, host)
        lists.create(s, address)
    engine.dispose()
    yield config.load(None, environ={"MTAPLUGIN_DATABASE_URL": url}), address


def test_hyperkittys_database_moves_in_with_ids_dates_threads_and_attachments(
    hyperkitty: HyperKitty,  # noqa: F811
    site: tuple[config.Settings, str],
) -> None:
    settings, address = site
    api = ArchiversSettings(
        hyperkitty=True, hyperkitty_base_url=hyperkitty.base_url, hyperkitty_api_key=KEY
    )
    tag = unique("hk")
    root, reply, deep = (f"{tag}.{n}@example.org" for n in (1, 2, 3))
    third = email.message_from_bytes(post(3, deep, "Re: plans", References=f"<{root}> <{reply}>"))
    assert isinstance(third, email.message.Message)
    with_file = EmailMessage()
    for name, value in third.items():
        with_file[name] = value
    with_file.set_content("post number 3\n")
    with_file.add_attachment(b"%PDF-1.4 agenda", maintype="application", subtype="pdf",
                             filename="agenda.pdf")  # fmt: skip
    for raw in (
        post(1, root, "plans"),
        post(2, reply, "Re: plans", In_Reply_To=f"<{root}>"),
        with_file.as_bytes(),
    ):
        hk_api.archive(api, address, raw)

    hk_db = f"sqlite:///{hyperkitty.project / 'hk.db'}"
    hk = create_engine(hk_db)
    with hk.connect() as conn:
        kept = {
            r.message_id: r.message_id_hash
            for r in conn.execute(
                text(
                    "SELECT message_id, message_id_hash FROM hyperkitty_email"
                    " WHERE message_id IN (:a, :b, :c)"
                ),
                {"a": root, "b": reply, "c": deep},
            )
        }
    hk.dispose()
    assert set(kept) == {root, reply, deep}  # HyperKitty took them

    assert import_archive(settings, address, "", pipermail=False, hyperkitty=hk_db) == 0
    engine = make_engine(settings.database.url)
    try:
        with sessionmaker_for(engine)() as s:
            mlist = lists.get(s, address)
            rows = {
                m.message_id.strip("<>"): m
                for m in s.scalars(
                    select(ArchivedMessage).where(ArchivedMessage.mailing_list_id == mlist.id)
                )
            }
            assert set(rows) == {root, reply, deep}
            # the hash HyperKitty's /message/HASH/ links carry finds the same post here
            assert {mid: rows[mid].message_id_hash for mid in rows} == kept
            # one thread, the parents HyperKitty knew (the third's only through References)
            assert len({m.thread_id for m in rows.values()}) == 1
            assert rows[reply].parent_id == rows[root].id
            assert rows[deep].parent_id == rows[reply].id
            # dates kept (stored in UTC), the sender's +02:00 in the Date field
            first = email.message_from_bytes(rows[root].raw)
            assert parsedate_to_datetime(str(first["Date"])).utcoffset().total_seconds() == 7200  # type: ignore[union-attr]
            assert rows[root].date == parsedate_to_datetime("Thu, 03 Dec 2026 11:00:00 +0200")
            assert "agenda.pdf" in str(rows[deep].attachments)
            assert "post number 2" in rows[reply].text
    finally:
        engine.dispose()
    # again: nothing new
    before = len(rows)
    assert import_archive(settings, address, "", pipermail=False, hyperkitty=hk_db) == 0
    engine = make_engine(settings.database.url)
    try:
        with sessionmaker_for(engine)() as s:
            mlist = lists.get(s, address)
            count = len(
                s.scalars(
                    select(ArchivedMessage.id).where(ArchivedMessage.mailing_list_id == mlist.id)
                ).all()
            )
    finally:
        engine.dispose()
    assert count == before
