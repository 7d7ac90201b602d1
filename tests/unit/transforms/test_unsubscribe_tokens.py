"""One-click unsubscribe tokens and the worker's per-member copies."""

from __future__ import annotations

import pytest

from mtaplugin.copies import unsubscribe as tokens
from mtaplugin.copies.transforms import members_copy, own_copy
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


def test_own_copy_has_the_members_link_and_footer() -> None:
    from dataclasses import replace

    from mtaplugin.copies.transforms import archive_copy
    from mtaplugin.vocabulary.context import Templates

    listinfo = "https://lists.example.org/lists/team.lists.example.org/"
    ctx = context(
        listinfo_url=listinfo,
        unsubscribe_secret=SECRET,
        templates=Templates(footer="Sent to $member"),
    )
    archive = archive_copy(ctx, corpus("plain-ascii.eml"))
    own = own_copy(replace(ctx, member="bob@example.org"), archive)
    msg = parse(own)
    assert msg.get_all("List-Unsubscribe") and len(msg.get_all("List-Unsubscribe")) == 1
    assert msg["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    url = msg["List-Unsubscribe"].split(",")[0].strip("<>")
    assert url.startswith(f"{listinfo}unsubscribe/")
    assert tokens.verify(SECRET, url.rsplit("/", 1)[1])[1] == "bob@example.org"
    assert msg.get_payload().endswith("Sent to bob@example.org\r\n")
    # The same without a member is the shared copy.
    assert own_copy(ctx, archive) == members_copy(ctx, corpus("plain-ascii.eml"))
    # Without a secret: the member's footer, the shared unsubscribe field.
    plain = parse(own_copy(replace(ctx, member="bob@example.org", unsubscribe_secret=""), archive))
    assert plain["List-Unsubscribe-Post"] is None
    assert plain["List-Unsubscribe"] == parse(archive)["List-Unsubscribe"]
