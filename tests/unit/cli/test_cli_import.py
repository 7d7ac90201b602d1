"""``mtaplugin import mailman2`` in-process on SQLite and PostgreSQL, with the pickle
Mailman 3.3.10 ships."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin import passwords
from mtaplugin.errors import NotFound
from mtaplugin.importers import mm2pickle
from mtaplugin.manage import lists, users
from mtaplugin.model import Address, ArchivedMessage, Domain
from mtaplugin.testing.mailman_files import mailman_testing_file
from tests.unit.cli.conftest import Run


def test_the_command_dry_run_changes_nothing_then_imports(
    run: Run, db: sessionmaker[Session]
) -> None:
    path = str(mailman_testing_file("config.pck"))
    dry = run("import", "mailman2", "test@example.com", path, "--dry-run")
    assert dry.code == 0, dry.err
    assert "dry run" in dry.out and "add 3 member(s)" in dry.out
    # It names the list and every address it would add ...
    assert "create the list test@example.com" in dry.out
    for email in ("dperson@example.org", "bperson@example.com", "cris.person@example.net"):
        assert f"    + {email}\n" in dry.out
    assert "    + anne@example.com\n" in dry.out  # the owner
    # ... and writes nothing: no list, no domain, no address.
    with db() as s, pytest.raises(NotFound):
        lists.get(s, "test@example.com")
    with db() as s:
        assert s.scalar(select(Domain).where(Domain.mail_host == "example.com")) is None
        assert s.scalar(select(Address).where(Address.email == "dperson@example.org")) is None
    assert "carry the Mailman 2.1 password of 3 member(s)" in dry.out
    done = run("import", "mailman2", "test@example.com", path)
    assert done.code == 0, done.err
    assert "carry the Mailman 2.1 password of 3 member(s) (hashed)" in done.out
    assert "note: member passwords are carried hashed" in done.out
    again = run("import", "mailman2", "test@example.com", path)
    assert "already matches" in again.out and "carry the" not in again.out
    refused = run("import", "mailman2", "test@example.com", "/nonexistent/config.pck")
    assert refused.code == 1 and "cannot read" in refused.err


def test_the_pipermail_mbox_goes_into_the_archive(
    run: Run, db: sessionmaker[Session], tmp_path: Path
) -> None:
    mbox = tmp_path / "test.mbox"
    mbox.write_text(
        "From dperson at example.org  Mon Apr  5 10:00:00 2010\n"
        "From: dperson at example.org (Dave Person)\nSubject: [Test] first\n"
        "Date: Mon, 05 Apr 2010 10:00:00 +0000\nMessage-ID: <one@example.org>\n\nhello\n\n"
        "From bperson at example.com  Mon Apr  5 11:00:00 2010\n"
        "From: bperson at example.com (Bill Person)\nSubject: Re: [Test] first\n"
        "Date: Mon, 05 Apr 2010 11:00:00 +0000\nMessage-ID: <two@example.com>\n"
        "In-Reply-To: <one@example.org>\n\nhi back\n"
    )
    path = str(mailman_testing_file("config.pck"))
    missing = run("import", "mailman2", "arc@example.com", path, "--archive", "/nonexistent")
    assert missing.code == 1 and "cannot read /nonexistent" in missing.err
    with db() as s, pytest.raises(NotFound):
        lists.get(s, "arc@example.com")  # nothing imported before the check
    done = run("import", "mailman2", "arc@example.com", path, "--archive", str(mbox))
    assert done.code == 0, done.err
    assert "2 posts read, 2 archived" in done.out
    again = run("import", "mailman2", "arc@example.com", path, "--archive", str(mbox))
    assert "2 there already" in again.out
    with db() as s:
        mlist = lists.get(s, "arc@example.com")
        rows = s.scalars(
            select(ArchivedMessage).where(ArchivedMessage.mailing_list_id == mlist.id)
        ).all()
        assert sorted(r.sender for r in rows) == ["bperson@example.com", "dperson@example.org"]
        assert len({r.thread_id for r in rows}) == 1


def test_a_whole_21_site_moves_in_with_one_command(
    run: Run, db: sessionmaker[Session], tmp_path: Path
) -> None:
    """``--site DIR``: every list under lists/ (named after its directory, at the
    host_name of its configuration), each with its Pipermail mbox when it kept one."""
    site = tmp_path / "mailman"
    for name, real in (("test", "config.pck"), ("eclipse-sig", "config-with-instances.pck")):
        (site / "lists" / name).mkdir(parents=True)
        (site / "lists" / name / "config.pck").write_bytes(mailman_testing_file(real).read_bytes())
    (site / "lists" / "half-made").mkdir()  # a directory with no config.pck
    archive = site / "archives" / "private" / "test.mbox"
    archive.mkdir(parents=True)
    (archive / "test.mbox").write_text(
        "From dperson@example.org  Mon Apr  5 10:00:00 2010\n"
        "From: dperson@example.org\nSubject: [Test] first\n"
        "Date: Mon, 05 Apr 2010 10:00:00 +0000\nMessage-ID: <one@example.org>\n\nhello\n"
    )
    both = run("import", "mailman2", "x@example.com", "config.pck", "--site", str(site))
    assert both.code == 1 and "site" in both.err
    neither = run("import", "mailman2")
    assert neither.code == 1 and "--site" in neither.err
    empty = run("import", "mailman2", "--site", str(tmp_path / "nothing"))
    assert empty.code == 1 and "has no lists directory" in empty.err

    dry = run("import", "mailman2", "--site", str(site), "--dry-run")
    assert dry.code == 0, dry.err
    assert "2 list(s) to import" in dry.out and "half-made: no config.pck, skipped" in dry.out
    assert f"and import the archive from {archive / 'test.mbox'}" in dry.out
    with db() as s:
        assert lists.all_lists(s) == []

    done = run("import", "mailman2", "--site", str(site))
    assert done.code == 0, done.err
    assert "1 posts read, 1 archived" in done.out
    with db() as s:
        names = {m.fqdn_listname for m, _n in lists.all_lists(s)}
        assert names == {"test@heresy.example.org", "eclipse-sig@lists.examplexxxxxx.org"}
        mlist = lists.get(s, "test@heresy.example.org")
        (post,) = s.scalars(
            select(ArchivedMessage).where(ArchivedMessage.mailing_list_id == mlist.id)
        ).all()
        assert post.message_id == "<one@example.org>"
    again = run("import", "mailman2", "--site", str(site))
    assert again.code == 0 and again.out.count("already matches") == 2, again.out


def test_a_site_list_with_no_host_name_stops_the_site_import_before_anything_is_written(
    run: Run, db: sessionmaker[Session], tmp_path: Path
) -> None:
    site = tmp_path / "mailman"
    (site / "lists" / "test").mkdir(parents=True)
    (site / "lists" / "test" / "config.pck").write_bytes(
        mailman_testing_file("config.pck").read_bytes()
    )
    nohost = mm2pickle.load(mailman_testing_file("config.pck"))
    nohost["host_name"] = ""
    (site / "lists" / "zzz").mkdir()
    (site / "lists" / "zzz" / "config.pck").write_bytes(pickle.dumps(nohost, 2))
    done = run("import", "mailman2", "--site", str(site))
    assert done.code == 1
    assert "zzz/config.pck: the configuration names no host_name" in done.err
    with db() as s:
        assert lists.all_lists(s) == []  # test, read first, was not written either


def test_a_21_member_s_password_is_carried_hashed_and_never_over_one_set_here(
    run: Run, db: sessionmaker[Session]
) -> None:
    """Mailman 2.1 kept each member's password in clear text in config.pck (dperson's is
    ``isigwiuc`` in the real file): the member's user gets a salted hash of it, which a
    log-in rehashes with argon2; a password the person has here already is kept."""
    with db() as s, s.begin():
        bill = users.create(s, "bperson@example.com", "set-here-already", verified=True)
    path = str(mailman_testing_file("config.pck"))
    done = run("import", "mailman2", "test@example.com", path)
    assert done.code == 0, done.err
    assert "carry the Mailman 2.1 password of 2 member(s)" in done.out
    with db() as s:
        dave = users.user_by_email(s, "dperson@example.org")
        assert dave is not None and dave.password is not None
        assert "isigwiuc" not in dave.password and dave.password.startswith("$pbkdf2-sha256$")
        assert passwords.verify("isigwiuc", dave.password)
        assert not passwords.verify("ukuhfoef", dave.password)  # bperson's
        assert passwords.needs_update(dave.password)  # argon2 at the first log-in
        kept = users.user_by_email(s, "bperson@example.com")
        assert kept is not None and kept.id == bill.id
        assert kept.password is not None and passwords.verify("set-here-already", kept.password)
