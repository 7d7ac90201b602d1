"""A list's footer given by an http URI (as Postorius sets it), end to end: a real HTTP
server with basic auth, the template-fetch job, then a post through the real private
Postfix and the real milter carries the fetched footer; when the server fails later, the
next post still carries it.  The server listens on loopback: its host and port are allowed
by name (``[templates] allow_hosts``), as a site would allow its Postorius."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.config.site import TemplatesSettings
from mtaplugin.model import TemplateFetch
from mtaplugin.notices.refresh import refresh_all
from mtaplugin.testing.lab import Lab
from tests.helpers import list_template, unique
from tests.integration.labs import copies_of_a_post, make_list
from tests.integration.test_transforms_path import body_text
from tests.unit.template_server import PASSWORD, USER, template_server

SETTINGS = TemplatesSettings(fetch_timeout=2.0, cache_life=3600, retry_after=60)


def test_a_fetched_footer_reaches_the_members_and_survives_a_failing_server(
    lab: Lab, db: Session, lab_sessions: sessionmaker[Session]
) -> None:
    people = ("tom@example.org", "uma@example.net")
    mlist = make_list(db, *people)
    with template_server() as server:
        path = f"/private/{mlist.list_id}/footer.txt"
        server.put(path, "-- \nFetched footer of $display_name")
        db.add(
            list_template(
                mlist,
                "list:member:regular:footer",
                uri=server.url(path),
                username=USER,
                password=PASSWORD,
            )
        )
        db.commit()
        now = datetime.now(UTC)
        assert refresh_all(lab_sessions, server.settings(SETTINGS), now) >= 1
        for _round in ("first", "second"):
            got = copies_of_a_post(lab, mlist, "tom@example.org", *people)
            for person in people:
                text = body_text(got[person])
                assert text.rstrip().endswith(f"Fetched footer of {mlist.display_name}")
            # the server now fails: the text fetched before stays
            server.put(path, "gone", status=500)
            refresh_all(lab_sessions, server.settings(SETTINGS), now + timedelta(hours=2))
            with lab_sessions() as s:
                row = s.scalars(
                    select(TemplateFetch).where(TemplateFetch.uri == server.url(path))
                ).one()
                assert row.error.startswith("HTTP 500") and row.text.endswith("of $display_name")


def test_a_template_set_as_postorius_sets_it_is_fetched_and_refetched_after_an_edit(
    lab: Lab, db: Session, lab_sessions: sessionmaker[Session]
) -> None:
    """Postorius keeps the text and gives the REST API a URI to it, with credentials; an
    edit there sets the same URI again, which must bring the new text."""
    from mailmanclient import Client

    from mtaplugin.model import MailingList
    from mtaplugin.notices.templates import render
    from mtaplugin.testing import wait_for_port

    mlist = make_list(db, "vic@example.org")
    wait_for_port(lab.api_port, timeout=30)
    client = Client(f"http://127.0.0.1:{lab.api_port}/3.1", "restadmin", "restpass")
    welcome = "list:user:notice:welcome"
    with template_server() as server:
        path = f"/private/postorius/api/templates/list/{mlist.list_id}/{welcome}"
        server.put(path, "Welcome, says Postorius, to $display_name")
        rest_list = client.get_list(mlist.fqdn_listname)
        rest_list.set_template(welcome, server.url(path), USER, PASSWORD)
        now = datetime.now(UTC)
        refresh_all(lab_sessions, server.settings(SETTINGS), now)

        def text() -> str:
            with lab_sessions() as s:
                return render(welcome, "en", session=s, mlist=s.get(MailingList, mlist.id))

        assert text() == f"Welcome, says Postorius, to {mlist.display_name}"
        # an edit in Postorius: new text behind the same URI, the URI set again
        server.put(path, "Edited welcome to $display_name")
        refresh_all(lab_sessions, server.settings(SETTINGS), now + timedelta(minutes=1))
        assert text().startswith("Welcome, says Postorius")  # not due: cached
        rest_list.set_template(welcome, server.url(path), USER, PASSWORD)
        refresh_all(lab_sessions, server.settings(SETTINGS), now + timedelta(minutes=2))
        assert text() == f"Edited welcome to {mlist.display_name}"


def test_an_owner_cannot_make_a_footer_of_the_rest_apis_answer(
    lab: Lab, db: Session, lab_sessions: sessionmaker[Session]
) -> None:
    """The attack of M4 against the real REST server: a list owner sets the footer's URI
    to ``http://127.0.0.1:<api port>/3.1/addresses`` with ``restadmin:restpass``.  REST
    refuses it; stored anyway (an import, a site admin's slip), the job does not fetch it,
    and with ``127.0.0.1`` allowed without its port the credentials stay home (401)."""
    from urllib.error import HTTPError

    import pytest
    from mailmanclient import Client

    from mtaplugin.testing import wait_for_port

    mlist = make_list(db, "wes@example.org")
    wait_for_port(lab.api_port, timeout=30)
    api = f"http://127.0.0.1:{lab.api_port}/3.1"
    admin = Client(api, "restadmin", "restpass")
    owner_email = f"{unique('owner')}@example.org"
    admin.create_user(owner_email, "owner-pw")
    admin.get_list(mlist.fqdn_listname).add_owner(owner_email)
    owner = Client(api, owner_email, "owner-pw")
    footer = "list:member:regular:footer"
    target = f"{api}/addresses"
    with pytest.raises(HTTPError) as refused:
        owner.get_list(mlist.fqdn_listname).set_template(footer, target, "restadmin", "restpass")
    assert refused.value.code == 400
    assert list(owner.get_list(mlist.fqdn_listname).templates) == []

    admin.get_list(mlist.fqdn_listname).set_template(footer, target, "restadmin", "restpass")
    now = datetime.now(UTC)
    assert refresh_all(lab_sessions, SETTINGS, now) == 0

    def fetched() -> TemplateFetch:
        with lab_sessions() as s:
            return s.scalars(select(TemplateFetch).where(TemplateFetch.uri == target)).one()

    assert fetched().error.startswith("could not fetch: not a public address")
    assert fetched().text == ""
    host_only = TemplatesSettings(fetch_timeout=2.0, allow_hosts=("127.0.0.1",))
    assert refresh_all(lab_sessions, host_only, now + timedelta(hours=1), force=True) == 0
    assert fetched().error.startswith("HTTP 401") and fetched().text == ""
    got = copies_of_a_post(lab, mlist, "wes@example.org", "wes@example.org")
    text = body_text(got["wes@example.org"])
    assert owner_email not in text and "entries" not in text
