"""A Mailman 2.1 list moved in with ``mtaplugin import mailman2`` (the pickle Mailman
3.3.10 ships) works at once through a real Postfix: a member's post reaches the others,
with the list's prefix, and a nonmember the 2.1 list held is held."""

from __future__ import annotations

from sqlalchemy.orm import Session

from mtaplugin.manage import lists
from mtaplugin.testing import wait_for
from mtaplugin.testing.lab import Lab
from mtaplugin.testing.mailman_files import mailman_testing_file
from tests.helpers import make_post, run_mtaplugin, unique
from tests.integration.labs import DOMAIN, copies, copy_of


def test_an_imported_list_delivers_a_members_post_to_the_others(lab: Lab, db: Session) -> None:
    name = f"{unique('imported')}@{DOMAIN}"
    done = run_mtaplugin(
        "import", "mailman2", name, str(mailman_testing_file("config.pck")), env=lab.process_env()
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "add 3 member(s)" in done.stdout
    marker = unique("moved-in-")
    raw = make_post("dperson@example.org", name, subject=marker)
    assert lab.send("dperson@example.org", [name], raw) is None
    for other in ("bperson@example.com", "cris.person@example.net"):
        wait_for(lambda other=other: copies(lab, marker, other) == 1, timeout=30)
    copy = copy_of(lab, marker, "bperson@example.com")
    assert str(copy["Subject"]).startswith("[Test] ")
    db.expire_all()
    assert lists.get(db, name).display_name == "Test"
