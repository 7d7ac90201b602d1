"""Notice templates render under a budget (M5): nested loops, huge texts and lists made on
the way stop with :class:`BudgetExceeded`; a stored text that does so while the engine
holds a post is logged and the moderators get the built-in notice, at once."""

from __future__ import annotations

import logging

import pytest
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.manage import lists
from mtaplugin.notices.sandbox import MAX_STEPS, BudgetExceeded
from mtaplugin.notices.templates import render_text
from tests.helpers import list_template, make_post
from tests.unit.sites import Site, make_site
from tests.unit.test_hold_notice import hold_and_read_notice

NESTED = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
BOMBS = [
    NESTED,
    "{% set s = 'x' * 100000 %}{% for a in s %}{% for b in s %}.{% endfor %}{% endfor %}",
    "{% for i in range(99) recursive %}{% if loop.depth < 9 %}{{ loop(range(99)) }}"
    "{% endif %}{% endfor %}",
    "{% macro m() %}{% for i in range(99999) %}{% endfor %}{% endmacro %}"
    "{% for i in range(99999) %}{{ m() }}{% endfor %}",
    "{{ '' | center(1000000000) }}",
    "{{ ('x' * 100000) | replace('', 'y' * 100000) }}",
    "{{ ('\\n' * 100000) | indent(100000) }}",
    "{{ range(100000) | join('x' * 100000) }}",
    "{{ [1] | batch(1000000000, 'x') | list }}",
    "{{ 'x'.ljust(1000000000) }}",
    "{{ '%01000000000d' % 1 }}",
    "{{ '{:>1000000000}'.format(1) }}",
    "{% set l = ['x' * 100000] * 10 %}{% set a = [l, l, l, l, l, l, l, l, l, l] %}"
    "{{ [a, a, a, a, a, a, a, a, a, a] }}",
    "{% set ns = namespace(s='x' * 100000) %}{% for i in range(99999) %}"
    "{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
]


def hold_notice(site: Site, **text_or_uri: str) -> None:
    """The list's own ``list:admin:action:post`` (a text or a URI), as an import stores it."""
    with site.sessions.begin() as s:
        mlist = lists.get(s, site.address)
        s.add(list_template(mlist, "list:admin:action:post", **text_or_uri))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("bomb", BOMBS)
def test_a_template_over_its_budget_stops_with_an_error(bomb: str) -> None:
    with pytest.raises(BudgetExceeded):
        render_text(bomb, "en", {"display_name": "Team"})


def test_ordinary_templates_render_as_before() -> None:
    text = (
        "{{ display_name }}: {{ 'ab' * 3 }} {{ 2 ** 10 }} "
        "{% for i in range(3) %}{{ loop.index }}/{{ loop.length }} {% endfor %}"
        "{{ 'a' ~ 1 ~ 'b' }} [{{ 'x' | center(5) }}] {{ '%03d' % 7 }} {{ '{:>3}'.format(1) }} "
        "{{ ['a', 'b'] | join('-') }} {{ ', '.join(['c', 'd']) }} {{ 'abc' | replace('b', 'B') }}"
    )
    assert render_text(text, "en", {"display_name": "Team"}) == (
        "Team: ababab 1024 1/3 2/3 3/3 a1b [  x  ] 007   1 a-b c, d aBc"
    )
    # a loop of MAX_STEPS items at most is fine; one more is not
    assert len(render_text("{% for i in range(20000) %}.{% endfor %}", "en", {})) == 20000
    with pytest.raises(BudgetExceeded, match=f"more than {MAX_STEPS}"):
        render_text(
            "{% for i in range(2) %}{% for j in range(99999) %}{% endfor %}{% endfor %}", "en", {}
        )


def test_lists_cannot_be_changed_in_place() -> None:
    from jinja2.exceptions import SecurityError

    with pytest.raises(SecurityError):
        render_text("{% set l = [] %}{{ l.append(1) }}", "en", {})


@pytest.mark.timeout(120)
def test_a_stored_nested_loop_hold_notice_sends_the_builtin_at_once(
    module_sessions: sessionmaker[Session], caplog: pytest.LogCaptureFixture
) -> None:
    """The attack of M5: the list's ``list:admin:action:post`` (stored by an import, or
    fetched) holds two nested ``range(100000)`` loops; a post is held inside the engine's
    decision: the decision ends, the moderators get the built-in notice, the log says why."""
    site = make_site(module_sessions, base_url="https://lists.example/")
    hold_notice(site, text="Held! " + NESTED)
    with caplog.at_level(logging.WARNING, logger="mtaplugin.notices.templates"):
        _held_id, notice = hold_and_read_notice(
            site, make_post("stranger@example.net", site.address)
        )
    text = notice.get_body(("plain",)).get_content()  # type: ignore[union-attr]
    assert "waits for a decision" in text and "Held!" not in text
    assert "more than 100000 loop items" in caplog.text
    assert "the built-in text is sent" in caplog.text


@pytest.mark.timeout(120)
def test_a_fetched_text_over_the_budget_is_a_failed_fetch(
    module_sessions: sessionmaker[Session],
) -> None:
    """A fetched ``list:admin:action:post`` with nested loops is tried once by the
    template-fetch job, not at every held post: the fetch fails, the built-in is used."""
    from datetime import UTC, datetime

    from sqlalchemy import select

    from mtaplugin.model import TemplateFetch
    from mtaplugin.notices.refresh import refresh_all
    from mtaplugin.notices.templates import render
    from tests.unit.template_server import template_server

    site = make_site(module_sessions)
    with template_server() as server:
        server.put("/hold.txt", "Held! " + NESTED)
        hold_notice(site, uri=server.url("/hold.txt"))
        assert refresh_all(site.sessions, server.settings(), datetime.now(UTC)) == 0
    with site.sessions() as s:
        row = s.scalars(select(TemplateFetch).where(TemplateFetch.uri.endswith("/hold.txt"))).one()
        assert row.error.startswith("over the rendering budget: more than 100000")
        text = render("list:admin:action:post", "en", session=s, mlist=lists.get(s, site.address))
    assert "Held!" not in text
