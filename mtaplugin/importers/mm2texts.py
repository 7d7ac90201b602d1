"""Mailman 2.1's list texts: the decoration and welcome texts as the list's templates
(their ``%(name)s`` variables converted), and its own rejection texts as the wording of
the refusal of their rule."""

from __future__ import annotations

import re
from typing import Any

from mtaplugin.i18n import _
from mtaplugin.importers.mailman2_options import REFUSAL_TEXTS
from mtaplugin.importers.plan import Plan

#: Mailman 2.1's default list footer (msg_footer and digest_footer): a list that kept it
#: gets mtaplugin's own default footer, which says the same in the list's language
DEFAULT_FOOTER = (
    "_______________________________________________\n"
    "%(real_name)s mailing list\n"
    "%(real_name)s@%(host_name)s\n"
    "%(web_page_url)slistinfo%(cgiext)s/%(_internal_name)s\n"
)

#: 2.1 texts and the template they become
TEMPLATES = {
    "msg_header": "list:member:regular:header",
    "msg_footer": "list:member:regular:footer",
    "digest_header": "list:member:digest:header",
    "digest_footer": "list:member:digest:footer",
    "welcome_msg": "list:user:notice:welcome",
    "goodbye_msg": "list:user:notice:goodbye",
}

#: 2.1 decoration variables and the template variable that says the same
VARIABLES = {
    "real_name": "display_name",
    "list_name": "list_name",
    "_internal_name": "list_name",
    "host_name": "mail_host",
    "description": "description",
    "info": "info",
    "user_address": "user_email",
    "user_delivered_to": "user_delivered_to",
    "user_name": "user_name",
    "listname": "listname",
}
_LISTINFO = re.compile(r"%\(web_page_url\)slistinfo%\(cgiext\)s/%\(_internal_name\)s")
_PLACEHOLDER = re.compile(r"%\((\w+)\)s")


def convert_template(text: str, notes: list[str], where: str, *, jinja: bool = False) -> str:
    """A 2.1 ``%(name)s`` text as a template: with ``${name}`` variables (the renderer
    fills Mailman's ``$variable`` syntax), or with ``jinja`` as Jinja2 (``{{ name }}``,
    the text's own braces kept as text) to be joined with a built-in template.  A
    variable with no counterpart is left out and noted."""
    text = text.replace("\r\n", "\n")
    unknown: set[str] = set()

    def variable(name: str) -> str:
        return f"{{{{ {name} }}}}" if jinja else f"${{{name}}}"

    def literal(piece: str) -> str:
        piece = piece.replace("%%", "%")
        if jinja:
            return re.sub(r"[{}]", lambda m: "{{ '" + m.group(0) + "' }}", piece)
        return piece.replace("$", "$$")

    out: list[str] = []
    pos = 0
    for m in re.finditer(rf"{_LISTINFO.pattern}|{_PLACEHOLDER.pattern}", text):
        out.append(literal(text[pos : m.start()]))
        pos = m.end()
        name = m.group(1)
        if name is None:  # the listinfo URL
            out.append(variable("listinfo_uri"))
        elif name == "cgiext":
            continue
        elif name in VARIABLES:
            out.append(variable(VARIABLES[name]))
        else:
            unknown.add(name)
    out.append(literal(text[pos:]))
    for name in sorted(unknown):
        notes.append(
            _("{where}: %({name})s has no counterpart and was left out").format(
                where=where, name=name
            )
        )
    return "".join(out)


def templates(config: dict[str, Any], plan: Plan) -> None:
    for key, name in TEMPLATES.items():
        text = config.get(key)
        if not isinstance(text, str) or not text.strip():
            continue
        if (
            key in ("msg_footer", "digest_footer")
            and text.replace("\r\n", "\n").strip() == DEFAULT_FOOTER.strip()
        ):
            continue
        if key == "welcome_msg":
            # 2.1 put the list's own text above its standard welcome: so does mtaplugin.
            own = convert_template(text, plan.notes, key, jinja=True).rstrip("\n")
            plan.templates[(name, "")] = f'{own}\n\n{{% include "{name}.txt" %}}'
        else:
            plan.templates[(name, "")] = convert_template(text, plan.notes, key)


def refusal_texts(config: dict[str, Any], plan: Plan) -> None:
    """2.1's own rejection texts as the wording of the refusal of their rule."""
    texts: dict[str, str] = {}
    for key, rule in REFUSAL_TEXTS.items():
        text = config.get(key)
        if isinstance(text, str) and text.strip():
            escaped = " ".join(text.split()).replace("{", "{{").replace("}", "}}")
            texts[rule] = escaped.replace("%(listowner)s", "{owner}")
    if texts:
        plan.settings["refusal_texts"] = texts
