"""Catalogs and notice templates: every shipped language is complete, keeps the
placeholders, and renders every template; the language follows the reader."""

from __future__ import annotations

import re

import pytest
from babel.messages.pofile import read_po

from mtaplugin import i18n
from mtaplugin.i18n import SHIPPED_LANGUAGES, _, catalog_path, using
from mtaplugin.i18n.tools import extract, missing
from mtaplugin.model import MailingList
from mtaplugin.notices.templates import NAMES, render, render_text
from tests.helpers import list_template

PLACEHOLDER = re.compile(r"\{[^{}]*\}|%\([a-z_]+\)s")


@pytest.fixture(scope="module")
def template():
    return extract()


def mailing_list() -> MailingList:
    return MailingList(
        list_name="dev",
        mail_host="example.org",
        list_id="dev.example.org",
        display_name="Dev",
        description="Developers",
        info="All about dev.",
        preferred_language="en",
    )


VARIABLES = {
    "user_email": "ann@example.net",
    "token": "0" * 40,
    "expires": "2030-01-01 00:00 UTC",
    "sender_email": "bob@example.net",
    "subject": "Hello",
    "reasons": "  - why (rule)",
    "reason": "off topic",
    "request_id": 7,
    "count": 3,
    "results": "> help",
    "ignored": "    chatter",
    "request": "subscription",
    "member": "Ann <ann@example.net>",
    "listinfo_uri": "https://lists.example.org/dev/",
}


def test_every_mailman_template_name_ships():
    mailman = {
        "domain:admin:notice:new-list",
        *(f"list:admin:action:{n}" for n in ("post", "subscribe", "unsubscribe")),
        *(
            f"list:admin:notice:{n}"
            for n in (
                "subscribe",
                "unsubscribe",
                "disable",
                "increment",
                "removal",
                "pending",
                "unrecognized",
            )
        ),
        *(f"list:member:digest:{n}" for n in ("header", "footer", "masthead")),
        "list:member:regular:header",
        "list:member:regular:footer",
        *(f"list:user:action:{n}" for n in ("invite", "subscribe", "unsubscribe")),
        *(
            f"list:user:notice:{n}"
            for n in (
                "goodbye",
                "hold",
                "no-more-today",
                "post",
                "probe",
                "refuse",
                "rejected",
                "warning",
                "welcome",
            )
        ),
    }
    assert len(mailman) == 28
    assert mailman <= set(NAMES)


def test_every_template_message_is_extracted(template):
    ids = {m.id for m in template if m.id}
    assert (
        "Someone, probably you, asked to join the list %(display_name)s <%(listname)s> "
        "with the address %(user_email)s." in ids
    )
    assert "<{address}>: no such list at {domain}" in ids


@pytest.mark.parametrize("language", SHIPPED_LANGUAGES)
def test_catalog_is_complete(language, template):
    assert missing(language, template) == []


@pytest.mark.parametrize("language", SHIPPED_LANGUAGES)
def test_translations_keep_the_placeholders(language):
    with catalog_path(language).open("rb") as fh:
        catalog = read_po(fh, locale=language)
    translated = [m for m in catalog if m.id and m.string]
    with_placeholders = [m for m in translated if PLACEHOLDER.search(m.id)]
    # An empty catalog, or one whose texts lost their placeholders, is not "kept".
    assert len(with_placeholders) > 100, (language, len(translated))
    changed = [
        m.id
        for m in translated
        if set(PLACEHOLDER.findall(m.string)) != set(PLACEHOLDER.findall(m.id))
    ]
    assert changed == [], language


def test_missing_reports_an_untranslated_message(tmp_path, monkeypatch, template):
    source = catalog_path("de").read_text(encoding="utf-8")
    # Blank one translation: the completeness check must name it.
    target = 'msgstr "(kein Betreff)"'
    assert target in source
    lang_dir = tmp_path / "de" / "LC_MESSAGES"
    lang_dir.mkdir(parents=True)
    (lang_dir / "mtaplugin.po").write_text(source.replace(target, 'msgstr ""'), encoding="utf-8")
    monkeypatch.setattr(i18n, "LOCALE_DIR", tmp_path)
    monkeypatch.setattr("mtaplugin.i18n.tools.catalog_path", i18n.catalog_path)
    assert missing("de", template) == ["(no subject)"]


