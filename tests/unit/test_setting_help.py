"""Every list setting has a label in words, a sentence of help and (for a number) its
unit, in every shipped language; choices are shown by their words."""

from __future__ import annotations

import pytest

from mtaplugin.i18n import SHIPPED_LANGUAGES, translation
from mtaplugin.web import list_settings
from mtaplugin.web.setting_help import CHOICE_LABELS, SETTING_HELP

ALL = [name for _title, names in list_settings.GROUPS.values() for name in names]


def test_every_setting_on_the_pages_has_help_and_nothing_else_has():
    assert sorted(SETTING_HELP) == sorted(ALL)


@pytest.mark.parametrize("name", ALL)
def test_the_help_is_words_and_one_sentence(name: str):
    entry = SETTING_HELP[name]
    assert entry.label and entry.help and entry.label != entry.help
    assert "_" not in entry.label
    assert entry.help.endswith(".") and entry.help.count(". ") == 0, entry.help
    kind = list_settings.field_of(name).kind
    if kind == "days":
        assert entry.unit == "days"
    if kind not in ("int", "days"):
        assert entry.unit is None


def test_sizes_say_their_unit():
    assert SETTING_HELP["max_message_size"].unit == "KB"
    assert SETTING_HELP["digest_size_threshold"].unit == "KB"


def test_every_value_of_every_choice_has_words():
    for name in ALL:
        fld = list_settings.field_of(name)
        if fld.kind != "choice":
            continue
        assert fld.enum is not None
        for value in fld.choices:
            assert (fld.enum.__name__, value) in CHOICE_LABELS, (name, value)


@pytest.mark.parametrize("language", [lang for lang in SHIPPED_LANGUAGES if lang != "en"])
def test_labels_help_and_choices_are_translated(language: str):
    gettext = translation(language).gettext
    texts = [t for h in SETTING_HELP.values() for t in (h.label, h.help, h.unit) if t]
    texts += list(CHOICE_LABELS.values())
    untranslated = [t for t in set(texts) if gettext(t) == t and t not in ("Markdown", "KB")]
    assert untranslated == []


def test_the_language_is_chosen_from_the_shipped_catalogs():
    fld = list_settings.field_of("preferred_language", "en")
    assert fld.kind == "language" and set(fld.choices) >= {"de", "en", "es", "fr"}
    assert ("de", "Deutsch (de)") in fld.options
    assert list_settings.field_of("preferred_language").choices == fld.choices
    assert ("zh_CN", "中文 (简体, 中国) (zh_CN)") in fld.options
    imported = list_settings.field_of("preferred_language", "tlh")
    assert imported.choices[-1] == "tlh"  # the stored value stays selectable
