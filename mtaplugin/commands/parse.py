"""Which lines of a message are commands.

As in Mailman: the Subject (a leading ``Re:``/``Fwd:``/``AW:``... is skipped), then the
first ``email_commands_max_lines`` non-blank lines of the first text/plain part.  Reading
stops at ``end``, ``stop`` or a signature separator (``--``).  Quoted lines (``> ...``) and
a reply's attribution line (``On ..., X wrote:``) are skipped and not counted, so that a
reply to a notice is read from what its writer typed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from mtaplugin.vocabulary.envelope import Post

_REPLY_PREFIX = re.compile(r"^\s*((re|fwd?|aw|sv|vs|antw|tr|rv|wg)\s*(\[\d+\])?\s*:\s*)+", re.I)
STOP_WORDS = frozenset({"end", "stop"})


@dataclass
class CommandLines:
    #: the subject's words ([] when the subject is empty)
    subject: list[str] = field(default_factory=list)
    #: the body's command-candidate lines, split into words
    body: list[list[str]] = field(default_factory=list)


def strip_reply_prefix(subject: str) -> str:
    return _REPLY_PREFIX.sub("", subject).strip()


def _is_attribution(line: str) -> bool:
    text = line.strip()
    return text.endswith(":") and ("wrote" in text.lower() or "schrieb" in text.lower())


def read(post: Post, max_lines: int) -> CommandLines:
    found = CommandLines(subject=strip_reply_prefix(post.subject).split())
    for line in post.first_text_lines(max_lines * 5 + 20):
        stripped = line.strip()
        if stripped.startswith(">") or _is_attribution(stripped):
            continue
        if stripped in ("--", "-- "):
            break
        if len(found.body) >= max_lines:
            break
        words = stripped.split()
        found.body.append(words)
        if words and words[0].lower() in STOP_WORDS:
            break
    return found


def first_words(lines: CommandLines) -> list[str]:
    """The first line someone typed: the body's first line, else the subject."""
    return lines.body[0] if lines.body else lines.subject
