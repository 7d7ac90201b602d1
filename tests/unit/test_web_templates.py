"""The template pages of the web UI through the Falcon app (SQLite and PostgreSQL): the
list of templates with their source, the editor's check, preview and save, roles."""

from __future__ import annotations

import html
import re

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin.enums import TemplateScope
from mtaplugin.manage import domains, lists, users
from mtaplugin.model import AuditEntry, Template
from mtaplugin.notices.editing import InvalidTemplate, check, preview, sample_variables
from mtaplugin.notices.templates import render
from tests.helpers import list_template, unique
from tests.unit.webclient import PASSWORD, Site

WELCOME = "list:user:notice:welcome"
FOOTER = "list:member:regular:footer"


pytestmark = pytest.mark.usefixtures("cheap_argon2")


@pytest.fixture
def site(web_site: Site) -> Site:
    return web_site


def source_of(page: str, name: str) -> str:
    row = re.search(rf"<code>{re.escape(name)}</code></td>\s*<td class=\"source\">([^<]*)<", page)
    assert row, name
    return row.group(1)


def own_rows(s: Session, site: Site, name: str) -> list[Template]:
    """The list's own rows of template ``name`` (the module's tests share the database)."""
    mlist = lists.get(s, site.address)
    query = select(Template).where(Template.name == name, Template.mailing_list_id == mlist.id)
    return list(s.scalars(query))


# --- the checks, without pages -------------------------------------------------------------
def test_a_jinja_syntax_error_names_its_line() -> None:
    with pytest.raises(InvalidTemplate) as caught:
        check(WELCOME, "Hello\n\n{% if display_name %}\nno endif\n")
    assert caught.value.line >= 3
    with pytest.raises(InvalidTemplate) as caught:
        check(WELCOME, "one\ntwo {{ display_name | }}\nthree")
    assert caught.value.line == 2


def test_a_bad_dollar_brace_names_its_line_and_a_lone_dollar_is_fine() -> None:
    with pytest.raises(InvalidTemplate) as caught:
        check(FOOTER, "fine $listname\nbroken ${display_name\n")
    assert caught.value.line == 2
    check(FOOTER, "Donate $5 to ${display_name}")


def test_a_footer_refuses_jinja() -> None:
    with pytest.raises(InvalidTemplate, match=r"\$variables"):
        check(FOOTER, "ok\n{{ display_name }}")


def test_the_preview_renders_both_syntaxes_with_sample_values() -> None:
    values = sample_variables(None, "example.org")
    assert preview(WELCOME, "Hi {{ user_name }} on {{ listname }}", "en", values) == (
        "Hi Ann Example on sample@example.org"
    )
    assert preview(FOOTER, "$display_name -- $listname $unknown", "en", values) == (
        "Sample -- sample@example.org $unknown"
    )


# --- the pages ------------------------------------------------------------------------------
def test_the_owner_edits_a_template_and_the_notice_uses_it(site: Site) -> None:
    client = site.client()
    client.login(f"owner@{site.host}")
    index = client.get(f"/lists/{site.list_id}/templates")
    assert index.status_code == 200
    assert source_of(index.text, WELCOME) == "built-in"
    base = f"/lists/{site.list_id}/templates/{WELCOME}"
    editor = client.get(base)
    assert editor.status_code == 200 and "Welcome" in html.unescape(editor.text)
    # a syntax error: refused, naming the line, nothing saved, the text kept in the form
    bad = client.post(base, {"op": "save", "text": "Hello\n{{ display_name"})
    assert bad.status_code == 400
    assert "line 2" in bad.text and "{{ display_name" in html.unescape(bad.text)
    with site.sessions() as s:
        assert own_rows(s, site, WELCOME) == []
    # the preview: sample values, nothing saved
    shown = client.post(
        base, {"op": "preview", "text": "Hi {{ user_name }}, this is {{ listname }}"}
    )
    assert shown.status_code == 200
    assert f"Hi Ann Example, this is {site.address}" in html.unescape(shown.text)
    with site.sessions() as s:
        assert own_rows(s, site, WELCOME) == []
    # saved: the list's own now, and the welcome notice says it
    saved = client.post(base, {"op": "save", "text": "Welcome to $display_name, $user_email!"})
    assert saved.status_code == 200
    assert source_of(saved.text, WELCOME) == "list"
    with site.sessions() as s:
        mlist = lists.get(s, site.address)
        text = render(WELCOME, "en", session=s, mlist=mlist, user_email="ann@example.net")
        assert text == f"Welcome to {mlist.display_name}, ann@example.net!"
        assert s.scalar(
            select(AuditEntry.action).where(
                AuditEntry.mailing_list_id == mlist.id, AuditEntry.action == "template.save"
            )
        )
    # back to the default
    reset = client.post(base, {"op": "reset"})
    assert source_of(reset.text, WELCOME) == "built-in"


