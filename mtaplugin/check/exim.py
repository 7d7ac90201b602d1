"""What Exim's configuration says about mtaplugin (``mtaplugin check --exim FILE``), read
from the file (``.include`` and ``.include_if_exists`` followed) the way contrib/exim
pastes into it:

- the ``mtaplugin_lists`` router has a ``domains`` condition: without it Exim asks
  mtaplugin about every address it routes, and while mtaplugin is down it defers the mail
  of every domain;
- the RCPT ACL asks mtaplugin (acl_rcpt.conf) before any ``accept``: after one, the
  clients that ``accept`` lets through post to lists undecided (250, then a bounce);
- the RCPT ACL's question is limited to ``mtaplugin_list_domains`` too."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from mtaplugin.check.finding import Finding, error, ok, warning
from mtaplugin.i18n import _

#: the router of contrib/exim/routers.conf that sends undecided list mail to mtaplugin
ROUTER = "mtaplugin_lists"
#: what marks the statement of contrib/exim/acl_rcpt.conf that asks mtaplugin
ASKS = "acl_m_mtaplugin_rcpt"
_VERBS = ("accept", "defer", "deny", "discard", "drop", "require", "warn")


class EximConfigError(OSError):
    pass


_MACRO = re.compile(r"^([A-Z][A-Za-z0-9_]*)\s*==?\s*(.*)$")
_NAME = re.compile(r"\b[A-Z][A-Za-z0-9_]*\b")


def _joined(path: Path) -> list[str]:
    """The file's lines, continuation lines (a trailing backslash) joined."""
    lines: list[str] = []
    for raw in path.read_text(errors="replace").splitlines():
        if lines and lines[-1].endswith("\\"):
            lines[-1] = lines[-1][:-1] + raw.strip()
        else:
            lines.append(raw.rstrip())
    return lines


def expand(text: str, macros: dict[str, str]) -> str:
    """``text`` with the macros it names replaced (once, as the value of an option)."""
    return _NAME.sub(lambda m: macros.get(m.group(0), m.group(0)), text)


def read_config(path: Path, depth: int = 0, macros: dict[str, str] | None = None) -> list[str]:
    """The lines Exim reads: ``.include`` files in their places, what ``.ifdef``,
    ``.ifndef`` and ``.else`` leave out left out, continuation lines joined; the macros
    defined on the way are put in ``macros`` (Debian's template is full of them)."""
    if depth > 10:
        raise EximConfigError(_("{path}: .include nested too deep").format(path=path))
    macros = {} if macros is None else macros
    lines: list[str] = []
    #: per open .if: (this branch is read, a branch of it was read already)
    stack: list[tuple[bool, bool]] = []
    for line in _joined(path):
        stripped = line.strip()
        word, _sp, rest = stripped.partition(" ")
        if word in (".ifdef", ".ifndef", ".elifdef", ".elifndef"):
            named = any(name in rest for name in macros)
            want = named if word.endswith("ifdef") else not named
            if word.startswith(".elif"):
                _outer, done = stack.pop() if stack else (True, True)
                stack.append((not done and want, done or want))
            else:
                stack.append((want, want))
            continue
        if word == ".else" and stack:
            _taken, done = stack.pop()
            stack.append((not done, True))
            continue
        if word == ".endif" and stack:
            stack.pop()
            continue
        if not all(taken for taken, _d in stack):
            continue
        if word in (".include", ".include_if_exists"):
            name = Path(expand(rest.strip(), macros))
            if word == ".include_if_exists" and not name.exists():
                continue
            lines += read_config(name, depth + 1, macros)
            continue
        m = _MACRO.match(line)
        if m:
            macros.setdefault(m.group(1), m.group(2).strip())
            continue
        lines.append(line)
    return lines


@dataclass(frozen=True)
class Config:
    lines: list[str]
    macros: dict[str, str] = field(default_factory=dict)

    @classmethod
    def read(cls, path: Path) -> Config:
        macros: dict[str, str] = {}
        return cls(read_config(path, macros=macros), macros)

    def section(self, name: str) -> list[str]:
        """The lines after ``begin NAME`` up to the next ``begin``."""
        out: list[str] = []
        inside = False
        for line in self.lines:
            word = line.split()
            if len(word) == 2 and word[0] == "begin":
                inside = word[1] == name
                continue
            if inside:
                out.append(line)
        return out

    def main_option(self, name: str) -> str | None:
        for line in self.lines:
            if line.split() and line.split()[0] == "begin":
                break
            m = re.match(rf"\s*{re.escape(name)}\s*=\s*(.*)$", line)
            if m:
                return expand(m.group(1).strip(), self.macros)
        return None


