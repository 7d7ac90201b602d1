"""Issue 31's acceptance, Mailman 2.1: a 2.1 site moves in with one command, and its
links and habits keep working.

The site is laid out as Mailman 2.1 lays out its var directory:

- ``lists/test/config.pck``: the real 2.1 pickle Mailman 3.3.10 ships (list "Test" on
  heresy.example.org: three members, dperson@example.org, bperson@example.com and
  cris.person@example.net; an owner; public archive; nonmembers held);
- ``lists/eclipse-sig/config.pck``: the real ``config-with-instances.pck`` (a list on
  lists.examplexxxxxx.org, three members);
- ``lists/team/config.pck``: test's real configuration with three changes, pickled again:
  named "Team", without dperson among its members, and ``@test`` in
  ``accept_these_nonmembers`` (2.1's way of letting the members of test post);
- ``archives/private/test.mbox/test.mbox``: test's Pipermail mbox, a thread of three posts
  of March 2019 (Pipermail numbered them 000000 to 000002).

``mtaplugin import mailman2 --site DIR`` moves the three lists and the archive into the
Postfix lab's database (SQLite), and:

- Pipermail's link to the second post (``/pipermail/test/2019-March/000001.html``)
  redirects permanently to that post in mtaplugin's archive, and the month's thread index
  to the month;
- dperson, a member of test, posts to team through Postfix, and the post reaches team's
  members (``@test``).

A 2.1 member does not log in with their 2.1 password: Mailman 2.1 kept those in clear
text, one per list, and neither Mailman 3's ``import21`` nor this import carries them
(docs/import.md); members set one with "Forgot your password?".
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.archive.hashing import message_id_hash
from mtaplugin.db import make_engine, sessionmaker_for
from mtaplugin.importers import mm2pickle
from mtaplugin.manage import lists, members, users
from mtaplugin.testing.lab import Lab
from mtaplugin.testing.mailman_files import mailman_testing_file
from tests.helpers import make_post, run_mtaplugin, unique
from tests.integration.conftest import LabPool
from tests.integration.labs import copies_for
from tests.integration.test_archive_reply_path import web_client

HOST = "heresy.example.org"
TEST, TEAM = f"test@{HOST}", f"team@{HOST}"
DPERSON = "dperson@example.org"
#: test's Pipermail mbox: a thread of three, in the order Pipermail numbered them
THREAD = ("<first.2019@example.org>", "<second.2019@example.com>", "<third.2019@example.net>")
MBOX = """\
From dperson@example.org  Mon Mar  4 10:00:00 2019
From: Dave Person <dperson@example.org>
To: test@heresy.example.org
Subject: [Test] The plan
Date: Mon, 04 Mar 2019 10:00:00 +0000
Message-ID: <first.2019@example.org>

Here is the plan.

From bperson@example.com  Mon Mar  4 11:00:00 2019
From: Bill Person <bperson@example.com>
To: test@heresy.example.org
Subject: Re: [Test] The plan
Date: Mon, 04 Mar 2019 11:00:00 +0000
Message-ID: <second.2019@example.com>
In-Reply-To: <first.2019@example.org>

Sounds good to me.

From cris.person@example.net  Tue Mar  5 09:00:00 2019
From: Cris Person <cris.person@example.net>
To: test@heresy.example.org
Subject: Re: [Test] The plan
Date: Tue, 05 Mar 2019 09:00:00 +0000
Message-ID: <third.2019@example.net>
In-Reply-To: <second.2019@example.com>

Agreed.

