"""``docs/reference/settings.md``: every list setting, from the web's
:data:`~mtaplugin.web.list_settings.GROUPS` (the pages and their order), the labels, help
and units of :data:`~mtaplugin.web.setting_help.SETTING_HELP`, and the list model (kind,
values, default, what each list style changes)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mtaplugin.docs.markdown import NO_HELP, anchor, header, row, shown


def _value(kind: str, choices: Sequence[Any], max_length: int, unit: str | None) -> str:
    if kind == "bool":
        text = "yes or no"
    elif kind == "int":
        text = "a whole number"
    elif kind == "days":
        text = "a number of days"
    elif choices:  # "choice", or any field that offers fixed values
        values = [c[0] if isinstance(c, tuple) else c for c in choices]  # (value, label) too
        text = "one of " + ", ".join(f"`{c}`" for c in values)
    elif kind == "lines":
        text = "one entry per line"
    elif kind == "line":
        text = f"one line, at most {max_length} characters" if max_length else "one line"
    else:
        text = "text"
    if unit and unit not in text:
        text += f", in {unit}"
    return text


#: The list the defaults are shown for (display name and prefix come from its name).
EXAMPLE_LIST = "team@lists.example.org"


def new_lists() -> dict[str, dict[str, Any]]:
    """Per list style, every setting of a list just created with it: the code that creates
    lists runs on a throw-away in-memory SQLite database, so the defaults are the real ones."""
    from sqlalchemy import create_engine
    from sqlalchemy.orm import Session

    from mtaplugin.manage import domains, lists
    from mtaplugin.model import Base, MailingList

    engine = create_engine("sqlite://")
    Base.metadata.create_all(engine)
    names = [c.key for c in MailingList.__table__.columns]
    found: dict[str, dict[str, Any]] = {}
    try:
        with Session(engine) as session:
            local, _at, host = EXAMPLE_LIST.partition("@")
            domains.create(session, host)
            for number, style in enumerate(lists.STYLES):
                name = local if number == 0 else f"{local}{number}"
                mlist = lists.create(session, f"{name}@{host}", style, display_name="Team")
                found[style] = {n: getattr(mlist, n) for n in names}
            session.rollback()
    finally:
        engine.dispose()
    return found


def settings_page() -> str:
    from mtaplugin.manage.lists import DEFAULT_STYLE, STYLES
    from mtaplugin.web.list_settings import GROUPS, field_of
    from mtaplugin.web.setting_help import SETTING_HELP

    created = new_lists()
    defaults = created[DEFAULT_STYLE]

    out = [
        header(
            "List settings",
            "`mtaplugin/web/list_settings.py` (the settings pages and their order), "
            "`mtaplugin/web/setting_help.toml` (labels, help, units) and the list model "
            "(kinds, values, defaults)",
        ),
        "Each setting is on the web's settings page named by its group "
        "(`/lists/<list_id>/settings/<group>`), and under its REST name in "
        "`/3.1/lists/<list>/config` (see [../rest.md](../rest.md)). The default is what a "
        f"new list of the `{DEFAULT_STYLE}` style gets (`{EXAMPLE_LIST}`, display name "
        '"Team"); the other styles change a few '
        "([List styles](#list-styles)).\n",
    ]
    for group, (title, _names) in GROUPS.items():
        out.append(f"- [{title}](#{anchor(title)}) (`{group}`)")
    out.append("")
    for group, (title, names) in GROUPS.items():
        out.append(f"## {title}\n")
        out.append(f"Web page: `/lists/<list_id>/settings/{group}`.\n")
        out.append(row("Setting", "Label", "Value", "Default", "What it does"))
        out.append("|---|---|---|---|---|")
        for name in names:
            fld = field_of(name)
            entry = SETTING_HELP.get(name)
            label = entry.label if entry else fld.label
            help_text = entry.help if entry else NO_HELP
            unit = entry.unit if entry else None
            out.append(
                row(
                    f"`{name}`",
                    label,
                    _value(
                        fld.kind,
                        tuple(getattr(fld, "choices", ())),
                        getattr(fld, "max_length", 0),
                        unit,
                    ),
                    shown(defaults[name]),
                    help_text,
                )
            )
        out.append("")
    out.append("## List styles\n")
    out.append(
        "A list is created with a style (`mtaplugin lists create --style`, REST "
        "`style_name`); the style sets these settings, every other one keeps its default.\n"
    )
    out.append(row("Style", "Description", "Sets"))
    out.append("|---|---|---|")
    settings = [name for _title, names in GROUPS.values() for name in names]
    for style, values in created.items():
        changed = [n for n in settings if values[n] != defaults[n]]
        sets = ", ".join(f"`{n}` = {shown(values[n])}" for n in changed)
        out.append(row(f"`{style}`", STYLES[style][0], sets or "(nothing: the defaults)"))
    return "\n".join(out) + "\n"
