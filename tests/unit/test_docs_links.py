"""The README and docs/ point at each other: every relative link names a file that exists
and, with a #fragment, a heading that file has (GitHub's anchors)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
#: pages another branch of the same issue writes (the README links them already)
PENDING = {ROOT / "docs" / "package.md"}

_LINK = re.compile(r"\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^```.*?^```", re.M | re.S)


def anchors(page: Path) -> set[str]:
    """GitHub's anchor of each heading: lower case, punctuation dropped, spaces to '-'."""
    text = _FENCE.sub("", page.read_text())
    found = set()
    for heading in re.findall(r"^#+ (.*)$", text, re.M):
        kept = "".join(c for c in heading.strip().lower() if c.isalnum() or c in " -_")
        found.add(kept.replace(" ", "-"))
    return found


def links(page: Path) -> list[str]:
    text = _FENCE.sub("", page.read_text())
    return [t for t in _LINK.findall(text) if not re.match(r"[a-z][a-z0-9+.-]*:", t)]


def test_the_docs_are_found() -> None:
    names = {p.name for p in DOCS}
    assert {"README.md", "postfix.md", "rules.md", "settings.md"} <= names


@pytest.mark.parametrize("page", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_reaches_its_file_and_heading(page: Path) -> None:
    for target in links(page):
        path, _hash, fragment = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if dest in PENDING and not dest.exists():
            continue
        assert dest.exists(), f"{page.relative_to(ROOT)}: {target} does not exist"
        if fragment and dest.suffix == ".md":
            assert fragment in anchors(dest), f"{page.relative_to(ROOT)}: no heading for {target}"


def test_a_broken_link_is_found(tmp_path: Path) -> None:
    page = tmp_path / "a.md"
    page.write_text("# A title, here\n\n[x](b.md) [y](#a-title-here) [z](https://x.org)\n")
    assert links(page) == ["b.md", "#a-title-here"]
    assert anchors(page) == {"a-title-here"}
