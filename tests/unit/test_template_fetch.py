"""Template URIs fetched from a real HTTP server (http.server in a thread, basic auth):
the fetch's limits, the template-fetch job's cache on SQLite and PostgreSQL, what notices
and footers then read, ``mailman:`` URIs, and REST setting a URI again."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.config.site import TemplatesSettings
from mtaplugin.enums import TemplateScope
from mtaplugin.lists.cache import load_templates
from mtaplugin.model import Domain, MailingList, Template, TemplateFetch
from mtaplugin.notices.fetch import FetchError, NotFound, fetch
from mtaplugin.notices.refresh import refresh_all
from mtaplugin.notices.sources import Builtin, parse_mailman
from mtaplugin.notices.templates import render
from mtaplugin.worker.registry import JOBS, TEMPLATE_FETCH
from tests.helpers import list_template
from tests.unit.sites import Site
from tests.unit.template_server import FOOTER, PASSWORD, USER, TemplateServer, template_server

WELCOME = "list:user:notice:welcome"


@pytest.fixture(scope="module")
def server() -> Iterator[TemplateServer]:
    with template_server() as s:
        yield s


# --- the fetch itself ----------------------------------------------------------------------
def test_fetch_gives_the_text_in_its_charset(server: TemplateServer) -> None:
    server.put("/latin1.txt", "Grüße, $display_name", charset="iso-8859-1")
    assert fetch(server.url("/latin1.txt"), limits=server.limits()) == "Grüße, $display_name"


def test_basic_auth_is_sent_with_the_first_request(server: TemplateServer) -> None:
    server.put("/private/footer.txt", "members only")
    with pytest.raises(FetchError, match="HTTP 401"):
        fetch(server.url("/private/footer.txt"), limits=server.limits())
    with pytest.raises(FetchError, match="HTTP 401"):
        fetch(server.url("/private/footer.txt"), USER, "wrong", server.limits())
    before = len(server.requests)
    assert (
        fetch(server.url("/private/footer.txt"), USER, PASSWORD, server.limits()) == "members only"
    )
    # one request, credentials in it (as requests' auth=(user, password) does)
    assert len(server.requests) == before + 1
    assert server.requests[-1][1].startswith("Basic ")


def test_credentials_follow_a_redirect_to_the_same_server_only(server: TemplateServer) -> None:
    server.put("/private/target.txt", "moved here")
    server.redirect("/private/moved", "/private/target.txt")
    assert fetch(server.url("/private/moved"), USER, PASSWORD, server.limits()) == "moved here"
    # the same server under another name is another server: no credentials go there
    elsewhere = server.url("/private/target.txt").replace("127.0.0.1", "localhost")
    server.redirect("/private/away", elsewhere)
    with pytest.raises(FetchError, match="HTTP 401"):
        fetch(server.url("/private/away"), USER, PASSWORD, server.limits())
    assert server.requests[-1] == ("/private/target.txt", "")


def test_a_slow_server_times_out(server: TemplateServer) -> None:
    server.put("/slow.txt", "late", delay=2.0)
    started = datetime.now(UTC)
    with pytest.raises(FetchError, match=r"no answer within 0\.5 seconds"):
        fetch(server.url("/slow.txt"), limits=server.limits(timeout=0.5))
    assert datetime.now(UTC) - started < timedelta(seconds=1.8)


def test_a_text_longer_than_max_size_is_refused(server: TemplateServer) -> None:
    server.put("/big.txt", "x" * 1001)
    with pytest.raises(FetchError, match="longer than 1000 bytes"):
        fetch(server.url("/big.txt"), limits=server.limits(max_size=1000))
    server.put("/fits.txt", "x" * 1000)
    assert len(fetch(server.url("/fits.txt"), limits=server.limits(max_size=1000))) == 1000


def test_404_and_refused_connections(server: TemplateServer) -> None:
    with pytest.raises(NotFound):
        fetch(server.url("/nothing-here.txt"), limits=server.limits())
    with pytest.raises(FetchError):
        fetch("http://127.0.0.1:1/footer.txt")
    with pytest.raises(FetchError, match="not an http"):
        fetch("ftp://example.org/footer.txt")


# --- the job and what rendering reads ------------------------------------------------------
SETTINGS = TemplatesSettings(fetch_timeout=1.0, max_size=4096, cache_life=3600, retry_after=60)
T0 = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)


def add_template(sessions: sessionmaker[Session], mlist: MailingList, name: str, **kw: str) -> int:
    with sessions.begin() as s:
        row = list_template(mlist, name, **kw)
        s.add(row)
        s.flush()
        return row.id


def welcome(sessions: sessionmaker[Session], mlist: MailingList) -> str:
    with sessions() as s:
        return render(WELCOME, "en", session=s, mlist=s.get(MailingList, mlist.id))


def cached(sessions: sessionmaker[Session], uri: str) -> TemplateFetch:
    with sessions() as s:
        row = s.scalar(select(TemplateFetch).where(TemplateFetch.uri == uri))
        assert row is not None
        s.expunge(row)
        return row


def test_the_job_is_registered() -> None:
    assert TEMPLATE_FETCH in JOBS and TEMPLATE_FETCH.every <= timedelta(minutes=5)


def test_fetched_text_is_rendered_and_kept_when_the_server_fails(
    site: Site, server: TemplateServer, caplog: pytest.LogCaptureFixture
) -> None:
    mlist = site.mlist()
    path = f"/private/{site.host}/welcome.txt"
    uri = server.url(path)
    add_template(site.sessions, mlist, WELCOME, uri=uri, username=USER, password=PASSWORD)
    builtin = welcome(site.sessions, mlist)
    # not fetched yet: the built-in, and nothing waits for the server
    assert "Welcome" in builtin
    server.put(path, "Hello from the web, $display_name!")
    assert refresh_all(site.sessions, server.settings(SETTINGS), T0) >= 1
    assert welcome(site.sessions, mlist) == f"Hello from the web, {mlist.display_name}!"
    # not due yet: no request
    before = len(server.requests)
    refresh_all(site.sessions, server.settings(SETTINGS), T0 + timedelta(minutes=30))
    assert [r for r in server.requests[before:] if r[0] == path] == []
    # expired, and the server now answers 404: the text stays, the failure is logged
    server.put(path, "gone", status=404)
    with caplog.at_level(logging.WARNING):
        refresh_all(site.sessions, server.settings(SETTINGS), T0 + timedelta(hours=2))
    assert "the text fetched before stays" in caplog.text
    assert welcome(site.sessions, mlist) == f"Hello from the web, {mlist.display_name}!"
    row = cached(site.sessions, uri)
    assert row.error == "HTTP 404 (not found)"
    assert row.refresh_at == T0 + timedelta(hours=2, seconds=60)
    # too big, or too slow: the same
    server.put(path, "y" * 5000)
    refresh_all(site.sessions, server.settings(SETTINGS), T0 + timedelta(hours=3))
    assert "longer than 4096 bytes" in cached(site.sessions, uri).error
    server.put(path, "late", delay=1.5)
    refresh_all(site.sessions, server.settings(SETTINGS), T0 + timedelta(hours=4))
    assert "no answer within" in cached(site.sessions, uri).error
    assert welcome(site.sessions, mlist) == f"Hello from the web, {mlist.display_name}!"
    # the server is back with a new text
    server.put(path, "New text for {{ display_name }}")
    refresh_all(site.sessions, server.settings(SETTINGS), T0 + timedelta(hours=5))
    assert welcome(site.sessions, mlist) == f"New text for {mlist.display_name}"
    assert cached(site.sessions, uri).error == ""


def test_a_first_404_is_the_empty_template_as_in_mailman(
    site: Site, server: TemplateServer
) -> None:
    mlist = site.mlist()
    uri = server.url(f"/{site.host}/never.txt")
    add_template(site.sessions, mlist, WELCOME, uri=uri)
    refresh_all(site.sessions, server.settings(SETTINGS), T0)
    assert welcome(site.sessions, mlist) == ""
    assert cached(site.sessions, uri).refresh_at == T0 + timedelta(seconds=60)


def test_a_failing_uri_never_fetched_falls_back_to_the_next_template(site: Site) -> None:
    mlist = site.mlist()
    add_template(site.sessions, mlist, WELCOME, uri="http://127.0.0.1:1/welcome.txt")
    with site.sessions.begin() as s:
        domain_id = s.scalar(select(Domain.id).where(Domain.mail_host == site.host))
        s.add(
            Template(
                scope=TemplateScope.domain,
                domain_id=domain_id,
                name=WELCOME,
                language="",
                text="Domain welcome",
            )
        )
    refresh_all(site.sessions, SETTINGS, T0)
    assert welcome(site.sessions, mlist) == "Domain welcome"


def test_a_changed_footer_reaches_the_list_snapshot(site: Site, server: TemplateServer) -> None:
    mlist = site.mlist()
    path = f"/{site.host}/$list_id/footer.txt"
    server.put(f"/{site.host}/{mlist.list_id}/footer.txt", "-- fetched footer for $listname")
    add_template(site.sessions, mlist, FOOTER, uri=server.url(path))
    with site.sessions() as s:
        before = s.get(MailingList, mlist.id)
        assert before is not None
        generation = before.generation
        assert load_templates(s, before, 0).footer is None  # the built-in, for now
    refresh_all(site.sessions, server.settings(SETTINGS), T0)
    with site.sessions() as s:
        after = s.get(MailingList, mlist.id)
        assert after is not None
        assert after.generation > generation  # the milter's snapshot reloads
        domain_id = s.scalar(select(Domain.id).where(Domain.mail_host == site.host))
        assert domain_id is not None
        assert load_templates(s, after, domain_id).footer == "-- fetched footer for $listname"
    # the same text again: no move
    with site.sessions() as s:
        generation = s.get(MailingList, mlist.id).generation  # type: ignore[union-attr]
    refresh_all(site.sessions, server.settings(SETTINGS), T0 + timedelta(days=1))
    with site.sessions() as s:
        assert s.get(MailingList, mlist.id).generation == generation  # type: ignore[union-attr]


def test_texts_no_template_asks_for_are_removed(site: Site, server: TemplateServer) -> None:
    mlist = site.mlist()
    server.put(f"/{site.host}/old.txt", "old")
    template_id = add_template(
        site.sessions, mlist, WELCOME, uri=server.url(f"/{site.host}/old.txt")
    )
    refresh_all(site.sessions, server.settings(SETTINGS), T0)
    with site.sessions.begin() as s:
        s.delete(s.get(Template, template_id))
    refresh_all(site.sessions, server.settings(SETTINGS), T0)
    with site.sessions() as s:
        uris = s.scalars(select(TemplateFetch.uri)).all()
    assert server.url(f"/{site.host}/old.txt") not in uris


# --- mailman: URIs -------------------------------------------------------------------------
def test_mailman_uris_name_the_shipped_templates() -> None:
    assert parse_mailman("mailman:///list:user:notice:welcome.txt") == Builtin(WELCOME)
    assert parse_mailman("mailman:///de/list:user:notice:welcome.txt") == Builtin(WELCOME, "de")
    assert parse_mailman("mailman:///ant@example.com/fr/list:member:regular:footer.txt") == (
        Builtin(FOOTER, "fr")
    )
    assert parse_mailman("mailman:///ant.example.com/list:user:notice:goodbye.txt") == Builtin(
        "list:user:notice:goodbye"
    )
    assert parse_mailman("mailman:///list:member:generic:footer.txt") == Builtin(FOOTER)
    assert parse_mailman("mailman:///no-such-template.txt") is None
    assert parse_mailman("mailman:///ant@example.com/xx/list:user:notice:welcome.txt") is None
    assert parse_mailman("mailman:///") is None


def test_a_mailman_uri_renders_the_builtin_in_its_language(site: Site) -> None:
    mlist = site.mlist()
    add_template(
        site.sessions, mlist, WELCOME, uri="mailman:///$listname/de/list:user:notice:welcome.txt"
    )
    with site.sessions() as s:
        german = render(WELCOME, "en", session=s, mlist=s.get(MailingList, mlist.id))
        english = render(WELCOME, "en", mlist=s.get(MailingList, mlist.id))
        assert german != english
        assert german == render(WELCOME, "de", mlist=s.get(MailingList, mlist.id))


def test_a_post_gets_the_fetched_footer(site: Site, server: TemplateServer) -> None:
    from mtaplugin.copies.transforms.decorate import texts
    from mtaplugin.lists.cache import build
    from mtaplugin.posting.transform_context import TransformContext

    mlist = site.mlist()
    path = f"/private/{site.host}/footer.txt"
    server.put(path, "-- $display_name <$listname>, fetched")
    add_template(
        site.sessions, mlist, FOOTER, uri=server.url(path), username=USER, password=PASSWORD
    )
    refresh_all(site.sessions, server.settings(SETTINGS), T0)
    with site.sessions() as s:
        snap = build(s, s.get(MailingList, mlist.id))  # type: ignore[arg-type]
    ctx = TransformContext(snap.mlist, templates=snap.templates)
    assert texts(ctx)[1] == f"-- {mlist.display_name} <{mlist.fqdn_listname}>, fetched"


def test_a_fetched_text_that_does_not_parse_is_a_failed_fetch(
    site: Site, server: TemplateServer
) -> None:
    mlist = site.mlist()
    path = f"/{site.host}/welcome-jinja.txt"
    uri = server.url(path)
    add_template(site.sessions, mlist, WELCOME, uri=uri)
    server.put(path, "Hello {{ display_name }}")
    refresh_all(site.sessions, server.settings(SETTINGS), T0)
    server.put(path, "Hello\n{% if display_name %}never closed")
    refresh_all(site.sessions, server.settings(SETTINGS), T0 + timedelta(days=8))
    assert cached(site.sessions, uri).error.startswith("line 2:")
    assert welcome(site.sessions, mlist) == f"Hello {mlist.display_name}"


def test_a_stored_text_that_cannot_render_sends_the_builtin(
    site: Site, caplog: pytest.LogCaptureFixture
) -> None:
    mlist = site.mlist()
    add_template(site.sessions, mlist, WELCOME, text="{% include 'no-such.txt' %}")
    with caplog.at_level(logging.WARNING):
        text = welcome(site.sessions, mlist)
    assert "Welcome" in text and "the built-in text is sent" in caplog.text


def test_the_job_runs_through_the_runner_with_the_sites_settings(
    site: Site, server: TemplateServer
) -> None:
    from mtaplugin import wiring
    from mtaplugin.clock import ManualClock
    from mtaplugin.config import Settings
    from mtaplugin.db import engine_of
    from mtaplugin.worker.runner import Runner

    mlist = site.mlist()
    path = f"/{site.host}/runner.txt"
    server.put(path, "z" * 200)
    uri = server.url(path)
    add_template(site.sessions, mlist, WELCOME, uri=uri)
    settings = Settings(templates=server.settings(TemplatesSettings(max_size=100)))
    world = wiring.build(settings, db=engine_of(site.sessions), clock=ManualClock(T0))
    outcome = Runner(world, [TEMPLATE_FETCH]).run_now(TEMPLATE_FETCH.name)
    assert not outcome.error
    # the [templates] section of the settings is what the job used
    assert "longer than 100 bytes" in cached(site.sessions, uri).error


# --- a URI set through REST (Postorius) -----------------------------------------------------
def test_a_uri_set_through_rest_is_fetched_at_once_and_the_api_runs_the_job(
    server: TemplateServer, module_db_url: str, module_engine: Any
) -> None:
    """Postorius saves a footer: the REST API fetches it once the change is committed, so
    the next post has it with no worker running; a fetch that fails is the job's, which
    the API process runs as well (``TemplateFetcher``)."""
    from falcon.testing import TestClient

    from mtaplugin.api.app import create_app
    from mtaplugin.api.background import TemplateFetcher
    from mtaplugin.config import DatabaseSettings, Settings
    from mtaplugin.db import sessionmaker_for
    from mtaplugin.wiring import build
    from tests.helpers import unique
    from tests.unit.test_api import Api

    settings = Settings(
        database=DatabaseSettings(url=module_db_url), templates=server.settings(SETTINGS)
    )
    sessions = sessionmaker_for(module_engine)
    api = Api(TestClient(create_app(settings, sessions)))
    host = f"{unique('uri')}.test"
    assert api.post("domains", f"mail_host={host}").status_code == 201
    assert api.post("lists", f"fqdn_listname=team@{host}").status_code == 201
    broken = f"/{unique('broken')}.txt"
    server.put(broken, "down", status=500)
    r = api.patch(f"lists/team.{host}/uris", f"{FOOTER}={server.url(broken)}")
    assert r.status_code == 204, r.text  # the fetch at once failed: nothing recorded,
    with sessions() as s:  # the job tries at its next run as it always did
        assert (
            s.scalars(select(TemplateFetch).where(TemplateFetch.uri == server.url(broken))).first()
            is None
        )
    path = f"/{unique('footer')}.txt"
    server.put(path, "Saved in Postorius")
    r = api.patch(f"lists/team.{host}/uris", f"{FOOTER}={server.url(path)}")
    assert r.status_code == 204, r.text
    with sessions() as s:
        mlist = s.scalars(select(MailingList).where(MailingList.mail_host == host)).one()
        domain_id = s.scalars(select(Domain.id).where(Domain.mail_host == host)).one()
        assert load_templates(s, mlist, domain_id).footer == "Saved in Postorius"
    # a URI stored without REST (an import): the API process's own job fetches it
    later = f"/{unique('header')}.txt"
    server.put(later, "Fetched by the API's own job")
    with sessions.begin() as s:
        mlist = s.scalars(select(MailingList).where(MailingList.mail_host == host)).one()
        s.add(
            Template(
                scope=TemplateScope.list,
                mailing_list_id=mlist.id,
                name="list:member:regular:header",
                uri=server.url(later),
            )
        )
    world = build(settings)
    try:
        outcome = TemplateFetcher(world).runner.run_now(TEMPLATE_FETCH.name)
    finally:
        world.close()
    assert not outcome.error, outcome
    with sessions() as s:
        mlist = s.scalars(select(MailingList).where(MailingList.mail_host == host)).one()
        got = load_templates(s, mlist, domain_id)
        assert (got.header, got.footer) == ("Fetched by the API's own job", "Saved in Postorius")