def test_a_domain_template_shows_on_the_lists_page_as_the_domains(site: Site) -> None:
    with site.sessions.begin() as s:
        boss = users.add_user(s, f"boss@{site.host}", PASSWORD)
        domain = domains.get(s, site.host)
        domain.owners.append(boss)
    client = site.client()
    client.login(f"boss@{site.host}")
    base = f"/domains/{site.host}/templates"
    assert client.get(base).status_code == 200
    saved = client.post(f"{base}/{FOOTER}", {"op": "save", "text": "-- $display_name"})
    assert saved.status_code == 200 and source_of(saved.text, FOOTER) == "domain"
    with site.sessions() as s:
        domain_id = domains.get(s, site.host).id
        query = select(Template).where(Template.name == FOOTER, Template.domain_id == domain_id)
        row = s.scalars(query).one()
        assert row.scope == TemplateScope.domain and row.text == "-- $display_name"
    owner = site.client()
    owner.login(f"owner@{site.host}")
    assert source_of(owner.get(f"/lists/{site.list_id}/templates").text, FOOTER) == "domain"
    # the list's editor starts from the text used now, the domain's
    editor = html.unescape(owner.get(f"/lists/{site.list_id}/templates/{FOOTER}").text)
    assert re.search(r"<textarea[^>]*>-- \$display_name</textarea>", editor)
    # a list owner is no domain owner
    assert owner.get(base).status_code == 404


def test_a_uri_template_shows_its_uri_and_fetch_state(site: Site) -> None:
    with site.sessions.begin() as s:
        mlist = lists.get(s, site.address)
        s.add(
            list_template(
                mlist, WELCOME, language="", uri="https://postorius.test/api/templates/welcome"
            )
        )
    client = site.client()
    client.login(f"owner@{site.host}")
    page = client.get(f"/lists/{site.list_id}/templates")
    assert source_of(page.text, WELCOME) == "list"
    assert "https://postorius.test/api/templates/welcome" in page.text
    assert "not fetched yet" in page.text


def test_moderators_and_strangers_may_not_edit(site: Site) -> None:
    mod = site.client()
    mod.login(f"mod@{site.host}")
    assert mod.get(f"/lists/{site.list_id}/templates").status_code == 403
    r = mod.post(f"/lists/{site.list_id}/templates/{WELCOME}", {"op": "save", "text": "x"})
    assert r.status_code == 403
    anon = site.client()
    assert anon.get(f"/lists/{site.list_id}/templates").status_code == 303
    owner = site.client()
    owner.login(f"owner@{site.host}")
    assert owner.get(f"/lists/{site.list_id}/templates/no:such").status_code == 404


def test_a_text_that_parses_but_cannot_render_is_not_saved(site: Site) -> None:
    client = site.client()
    client.login(f"owner@{site.host}")
    base = f"/lists/{site.list_id}/templates/{WELCOME}"
    bad = client.post(base, {"op": "save", "text": '{% include "no-such.txt" %}'})
    assert bad.status_code == 400 and "Not saved" in bad.text and "no-such.txt" in bad.text
    with site.sessions() as s:
        assert own_rows(s, site, WELCOME) == []


def test_a_text_for_one_language_is_named(site: Site) -> None:
    with site.sessions.begin() as s:
        mlist = lists.get(s, site.address)
        s.add(list_template(mlist, WELCOME, language="de", text="Willkommen"))
    client = site.client()
    client.login(f"owner@{site.host}")
    page = client.get(f"/lists/{site.list_id}/templates").text
    assert source_of(page, WELCOME) == "built-in"
    assert re.search(r'class="source">built-in</td>\s*<td>de</td>', page)


def test_the_site_admin_edits_the_sites_templates(site: Site) -> None:
    boss = f"{unique('root')}@{site.host}"
    with site.sessions.begin() as s:
        users.add_user(s, boss, PASSWORD).is_server_owner = True
    client = site.client()
    client.login(boss)
    name = "list:user:notice:goodbye"
    assert client.get("/templates").status_code == 200
    saved = client.post(f"/templates/{name}", {"op": "save", "text": "Bye from the site"})
    assert saved.status_code == 200 and source_of(saved.text, name) == "site"
    owner = site.client()
    owner.login(f"owner@{site.host}")
    assert source_of(owner.get(f"/lists/{site.list_id}/templates").text, name) == "site"
    assert owner.get("/templates").status_code == 404
    reset = client.post(f"/templates/{name}", {"op": "reset"})
    assert source_of(reset.text, name) == "built-in"
