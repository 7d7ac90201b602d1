"""The posting rules.  Each rule is a small check ``check(ctx) -> Hit | None`` in a module
named after its id; the table :data:`mtaplugin.posting.pipeline.POSTING_RULES` lists them in
the order they run, each with its id and its action.
"""

from mtaplugin.posting.rules.base import Check, Hit, PostContext, Rule

__all__ = ["Check", "Hit", "PostContext", "Rule"]