@pytest.mark.parametrize("language", SHIPPED_LANGUAGES)
@pytest.mark.parametrize("name", NAMES)
def test_every_template_renders_in_every_language(language, name):
    text = render(name, language, mlist=mailing_list(), **VARIABLES)
    assert "{{" not in text and "%(" not in text
    if not name.endswith(":header"):
        assert text.strip()


def test_notices_are_in_the_readers_language():
    mlist = mailing_list()
    english = render("list:user:notice:welcome", "en", mlist=mlist, user_email="a@b.example")
    german = render("list:user:notice:welcome", "de", mlist=mlist, user_email="a@b.example")
    french = render(
        "list:user:notice:welcome", "fr_FR.UTF-8", mlist=mlist, user_email="a@b.example"
    )
    assert english.startswith("Welcome to the list Dev <dev@example.org>")
    assert german.startswith("Willkommen auf der Liste Dev <dev@example.org>")
    assert french.startswith("Bienvenue sur la liste Dev <dev@example.org>")
    with using("es"):
        assert _("(no subject)") == "(sin asunto)"
    assert _("(no subject)") == "(no subject)"
    with using("xx"):  # unknown: the default language
        assert _("(no subject)") == "(no subject)"


def test_stored_templates_accept_mailman_dollar_syntax():
    assert (
        render_text("Hi $user_email on $listname", "en", {"user_email": "a@b", "listname": "l@x"})
        == "Hi a@b on l@x"
    )
    assert render_text("Hi {{ user_email }}", "en", {"user_email": "a@b"}) == "Hi a@b"


def test_stored_templates_are_sandboxed():
    from jinja2.exceptions import SecurityError

    with pytest.raises(SecurityError):
        render_text("{{ ''.__class__.__mro__[1].__subclasses__() }}", "en", {})


def test_stored_templates_override_list_then_domain_then_site(module_sessions):
    from mtaplugin.enums import TemplateScope
    from mtaplugin.manage import domains, lists
    from mtaplugin.model import Template
    from tests.helpers import unique

    name = "list:user:notice:goodbye"
    with module_sessions.begin() as s:
        host = f"{unique('tpl')}.test"
        domain = domains.create(s, host)
        mlist = lists.create(s, f"team@{host}")
        other = lists.create(s, f"other@{host}")
        s.add(Template(scope=TemplateScope.site, name=name, text="site {{ user_email }}"))
        s.add(Template(scope=TemplateScope.domain, domain_id=domain.id, name=name, text="domain"))
        s.add(list_template(mlist, name, language="de", text="Liste $user_email"))
        s.flush()
        assert render(name, "de", session=s, mlist=mlist, user_email="a@b") == "Liste a@b"
        assert render(name, "en", session=s, mlist=mlist, user_email="a@b") == "domain"
        assert render(name, "de", session=s, mlist=other, user_email="a@b") == "domain"
        assert render(name, "en", session=s, user_email="a@b") == "site a@b"
        s.rollback()


@pytest.mark.parametrize(
    ("tag", "expected"),
    [
        ("pt_BR", "pt_BR"),
        ("pt-br", "pt_BR"),
        ("pt-BR", "pt_BR"),
        ("pt_BR.UTF-8", "pt_BR"),
        ("pt", "pt_BR"),  # the one Portuguese catalog beats the English fallback
        ("pt-PT", "pt_BR"),
        ("it_IT.UTF-8", "it"),
        ("IT", "it"),
        ("de-CH", "de"),
        ("xx-YY", None),
        ("", None),
    ],
)
def test_a_language_tag_finds_its_catalog(tag, expected):
    assert i18n.match_language(tag, ("de", "en", "it", "pt_BR")) == expected


def test_a_browser_and_a_mail_asking_for_brazilian_portuguese_get_it():
    from mtaplugin.web.language import choose

    assert choose(None, "pt-br,pt;q=0.8,en;q=0.5", "en") == "pt_BR"
    assert choose(None, "it-IT,it;q=0.9", "en") == "it"
    assert i18n.normalize_language("pt-br") == "pt_BR"
    with using("pt-BR") as lang:
        assert lang == "pt_BR"
        assert _("(no subject)") == "(sem assunto)"
