"""``docs/reference/cli.md``: every ``mtaplugin`` command, from the argparse parser
itself."""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Sequence
from typing import Any

from mtaplugin.docs.markdown import NO_HELP, anchor, cell, header, row

#: What a positional argument without help of its own means, by its name; the same in every
#: command that takes it (a held post's id is only taken by ``held``, a token only by
#: ``requests``, a name only by ``jobs run``).
USUAL_ARGUMENTS = {
    "LIST": "the list: its address (`team@lists.example.org`) or its list id",
    "LIST@DOMAIN": "the new list's address",
    "EMAIL": "an email address",
    "email": "the user's email address",
    "DOMAIN": "a mail domain (the host name after the @ of its lists)",
    "mail_host": "a mail domain (the host name after the @ of its lists)",
    "ID": "a held post's id (`mtaplugin held list`)",
    "TOKEN": "a request's token (`mtaplugin requests list`)",
    "NAME": "a job's name (`mtaplugin jobs list`)",
}


def _argument_text(action: argparse.Action) -> str:
    """The argument's help (or the usual meaning of a positional), its choices, its default."""
    text = action.help or ""
    if not text and not action.option_strings:
        text = USUAL_ARGUMENTS.get(_metavar(action), "")
    text = text or NO_HELP
    if action.choices is not None:
        text += " (one of " + ", ".join(f"`{c}`" for c in action.choices) + ")"
    default = action.default
    shown = default not in (None, False, [], "", argparse.SUPPRESS)
    if action.option_strings and action.nargs != 0 and shown:
        text += f" (default: `{default}`)"
    return text


def _metavar(action: argparse.Action) -> str:
    if action.metavar is not None:
        return str(action.metavar)
    if action.choices is not None and not isinstance(action, argparse._SubParsersAction):
        return "{" + ",".join(str(c) for c in action.choices) + "}"
    return action.dest.upper() if action.option_strings else action.dest


def _invocation(action: argparse.Action) -> str:
    """How the argument is written: ``--role R``, ``EMAIL...``, ``[NAME]``."""
    if not action.option_strings:
        name = _metavar(action)
        if action.nargs == "?":
            return f"[{name}]"
        if action.nargs == "*":
            return f"[{name}...]"
        if action.nargs == "+":
            return f"{name}..."
        return name
    if isinstance(action, argparse.BooleanOptionalAction):
        return "|".join(action.option_strings)
    option = max(action.option_strings, key=len)
    if action.nargs == 0:
        return option
    return f"{option} {_metavar(action)}"


def _arguments(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [
        a
        for a in parser._actions
        if not isinstance(a, argparse._HelpAction | argparse._SubParsersAction)
        and a.help != argparse.SUPPRESS
    ]


def _usage(words: Sequence[str], parser: argparse.ArgumentParser) -> str:
    parts = ["mtaplugin", *words]
    for action in _arguments(parser):
        text = _invocation(action)
        parts.append(text if action.required or not action.option_strings else f"[{text}]")
    return " ".join(parts)


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction[Any] | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return None


def cli_commands(
    parser: argparse.ArgumentParser | None = None, words: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], str, argparse.ArgumentParser]]:
    """Every command that runs something: (its words, its help, its parser), in the order
    ``mtaplugin --help`` lists them."""
    if parser is None:
        from mtaplugin.cli import build_parser

        parser = build_parser()
    sub = _subparsers(parser)
    if sub is None:
        return
    helps = {a.dest: a.help or "" for a in sub._choices_actions}
    for name, child in sub.choices.items():
        here = (*words, name)
        if _subparsers(child) is None:
            yield here, helps.get(name, ""), child
        else:
            yield from cli_commands(child, here)


def cli_page() -> str:
    from mtaplugin.cli import build_parser

    parser = build_parser()
    out = [
        header("The mtaplugin command", "the argparse parser of `mtaplugin/cli/`"),
        "What each command is for, with examples: [../cli.md](../cli.md). Every command "
        "takes the options of `mtaplugin` itself first:\n",
        row("Option", "What it does"),
        "|---|---|",
    ]
    for action in _arguments(parser):
        out.append(row(f"`{_invocation(action)}`", action.help or ""))
    out.append("")
    commands = list(cli_commands(parser))
    for words, help_text, _child in commands:
        title = "mtaplugin " + " ".join(words)
        out.append(f"- [`{title}`](#{anchor(title)}): {cell(help_text)}")
    for words, help_text, child in commands:
        out.append(f"\n## mtaplugin {' '.join(words)}\n")
        if help_text:
            out.append(help_text[:1].upper() + help_text[1:] + ".\n")
        out.append(f"```\n{_usage(words, child)}\n```")
        arguments = _arguments(child)
        if arguments:
            out.append("")
            out.append(row("Argument", "What it is"))
            out.append("|---|---|")
            for action in arguments:
                text = _argument_text(action)
                out.append(row(f"`{_invocation(action)}`", text))
    return "\n".join(out) + "\n"
