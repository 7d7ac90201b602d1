"""The posting rules.  Each rule is a small named callable ``rule(ctx) -> Hit | None``.

The order they run in is the tuple ``POSTING_RULES`` in :mod:`mtaplugin.posting.pipeline`.
"""

from mtaplugin.posting.rules.base import Hit, PostContext, Rule

__all__ = ["Hit", "PostContext", "Rule"]