def _blocks(lines: list[str]) -> dict[str, list[str]]:
    """A router's or ACL's lines by its name (``name:`` at the start of a line)."""
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in lines:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = re.match(r"^([A-Za-z0-9_]+):\s*$", line)
        if m:
            current = found.setdefault(m.group(1), [])
        elif current is not None:
            current.append(line)
    return found


def _statements(acl: list[str]) -> list[list[str]]:
    """An ACL's statements: a verb line and the condition lines after it."""
    out: list[list[str]] = []
    for line in acl:
        word = line.split()[0] if line.split() else ""
        if word in _VERBS:
            out.append([line.strip()])
        elif out:
            out[-1].append(line.strip())
    return out


def check_router(conf: Config) -> Finding:
    router = _blocks(conf.section("routers")).get(ROUTER)
    if router is None:
        return warning(
            "exim.router",
            _("the routers have no {router}: undecided list mail is not sent to mtaplugin").format(
                router=ROUTER
            ),
            _("add contrib/exim/routers.conf first in the routers"),
        )
    if not any(re.match(r"\s*domains\s*=", line) for line in router):
        return error(
            "exim.router",
            _(
                "the router {router} has no domains condition: Exim asks mtaplugin about "
                "every address, and while mtaplugin is down it defers all mail"
            ).format(router=ROUTER),
            _("add `domains = +mtaplugin_list_domains` to it (contrib/exim/routers.conf)"),
        )
    return ok(
        "exim.router", _("the router {router} asks only about list domains").format(router=ROUTER)
    )


def check_rcpt_acl(conf: Config) -> Finding:
    name = conf.main_option("acl_smtp_rcpt")
    acl = _blocks(conf.section("acl")).get(name or "")
    if not name or acl is None:
        return warning(
            "exim.acl_rcpt",
            _("no RCPT ACL (acl_smtp_rcpt) found: posts are decided at delivery only"),
            _("put contrib/exim/acl_rcpt.conf first in your acl_smtp_rcpt ACL"),
        )
    statements = _statements(acl)
    asks = next((i for i, s in enumerate(statements) if any(ASKS in p for p in s)), None)
    if asks is None:
        return warning(
            "exim.acl_rcpt",
            _(
                "the RCPT ACL {acl} does not ask mtaplugin: posts are decided at delivery, "
                "a refusal is a bounce"
            ).format(acl=name),
            _("put contrib/exim/acl_rcpt.conf first in it"),
        )
    # (the verb alone on its line, as Debian writes them: with its first condition)
    before = [
        " ".join(s[:2] if s[0] == "accept" else s[:1])
        for s in statements[:asks]
        if s[0].split()[0] == "accept"
    ]
    if before:
        return error(
            "exim.acl_rcpt",
            _(
                "the RCPT ACL {acl} has `{statement}` before mtaplugin's statements: posts "
                "from the clients it accepts are not decided at RCPT (250, then a bounce)"
            ).format(acl=name, statement=before[0]),
            _("move contrib/exim/acl_rcpt.conf above every accept statement of {acl}").format(
                acl=name
            ),
        )
    asking = [s for s in statements if any("readsocket" in p and ASKS in p for p in s)]
    if any(not any(re.search(r"(^|\s)domains\s*=", p) for p in s) for s in asking):
        return error(
            "exim.acl_rcpt",
            _(
                "the RCPT ACL {acl} asks mtaplugin about every recipient: while mtaplugin "
                "is down, mail for every domain gets 451"
            ).format(acl=name),
            _(
                "limit the statement to `domains = +mtaplugin_list_domains` "
                "(contrib/exim/acl_rcpt.conf)"
            ),
        )
    return ok(
        "exim.acl_rcpt",
        _("the RCPT ACL {acl} asks mtaplugin first, about list domains only").format(acl=name),
    )


def check(path: Path | None) -> list[Finding]:
    if path is None:
        return []
    try:
        conf = Config.read(path)
    except OSError as exc:
        return [
            warning(
                "exim",
                _("cannot read Exim's configuration {path}: {error}").format(path=path, error=exc),
                _("give Exim's configuration file with --exim FILE"),
            )
        ]
    return [check_router(conf), check_rcpt_acl(conf)]
