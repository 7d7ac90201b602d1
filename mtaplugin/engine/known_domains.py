"""The list domains the engine knows without the list database: the last ``domains``
table the lookup server wrote (:mod:`mtaplugin.frontends.postfix_tables`).

When the database cannot answer, the engine refuses with a 4xx only the recipients (and
the transactions) in these domains; mail for any other domain goes on untouched, as it
does when mtaplugin is down altogether (docs/postfix.md).  Without the table (no
``lookup.tables_dir``) every recipient gets the 4xx, as before.
"""

from __future__ import annotations

from pathlib import Path


class KnownDomains:
    """The list domains as the last written ``domains`` table says, for the engine when the
    list database cannot answer: mail for any other domain then goes on untouched
    instead of waiting for the database (docs/postfix.md).  Re-read when the file
    changes; None while there is no table."""

    def __init__(self, tables_dir: str) -> None:
        self.path = Path(tables_dir) / "domains" if tables_dir else None
        self._seen: tuple[float, int] | None = None
        self._domains: frozenset[str] | None = None

    def __call__(self) -> frozenset[str] | None:
        if self.path is None:
            return None
        try:
            st = self.path.stat()
            if self._seen != (st.st_mtime, st.st_size):
                text = self.path.read_text()
                self._domains = frozenset(
                    line.split()[0].lower()
                    for line in text.splitlines()
                    if line.strip() and not line.startswith("#")
                )
                self._seen = (st.st_mtime, st.st_size)
        except OSError:
            return None
        return self._domains


def in_domains(address: str, domains: frozenset[str]) -> bool:
    """Whether ``address`` is in one of ``domains`` or a subdomain of one (as Postfix
    matches ``relay_domains``)."""
    host = address.strip().strip("<>").rpartition("@")[2].lower().rstrip(".")
    parts = host.split(".")
    return any(".".join(parts[i:]) in domains for i in range(len(parts)))
