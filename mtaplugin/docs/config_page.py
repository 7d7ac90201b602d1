"""``docs/reference/configuration.md``: every key of the configuration file, from the
settings dataclasses (default, environment variable, the comment above the field) and
the renamed keys."""

from __future__ import annotations

import enum
from typing import Any

from mtaplugin.docs.markdown import NO_HELP, header, row, shown


def _field_comments(cls: type) -> dict[str, str]:
    """The ``#:`` comment lines above each field of a settings dataclass, joined."""
    import inspect

    comments: dict[str, str] = {}
    pending: list[str] = []
    for line in inspect.getsource(cls).splitlines()[1:]:
        stripped = line.strip()
        if stripped.startswith("#:"):
            pending.append(stripped[2:].strip())
            continue
        name, colon, _rest = stripped.partition(":")
        if colon and name.isidentifier():
            comments[name] = " ".join(pending).replace("``", "`")
        pending = []
    return comments


def _config_default(key: str, value: Any) -> str:
    if key.endswith("socket_mode") and isinstance(value, int) and not isinstance(value, bool):
        return f"`{value:#o}`"
    if value is None:
        return "(empty)"
    if isinstance(value, tuple):
        return f"`{', '.join(map(str, value))}`" if value else "(empty)"
    if isinstance(value, bool | enum.Enum) or value == "":
        return shown(value)
    return f"`{value}`"


def configuration_page() -> str:
    import dataclasses

    from mtaplugin.config.load import CONFIG_ENV, ENV_PREFIX, RENAMED
    from mtaplugin.config.sections import SECTIONS

    out = [
        header(
            "The configuration file",
            "the settings dataclasses of `mtaplugin/config/` (their defaults and "
            "the comment above each field) and `mtaplugin/config/load.py`",
        ),
        f"One TOML file: `mtaplugin --config FILE`, or `{CONFIG_ENV}=FILE`. Every key can "
        f"be set by an environment variable `{ENV_PREFIX}<SECTION>_<KEY>` instead. How "
        "the file is read and what each part is for: [../configuration.md](../configuration.md).\n",
    ]
    for section in SECTIONS:
        out.append(f"- [`[{section}]`](#{section})")
    for section, cls in SECTIONS.items():
        out.append(f"\n## {section}\n")
        doc = (cls.__doc__ or "").strip()
        if doc and not doc.startswith(cls.__name__ + "("):
            out.append(" ".join(doc.split()).replace("``", "`") + "\n")
        out.append(row("Key", "Default", "Environment variable", "What it is"))
        out.append("|---|---|---|---|")
        comments = _field_comments(cls)
        defaults = cls()
        for fld in dataclasses.fields(cls):
            key = f"{section}.{fld.name}"
            env = (ENV_PREFIX + key.replace(".", "_")).upper()
            out.append(
                row(
                    f"`{key}`",
                    _config_default(fld.name, getattr(defaults, fld.name)),
                    f"`{env}`",
                    comments.get(fld.name) or NO_HELP,
                )
            )
    out.append("\n## Renamed keys\n")
    out.append(
        "The old names are still read for this release, with a warning naming the new key; "
        "when both are given, the new one wins.\n"
    )
    out.append(row("Old key", "New key"))
    out.append("|---|---|")
    for old, new in RENAMED.items():
        out.append(row(f"`{old}`", f"`{new}`"))
    return "\n".join(out) + "\n"
