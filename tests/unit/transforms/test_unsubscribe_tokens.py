"""One-click unsubscribe tokens and the worker's per-member copies."""

from __future__ import annotations

import pytest

from mtaplugin import unsubscribe_tokens as tokens
from mtaplugin.transforms import members_copy
from mtaplugin.transforms.personalize import Personalization, member_copy
from tests.unit.transforms.util import context, corpus, parse

SECRET = "x" * 40


def test_a_token_names_its_list_and_member() -> None:
    token = tokens.make_token(SECRET, "team.example.org", "Ann@Example.NET")
    assert tokens.verify(SECRET, token) == ("team.example.org", "ann@example.net")
    assert token.isascii() and "/" not in token and "+" not in token and "=" not in token


@pytest.mark.parametrize(
    "mangle",
    [
        lambda t: t[:-1] + ("A" if t[-1] != "A" else "B"),  # the MAC
        lambda t: "A" + t[1:] if t[0] != "A" else "B" + t[1:],  # the data
        lambda t: t.replace(".", ""),
        lambda t: t + ".x",
        lambda t: "!!!." + t.split(".")[1],
        lambda t: "",
    ],
)
def test_a_changed_token_is_refused(mangle) -> None:
    token = tokens.make_token(SECRET, "team.example.org", "ann@example.net")
    assert tokens.verify(SECRET, mangle(token)) is None


def test_another_secret_refuses_the_token() -> None:
    token = tokens.make_token(SECRET, "team.example.org", "ann@example.net")
    assert tokens.verify("y" * 40, token) is None
    assert tokens.verify("", token) is None
    with pytest.raises(ValueError):
        tokens.make_token("", "team.example.org", "ann@example.net")


def test_member_copy_swaps_the_shared_link_for_the_members_own() -> None:
    listinfo = "https://lists.example.org/lists/team.lists.example.org/"
    shared = members_copy(context(listinfo_url=listinfo), corpus("plain-ascii.eml"))
    info = Personalization("team.lists.example.org", listinfo, "team-leave@lists.example.org")
    own = member_copy(shared, info, "bob@example.org", SECRET)
    msg = parse(own)
    assert msg.get_all("List-Unsubscribe") and len(msg.get_all("List-Unsubscribe")) == 1
    assert msg["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    url = msg["List-Unsubscribe"].split(",")[0].strip("<>")
    assert url.startswith(f"{listinfo}unsubscribe/")
    assert tokens.verify(SECRET, url.rsplit("/", 1)[1])[1] == "bob@example.org"
    # The body and every other field are the shared copy's.
    assert own.split(b"\r\n\r\n", 1)[1] == shared.split(b"\r\n\r\n", 1)[1]
    # Without a secret, the shared copy goes as it is.
    assert member_copy(shared, info, "bob@example.org", "") == shared
