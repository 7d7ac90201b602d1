"""What every list setting is called on the settings pages, one sentence on what it does
here, and its unit; the words shown for the values of a choice.

The texts live in ``setting_help.toml`` beside this module (a table, one entry a setting);
every string there is a message, extracted by :mod:`mtaplugin.i18n.tools` and translated
when the page is rendered, in the reader's language (``_(help.label)`` in the templates).
Every setting of :data:`mtaplugin.web.list_settings.GROUPS` has an entry (a unit test
checks it).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

#: the table of texts (every string in it is a message to translate)
DATA_FILE = Path(__file__).with_name("setting_help.toml")


@dataclass(frozen=True)
class SettingHelp:
    #: the setting's name in words
    label: str
    #: one sentence: what it does in mtaplugin
    help: str
    #: what its number counts (days, KB, ...); None when it is not a number
    unit: str | None = None


_TABLE = tomllib.loads(DATA_FILE.read_text(encoding="utf-8"))

#: keyed by the setting's REST name (Mailman's)
SETTING_HELP: dict[str, SettingHelp] = {
    name: SettingHelp(entry["label"], entry["help"], entry.get("unit"))
    for name, entry in _TABLE["settings"].items()
}

#: the words for a value of a choice, by (the enum's name, the value)
CHOICE_LABELS: dict[tuple[str, str], str] = {
    (enum_name, value): text
    for enum_name, labels in _TABLE["choices"].items()
    for value, text in labels.items()
}


def choice_label(enum_name: str, value: str) -> str:
    """The words for ``value`` (untranslated: the page translates them); the value itself
    when it has none."""
    return CHOICE_LABELS.get((enum_name, value), value)
