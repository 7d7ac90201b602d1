"""Issue 31's acceptance, Mailman 3: a real suite moves in with one command, and its people
notice nothing.

The suite (tests/integration/mm3_suite.py): GNU Mailman 3.3.10 core, archiving to
HyperKitty 1.3.12 through the ``mailman-hyperkitty`` 1.2.1 plugin from its own runners,
and a mailman-web style project (Postorius 1.3.13, HyperKitty, django-mailman3, allauth;
one SQLite database).  What it holds, all of it:

- two domains and five lists (dev, announce and talk; users and team), each with an
  owner (owner@people.example, added by the admin over REST);
- three people (Ann, Bob, Carol) who signed up on allauth's sign-up page, confirmed their
  address by the mailed link and subscribed from Postorius's list pages: 4 memberships
  (Ann and Bob to dev, Bob to talk, Carol to users), Ann's with "Primary Address"
  (``as_user``); afterwards Ann made a second address her primary one;
- ``@users@mm3other.test`` in dev's ``accept_these_nonmembers``;
- a thread of three posts to dev (Ann, Bob, Ann) that Mailman's runners archived in
  HyperKitty, and a stranger's post to team that they held;
- Dora's subscription to announce (confirm policy), waiting for the confirmation Mailman
  mailed her from Postorius's anonymous form.

Then ``mtaplugin import mailman3 --url ... --web-db sqlite:///mailman3web.db --archive
--move-held`` moves it into the Postfix lab's database (SQLite), and:

- Ann logs in to mtaplugin's web UI with her Postorius password;
- HyperKitty's message and thread links (as HyperKitty's own pages show them) redirect
  permanently to the same post and thread;
- Carol (a member of users, not of dev) posts to dev through Postfix and the post reaches
  dev's members, Ann at the address she made primary;
- Dora answers the confirmation Mailman mailed her, through Postfix, and is subscribed;
- the held post is no longer held in Mailman, and is held in mtaplugin.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.archive.hashing import message_id_hash
from mtaplugin.db import make_engine, sessionmaker_for
from mtaplugin.enums import SubscriptionMode
from mtaplugin.manage import lists, members, users
from mtaplugin.model import Member
from mtaplugin.testing.lab import Lab
from mtaplugin.testing.mailman_core import MailmanCore
from mtaplugin.testing.mailman_web import ARCHIVER_KEY, ARCHIVES, database, mailman_web, make
from mtaplugin.testing.postorius_venv import PostoriusServer
from tests.helpers import make_post, run_mtaplugin, unique
from tests.integration import mm3_suite
from tests.integration.conftest import LabPool
from tests.integration.labs import copies, copies_for, held_posts, waits
from tests.integration.mm3_suite import (
    ANN_AT_WORK,
    ANNOUNCE,
    DEV,
    HELD,
    LISTS,
    PENDING,
    PEOPLE,
    TEAM,
    THREAD,
    USERS,
    Browser,
    Suite,
)
from tests.integration.test_archive_reply_path import web_client


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Suite]:
    """The Mailman 3 suite, filled (mm3_suite.build), its core and web site running."""
    root = tmp_path_factory.mktemp("mm3suite")
    try:
        web = mailman_web(root / "web")
        core = MailmanCore(root / "core", hyperkitty=(web.url + ARCHIVES, ARCHIVER_KEY))
    except (subprocess.CalledProcessError, OSError) as e:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the Mailman 3 suite could not be installed: {e}")
        pytest.skip(f"the Mailman 3 suite could not be installed: {e}")
    core.start(wait=False)
    try:
        make(web, core.url)  # (Django migrates while Mailman starts)
        core.wait()
        with PostoriusServer(web):
            work = root / "work"
            work.mkdir()
            yield mm3_suite.build(core, web, work)
    finally:
        core.stop()


@dataclass
class Moved:
    suite: Suite
    lab: Lab
    sessions: sessionmaker[Session]
    output: str


@pytest.fixture(scope="module")
def moved(suite: Suite, lab_pool: LabPool) -> Iterator[Moved]:
    """The suite moved into the Postfix lab's database by one command."""
    lab = lab_pool.of("postfix-milter", "sqlite", Lab)
    done = run_mtaplugin(
        "import", "mailman3", "--url", suite.core.url, "--user", "restadmin",
        "--web-db", f"sqlite:///{database(suite.web)}", "--archive", "--move-held", "-q",
        env={**lab.process_env(), "MAILMAN_REST_PASSWORD": "restpass"}, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    engine = make_engine(lab.database_url)
    yield Moved(suite, lab, sessionmaker_for(engine), done.stdout)
    engine.dispose()


def test_one_command_moves_the_suite_in(moved: Moved) -> None:
    out = moved.output
    assert "GNU Mailman 3.3.10" in out and "5 list(s) to import" in out, out
    assert "web accounts: 3 of 3 created or updated" in out, out
    with moved.sessions() as s:
        assert {m.fqdn_listname for m, _n in lists.all_lists(s)} >= set(LISTS)


def test_a_person_logs_in_with_their_postorius_password(moved: Moved, tmp_path: Path) -> None:
    address, password = PEOPLE["ann"]
    client = web_client(moved.lab, moved.sessions, tmp_path / "var")
    refused = client.login(address, "not her password")
    assert refused.status_code != 303 or "/login" in refused.headers.get("location", "")
    answer = client.login(address, password)
    assert answer.status_code == 303, answer.text
    assert "/login" not in answer.headers["location"]
    assert ANN_AT_WORK in client.get("/").text  # named by her preferred address
    with moved.sessions() as s:  # Django's hash, replaced at that first log-in
        user = users.user_by_email(s, address)
        assert user is not None and user.password is not None
        assert user.password.startswith("$argon2")
        assert user.user_id == moved.suite.user_ids["ann"]  # Mailman's, as Postorius links


def test_hyperkitty_links_lead_to_the_same_post_and_thread(moved: Moved, tmp_path: Path) -> None:
    """The links people have: ``Archived-At`` in the copies Mailman sent them (HyperKitty's
    message URLs), and the thread link on HyperKitty's page of a message."""
    links = {
        str(m["Message-ID"]): urlsplit("".join(str(m["Archived-At"]).split()).strip("<>")).path
        for m in moved.suite.delivered
        if str(m["Message-ID"]) in THREAD
    }
    assert set(links) == set(THREAD)
    _url, page = Browser(moved.suite.web.url).get(links[THREAD[2]])
    (thread_link,) = set(re.findall(rf"/archives/list/{DEV}/thread/\w+/", page))

    client = web_client(moved.lab, moved.sessions, tmp_path / "var")
    for message_id, link in links.items():
        answer = client.get(link)
        assert answer.status_code == 301, answer.text
        target = answer.headers["location"]
        assert target.endswith(f"/message/{message_id_hash(message_id)}")
        assert link.rstrip("/").endswith(message_id_hash(message_id))
        shown = client.get(target)
        assert shown.status_code == 200 and "Plans" in shown.text
    answer = client.get(thread_link)
    assert answer.status_code == 301, answer.text
    shown = client.get(answer.headers["location"])
    assert shown.status_code == 200
    for message_id in THREAD:  # the thread here holds the same three posts
        assert message_id_hash(message_id) in shown.text


def test_a_member_of_the_other_list_posts_and_is_accepted(moved: Moved) -> None:
    """Carol is a member of users, not of dev; dev accepts users' members (``@users@``);
    the post reaches Bob, and Ann (subscribed as a user) at the address she made her
    primary one after she subscribed, not at the one she subscribed with."""
    carol, ann, bob = (PEOPLE[n][0] for n in ("carol", "ann", "bob"))
    with moved.sessions() as s:
        dev = lists.get(s, DEV)
        assert f"@{USERS}" in dev.accept_these_nonmembers
        assert not members.is_member(s, dev, carol)
        membership = s.scalar(
            select(Member).where(Member.mailing_list_id == dev.id, Member.user_id.is_not(None))
        )
        assert membership is not None
        assert membership.subscription_mode is SubscriptionMode.as_user
    marker = unique("from-the-other-list-")
    raw = make_post(carol, DEV, subject=marker)
    assert moved.lab.send(carol, [DEV], raw) is None
    copies_for(moved.lab, marker.encode(), ANN_AT_WORK, bob)
    assert copies(moved.lab, marker, ann) == 0
    with moved.sessions() as s:
        assert not [h for h in held_posts(moved.sessions, lists.get(s, DEV)) if marker in h.subject]


def test_the_confirmation_mailman_mailed_works_here(moved: Moved) -> None:
    confirmation = moved.suite.confirmation
    assert confirmation is not None  # Mailman mailed Dora before the move
    confirm_address = str(confirmation["From"]).strip()
    assert "-confirm+" in confirm_address
    with moved.sessions() as s:
        assert not members.is_member(s, lists.get(s, ANNOUNCE), PENDING)
    reply = EmailMessage()
    reply["From"] = PENDING
    reply["To"] = confirm_address
    reply["Subject"] = "Re: " + " ".join(str(confirmation["Subject"]).split())
    reply["In-Reply-To"] = str(confirmation["Message-ID"]).strip()
    reply.set_content("> Before you can start using GNU Mailman ...\n")
    assert moved.lab.send(PENDING, [confirm_address], reply.as_bytes()) is None

    def subscribed() -> bool:
        with moved.sessions() as s:
            return members.is_member(s, lists.get(s, ANNOUNCE), PENDING)

    waits(moved.lab, subscribed)


def test_the_held_post_left_mailman_and_is_held_here(moved: Moved) -> None:
    mm = moved.suite.client()
    assert mm.get_list(TEAM).get_held_count() == 0
    with moved.sessions() as s:
        team = lists.get(s, TEAM)
    (held,) = held_posts(moved.sessions, team)
    assert held.message_id == HELD and b"Anyone there?" in held.raw
