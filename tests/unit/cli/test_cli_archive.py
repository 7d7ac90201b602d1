"""``mtaplugin archive import|export|rebuild|remove`` on SQLite and PostgreSQL: a
Pipermail mbox imported (twice: once), threaded; a month exported as mboxrd and imported
into another list with the same threads; posts removed by hash and by author."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.archive.hashing import message_id_hash
from mtaplugin.manage import lists
from mtaplugin.model.archive import ArchivedMessage, ArchiveThread

PIPERMAIL = b"""From anne at example.com  Tue Mar  3 10:00:00 2026
From: anne at example.com (Anne Example)
Date: Tue, 03 Mar 2026 10:00:00 +0000
Subject: [Team] release plan
Message-ID: <p1@example.com>

The plan.
>From here on, quoted by mboxo.

From bob at example.com  Tue Mar  3 12:00:00 2026
From: bob at example.com (Bob)
Date: Tue, 03 Mar 2026 12:00:00 +0000
Subject: Re: [Team] release plan
In-Reply-To: <p2@example.com>
References: <p1@example.com> <p2@example.com>
Message-ID: <p3@example.com>

Bob answers Carol, who comes next in the file.

From carol at example.com  Tue Mar  3 11:00:00 2026
From: carol at example.com (Carol)
Date: Tue, 03 Mar 2026 11:00:00 +0000
Subject: Re: [Team] release plan
In-Reply-To: <p1@example.com>
References: <p1@example.com>
Message-ID: <p2@example.com>

Carol answers Anne.

From dave at example.com  Wed Apr  1 09:00:00 2026
From: dave at example.com (Dave)
Date: Wed, 01 Apr 2026 09:00:00 +0000
Subject: [Team] another topic
Message-ID: <p4@example.com>

April.
"""


def posts(db: sessionmaker[Session], address: str) -> dict[str, ArchivedMessage]:
    with db() as s:
        pk = lists.get(s, address).id
        rows = s.scalars(select(ArchivedMessage).where(ArchivedMessage.mailing_list_id == pk))
        out = {m.message_id.split("@")[0].lstrip("<"): m for m in rows}
        s.expunge_all()
        return out


def shape(db: sessionmaker[Session], address: str) -> dict[str, str | None]:
    """Each post's parent (by Message-ID)."""
    m = posts(db, address)
    by_pk = {v.id: k for k, v in m.items()}
    return {k: by_pk.get(v.parent_id) if v.parent_id else None for k, v in m.items()}


def test_import_thread_export_reimport(run, db, team: str, tmp_path: Path) -> None:
    path = tmp_path / "2026-March.txt"
    path.write_bytes(PIPERMAIL)
    done = run("archive", "import", team, str(path))
    assert done.code == 0, done.err
    assert "4 posts read, 4 archived, 0 there already" in done.out
    m = posts(db, team)
    assert m["p1"].sender == "anne@example.com" and m["p1"].sender_name == "Anne Example"
    assert "From here on" in m["p1"].text and ">From here" not in m["p1"].text
    assert shape(db, team) == {"p1": None, "p2": "p1", "p3": "p2", "p4": None}
    with db() as s:
        titles = sorted((t.subject, t.posts) for t in s.scalars(select(ArchiveThread)))
    assert titles == [("another topic", 1), ("release plan", 3)]
    again = run("archive", "import", team, str(path))
    assert "4 posts read, 0 archived, 4 there already" in again.out

    month = run("archive", "export", team, "--month", "2026-03")
    assert month.code == 0
    assert month.out.count("\nFrom ") + month.out.startswith("From ") == 3
    assert "\n>From here on" in month.out  # mboxrd: quoted once more than it is
    assert "April." not in month.out
    exported = tmp_path / "march.mbox"
    exported.write_text(month.out)
    assert run("lists", "create", "copy@lists.test").code == 0
    assert run("archive", "import", "copy@lists.test", str(exported)).code == 0
    assert shape(db, "copy@lists.test") == {"p1": None, "p2": "p1", "p3": "p2"}
    copied = posts(db, "copy@lists.test")
    assert copied["p1"].text == m["p1"].text

    rebuilt = run("archive", "rebuild", team)
    assert rebuilt.code == 0 and "4 posts read again, 2 threads" in rebuilt.out
    assert shape(db, team) == {"p1": None, "p2": "p1", "p3": "p2", "p4": None}


def test_remove_by_hash_and_by_author(run, db, team: str, tmp_path: Path) -> None:
    path = tmp_path / "a.mbox"
    path.write_bytes(PIPERMAIL)
    run("archive", "import", team, str(path))
    gone = run("archive", "remove", team, message_id_hash("<p1@example.com>"))
    assert gone.code == 0 and "1 posts removed" in gone.out
    m = posts(db, team)
    assert m["p1"].removed and m["p1"].raw == b"" and m["p1"].text == ""
    assert m["p1"].removed_at is not None and m["p1"].sender == ""
    assert m["p2"].parent_id == m["p1"].id  # the replies keep their place
    with db() as s:
        thread = s.get(ArchiveThread, m["p2"].thread_id)
        assert thread is not None and thread.subject == "release plan"  # from Carol's post
    assert "The plan." not in run("archive", "export", team).out
    by_author = run("archive", "remove", team, "--author", "Bob@Example.com")
    assert "1 posts removed" in by_author.out
    assert posts(db, team)["p3"].removed


def test_bad_input_names_the_field(run, team: str, tmp_path: Path) -> None:
    bad = run("archive", "export", team, "--month", "2026-13")
    assert bad.code == 1 and "--month" in bad.err
    none = run("archive", "remove", team)
    assert none.code == 1 and "HASH" in none.err
    missing = run("archive", "remove", team, "NOSUCHHASH")
    assert missing.code == 1 and "NOSUCHHASH" in missing.err
    assert run("archive", "import", team, "/nonexistent.mbox").code == 1
    neither = run("archive", "import", team)
    assert neither.code == 1 and "MBOX" in neither.err and "--hyperkitty-db" in neither.err
    both = run("archive", "import", team, "/x.mbox", "--hyperkitty-db", "sqlite:///x.db")
    assert both.code == 1 and "not both" in both.err
    empty = run("archive", "import", team, "--hyperkitty-db", f"sqlite:///{tmp_path}/no.db")
    assert empty.code == 1 and "hyperkitty-db" in empty.err


def test_a_post_without_date_takes_its_from_line_s(run, db, team: str, tmp_path: Path) -> None:
    path = tmp_path / "undated.mbox"
    path.write_bytes(
        b"From anne@example.com Sun Feb  1 08:30:00 2026\n"
        b"From: anne@example.com\nSubject: undated\nMessage-ID: <u1@example.com>\n\nx\n"
    )
    assert run("archive", "import", team, str(path)).code == 0
    msg = posts(db, team)["u1"]
    assert msg.date is not None and msg.date.isoformat() == "2026-02-01T08:30:00+00:00"
    assert msg.archived_at > msg.date  # archived now, not then
