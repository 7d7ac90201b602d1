"""The order the milter hands Postfix its edits in: a milter killed half way must leave a
post that loses no member when Postfix accepts it anyway (``default_action=accept``) and
the LMTP front end decides it again (tests/faults/test_kill_milter.py kills it there)."""

from __future__ import annotations

from typing import Any

import Milter

from mtaplugin.config import UnixSocket
from mtaplugin.frontends.milter.session import milter_class
from mtaplugin.posting.verdict import Accept, Edits
from mtaplugin.vocabulary.draft import AddHeader, ChangeHeader


def _calls(edits: Edits) -> list[str]:
    calls: list[str] = []

    class Recorder(milter_class(UnixSocket("/tmp/m.sock"))):  # type: ignore[misc]
        def addrcpt(self, rcpt: str, params: Any = None) -> None:
            calls.append(f"addrcpt {rcpt}")

        def delrcpt(self, rcpt: str) -> None:
            calls.append(f"delrcpt {rcpt}")

        def chgfrom(self, sender: str, params: Any = None) -> None:
            calls.append(f"chgfrom {sender}")

        def addheader(self, name: str, value: str, idx: int = -1) -> None:
            calls.append(f"addheader {name}")

        def chgheader(self, name: str, idx: int, value: str | None) -> None:
            calls.append(f"chgheader {name}")

        def replacebody(self, body: bytes) -> None:
            calls.append("replacebody")

    assert Recorder(None)._apply(Accept(edits=edits)) == Milter.ACCEPT
    return calls


def test_members_first_then_the_headers_and_the_list_address_last() -> None:
    calls = _calls(
        Edits(
            header_ops=(
                AddHeader("List-Post", "<mailto:team@lists.test>"),
                ChangeHeader("Subject", 1, "[team] hello"),
            ),
            body=b"hello\r\n-- \r\nfooter\r\n",
            del_recipients=("team@lists.test",),
            add_recipients=("ann@example.com", "bob@example.net"),
            mail_from="team-bounces@lists.test",
        )
    )
    assert calls == [
        # a kill among these: the list address is still there, the post unchanged
        "addrcpt <ann@example.com>",
        "addrcpt <bob@example.net>",
        # a kill among these: every member has it; the LMTP front end finds List-Post
        "addheader List-Post",
        "chgheader Subject",
        "replacebody",
        "chgfrom <team-bounces@lists.test>",
        "delrcpt team@lists.test",
    ]
