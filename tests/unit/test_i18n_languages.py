"""Language codes: the catalogs with a region (zh_CN, pt_BR) are found from what browsers,
mail headers and locales write (zh-cn, zh, zh_CN.UTF-8), and only languages with a
catalog are accepted for a list or member."""

from __future__ import annotations

import pytest

from mtaplugin.errors import InvalidInput
from mtaplugin.i18n import (
    SHIPPED_LANGUAGES,
    available_languages,
    check_language,
    match_language,
    normalize_language,
)
from mtaplugin.importers.mm2pickle import _text
from mtaplugin.web.language import choose

CATALOGS = ("de", "en", "ja", "pt_BR", "zh_CN")


@pytest.mark.parametrize(
    ("tag", "found"),
    [
        ("zh_CN", "zh_CN"),
        ("zh-CN", "zh_CN"),
        ("zh-cn", "zh_CN"),
        ("ZH_cn.UTF-8", "zh_CN"),
        ("zh", "zh_CN"),
        ("zh-Hans-CN", "zh_CN"),
        ("zh-TW", None),
        ("zh-Hant", None),
        ("pt", "pt_BR"),
        ("pt-br", "pt_BR"),
        ("de-CH", "de"),
        ("de_DE.UTF-8", "de"),
        ("ja-JP", "ja"),
        ("xx", None),
        ("", None),
        (None, None),
    ],
)
def test_match_language(tag, found):
    assert match_language(tag, CATALOGS) == found


def test_every_shipped_language_is_available_and_accepted():
    for language in SHIPPED_LANGUAGES:
        assert language in available_languages()
        assert check_language(language) == language
        assert normalize_language(language) == language


def test_a_language_without_a_catalog_is_refused_naming_the_available_ones():
    with pytest.raises(InvalidInput) as raised:
        check_language("tlh")
    assert raised.value.field == "preferred_language"
    assert "ja" in str(raised.value)


def test_the_browser_chooses_a_regional_catalog():
    assert "zh_CN" in SHIPPED_LANGUAGES
    assert choose(None, "zh-cn,zh;q=0.9,en;q=0.5", "en") == "zh_CN"
    assert choose(None, "zh;q=0.9,en;q=0.5", "en") == "zh_CN"
    assert choose(None, "ja-JP,ja;q=0.9", "en") == "ja"
    assert choose(None, "zh-TW,de;q=0.5", "en") == "de"


def test_a_russian_mailman2_text_in_koi8r_is_read():
    word = "Рассылка"
    assert _text(word.encode("koi8-r"), "koi8-r") == word
    assert _text(word.encode("utf-8"), "koi8-r") == word


def test_a_japanese_mailman2_list_keeps_its_language(module_sessions):
    """A 2.1 list in Japanese (its texts in EUC-JP) with a Russian member: both languages
    survive the import, and no note says a catalog is missing."""
    import pickle

    from mtaplugin.enums import MemberRole
    from mtaplugin.importers import apply, mailman2, mm2pickle
    from mtaplugin.manage import lists, members
    from mtaplugin.notices.templates import render
    from tests.helpers import unique

    raw = {
        b"real_name": b"Nihongo",
        b"data_version": 97,
        b"preferred_language": b"ja",
        b"description": "日本語のリスト".encode("euc-jp"),
        b"members": {b"ann@example.org": 0, b"ivan@example.org": 0},
        b"language": {b"ivan@example.org": b"ru"},
    }
    config = mm2pickle.loads(pickle.dumps(raw, 3))
    assert config["description"] == "日本語のリスト"
    name = f"{unique('ja')}@{unique('dom')}.example"
    plan = mailman2.plan(config, name)
    with module_sessions.begin() as s:
        report = apply.apply(s, plan)
        assert not [n for n in report.notes if "catalog" in n]
        mlist = lists.get(s, name)
        assert mlist.preferred_language == "ja"
        ivan = next(
            m for m, a in members.roster(s, mlist, MemberRole.member) if a.email.startswith("ivan")
        )
        assert ivan.preferred_language == "ru"
        welcome = render("list:user:notice:welcome", mlist.preferred_language, mlist=mlist)
        assert welcome.startswith("リスト Nihongo")