"""


def make_site(root: Path) -> Path:
    """The 2.1 var directory the module's docstring describes."""
    for name, real in (("test", "config.pck"), ("eclipse-sig", "config-with-instances.pck")):
        (root / "lists" / name).mkdir(parents=True)
        (root / "lists" / name / "config.pck").write_bytes(mailman_testing_file(real).read_bytes())
    team = mm2pickle.load(mailman_testing_file("config.pck"))
    team["real_name"] = "Team"
    for value in team.values():  # every per-member table, keyed by address
        if isinstance(value, dict):
            value.pop(DPERSON, None)
    team["bounce_info"] = {}
    team["accept_these_nonmembers"] = ["@test"]
    (root / "lists" / "team").mkdir()
    (root / "lists" / "team" / "config.pck").write_bytes(pickle.dumps(team, 2))
    archive = root / "archives" / "private" / "test.mbox"
    archive.mkdir(parents=True)
    (archive / "test.mbox").write_text(MBOX)
    return root


@dataclass
class Moved:
    lab: Lab
    sessions: sessionmaker[Session]
    output: str


@pytest.fixture(scope="module")
def moved(tmp_path_factory: pytest.TempPathFactory, lab_pool: LabPool) -> Iterator[Moved]:
    """The 2.1 site moved into the Postfix lab's database by one command."""
    lab = lab_pool.of("postfix-milter", "sqlite", Lab)
    site = make_site(tmp_path_factory.mktemp("mailman21"))
    done = run_mtaplugin("import", "mailman2", "--site", str(site), "-q", env=lab.process_env())
    assert done.returncode == 0, done.stdout + done.stderr
    engine = make_engine(lab.database_url)
    yield Moved(lab, sessionmaker_for(engine), done.stdout)
    engine.dispose()


def test_one_command_moves_the_site_in(moved: Moved) -> None:
    assert "3 list(s) to import" in moved.output, moved.output
    assert "3 posts read, 3 archived" in moved.output, moved.output
    with moved.sessions() as s:
        names = {m.fqdn_listname for m, _n in lists.all_lists(s)}
        assert {TEST, TEAM, "eclipse-sig@lists.examplexxxxxx.org"} <= names
        assert lists.get(s, TEAM).accept_these_nonmembers == [f"@{TEST}"]


def test_a_pipermail_link_leads_to_its_post(moved: Moved, tmp_path: Path) -> None:
    client = web_client(moved.lab, moved.sessions, tmp_path / "var")
    answer = client.get("/pipermail/test/2019-March/000001.html", host=HOST)
    assert answer.status_code == 301, answer.text
    target = answer.headers["location"]
    assert target.endswith(f"/message/{message_id_hash(THREAD[1])}")
    shown = client.get(target)
    assert shown.status_code == 200 and "Sounds good to me." in shown.text
    month = client.get("/pipermail/test/2019-March/thread.html", host=HOST)
    assert month.status_code == 301 and month.headers["location"].endswith("/2019/3")
    shown = client.get(month.headers["location"])
    assert shown.status_code == 200
    assert "The plan</a>" in shown.text and "3 posts" in shown.text  # the thread of three


def test_a_member_of_the_other_list_posts_and_is_accepted(moved: Moved) -> None:
    with moved.sessions() as s:
        assert members.is_member(s, lists.get(s, TEST), DPERSON)
        assert not members.is_member(s, lists.get(s, TEAM), DPERSON)
    marker = unique("member-of-test-")
    assert moved.lab.send(DPERSON, [TEAM], make_post(DPERSON, TEAM, subject=marker)) is None
    copies_for(moved.lab, marker.encode(), "bperson@example.com", "cris.person@example.net")


def test_a_member_logs_in_with_their_21_password(moved: Moved, tmp_path: Path) -> None:
    """dperson's password in the real config.pck is ``isigwiuc``: carried hashed, it logs
    in to the web UI, and that first log-in rehashes it with argon2."""
    client = web_client(moved.lab, moved.sessions, tmp_path / "var")
    refused = client.login(DPERSON, "ukuhfoef")  # bperson's
    assert refused.status_code != 303 or "/login" in refused.headers.get("location", "")
    answer = client.login(DPERSON, "isigwiuc")
    assert answer.status_code == 303, answer.text
    assert "/login" not in answer.headers["location"]
    with moved.sessions() as s:
        user = users.user_by_email(s, DPERSON)
        assert user is not None and user.password is not None
        assert user.password.startswith("$argon2")
