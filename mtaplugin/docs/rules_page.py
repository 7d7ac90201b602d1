"""``docs/reference/rules.md``: the posting rules, from
:data:`~mtaplugin.posting.pipeline.POSTING_RULES`, and the default refusal texts."""

from __future__ import annotations

import sys
from typing import Any

from mtaplugin.docs.markdown import NO_HELP, header, row


def rule_when(rule: Any) -> str:
    """When the rule hits, from the code: the first paragraph of its check's docstring, else
    of its module's docstring when that starts with the rule's id (``max-size: ...``)."""
    import inspect

    doc = inspect.getdoc(rule.check)
    if not doc:
        module_doc = inspect.getdoc(sys.modules[rule.check.__module__]) or ""
        if module_doc.startswith(rule.id + ":"):
            doc = module_doc[len(rule.id) + 1 :]
    first = (doc or "").strip().split("\n\n")[0]
    return " ".join(first.split()).replace("``", "`") or NO_HELP


def rules_page() -> str:
    from mtaplugin.posting.pipeline import POSTING_RULES, default_refusal_texts

    out = [
        header(
            "Posting rules",
            "`POSTING_RULES` in `mtaplugin/posting/pipeline.py` and the rule modules in "
            "`mtaplugin/posting/rules/` (the docstring of each check, or of its module)",
        ),
        "The rules run in this order; the first one that decides wins. A rule that "
        "*records* does not decide: if no later rule decides, any recorded reason holds "
        "the post. What the SMTP client is told, and more on each rule: "
        "[../rules.md](../rules.md).\n",
        row("#", "Rule", "Does", "When", "Defined in"),
        "|---|---|---|---|---|",
    ]
    for number, rule in enumerate(POSTING_RULES, 1):
        module = rule.check.__module__.replace(".", "/") + ".py"
        link = f"[`{module}`](../../{module})"
        out.append(row(number, f"`{rule.id}`", rule.does, rule_when(rule), link))
    out.append("\n## Default refusal texts\n")
    out.append(
        "A list may word its own per rule in `refusal_texts`; these are used otherwise "
        "(`{list} {rule} {reason} {sender} {owner} {subscribe} {listinfo}` are filled in). "
        "A rule not named here refuses with its reason.\n"
    )
    out.append(row("Rule", "Text"))
    out.append("|---|---|")
    for rule_id, text in default_refusal_texts().items():
        out.append(row(f"`{rule_id}`", text))
    return "\n".join(out) + "\n"
