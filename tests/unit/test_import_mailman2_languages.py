"""A Mailman 2.1 list keeps its preferred_language through the import when mtaplugin ships
a catalog for it: the texts are read in the 2.1 charset of that language, the list keeps the
code (no "no catalog here" note), and its notices go out in that language."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.i18n import SHIPPED_LANGUAGES, check_language
from mtaplugin.importers import apply, mailman2, mm2pickle
from mtaplugin.manage import lists
from mtaplugin.notices.templates import render
from tests.helpers import unique

#: Mailman 2.1 language -> a description in its 2.1 charset, and the start of the welcome
#: notice in that language
LANGUAGES = {
    "cs": ("Konference vývojářů", "Vítejte v konferenci Dev"),
    "da": ("Udviklernes liste, æøå", "Velkommen til listen Dev"),
    "fi": ("Kehittäjien lista", "Tervetuloa listalle Dev"),
    "hu": ("Fejlesztők levelezőlistája", "Üdvözöljük a(z) Dev <"),
}


def imported_21(sessions: sessionmaker[Session], raw: dict[bytes, Any]) -> str:
    """The Mailman 2.1 list ``raw`` (its config.pck's values) imported as a new list, with
    no note of a language without a catalog; the list's posting address."""
    name = f"{unique('dev')}@{unique('dom')}.example"
    plan = mailman2.plan(mm2pickle.loads(pickle.dumps(raw, 3)), name)
    with sessions.begin() as s:
        report = apply.apply(s, plan)
    assert not any("no catalog" in n for n in report.notes), report.notes
    return name


@pytest.mark.parametrize("code", sorted(LANGUAGES))
def test_the_language_ships_complete(code: str) -> None:
    assert code in SHIPPED_LANGUAGES
    assert check_language(code) == code


@pytest.mark.parametrize("code", sorted(LANGUAGES))
def test_a_21_list_keeps_its_language_and_gets_notices_in_it(
    code: str, module_sessions: sessionmaker[Session]
) -> None:
    description, welcome = LANGUAGES[code]
    raw = {
        b"real_name": b"Dev",
        b"data_version": 97,
        b"members": {b"ann@example.org": 0},
        b"preferred_language": code.encode(),
        b"description": description.encode(mm2pickle.CHARSETS[code]),
    }
    name = imported_21(module_sessions, raw)
    with module_sessions() as s:
        mlist = lists.get(s, name)
        assert mlist.preferred_language == code
        assert mlist.description == description
        text = render(
            "list:user:notice:welcome",
            mlist.preferred_language,
            mlist=mlist,
            user_email="ann@example.org",
        )
    assert text.startswith(welcome), text[:80]
