"""mtaplugin.vocabulary.addresses: recipients read as list addresses, typed input checked."""

from __future__ import annotations

import pytest

from mtaplugin.errors import InvalidInput
from mtaplugin.vocabulary.addresses import (
    ListAddress,
    Subaddress,
    candidates,
    check_domain,
    check_list_name,
    normalize_email,
    parse_member_line,
    split,
    split_fqdn_listname,
    strip_brackets,
)


def test_strip_brackets_and_split():
    assert strip_brackets(" <Team@Lists.Example> ") == "Team@Lists.Example"
    assert strip_brackets("team@x.test") == "team@x.test"
    # The local part keeps its case; the domain is lower-cased, a trailing dot dropped.
    assert split("<Team@Lists.Example.>") == ("Team", "lists.example")
    assert split("no-at-sign") == ("no-at-sign", "")


def test_posting_address():
    assert candidates("team@lists.example") == [
        ListAddress("team", "lists.example", Subaddress.posting, "")
    ]


def test_posting_address_with_brackets_and_case():
    assert candidates("<Team@Lists.EXAMPLE>") == [
        ListAddress("team", "lists.example", Subaddress.posting, "")
    ]


def test_owner_address_is_read_both_ways_posting_first():
    assert candidates("team-owner@lists.example") == [
        ListAddress("team-owner", "lists.example", Subaddress.posting, ""),
        ListAddress("team", "lists.example", Subaddress.owner, ""),
    ]


def test_request_address():
    found = candidates("<team-request@lists.example>")
    assert found[0] == ListAddress("team-request", "lists.example", Subaddress.posting, "")
    assert found[1] == ListAddress("team", "lists.example", Subaddress.request, "")
    assert len(found) == 2


def test_bounces_with_verp_extension_has_no_posting_reading():
    assert candidates("team-bounces+anne=example.com@lists.example") == [
        ListAddress("team", "lists.example", Subaddress.bounces, "anne=example.com")
    ]


def test_confirm_token_extension():
    assert candidates("team-confirm+ABC123@lists.example") == [
        ListAddress("team", "lists.example", Subaddress.confirm, "abc123")
    ]


def test_hyphenated_list_name_keeps_its_hyphens():
    assert candidates("dev-team-bounces@x.test")[-1] == ListAddress(
        "dev-team", "x.test", Subaddress.bounces, ""
    )
    assert candidates("dev-team@x.test") == [
        ListAddress("dev-team", "x.test", Subaddress.posting, "")
    ]


@pytest.mark.parametrize("sub", [s.value for s in Subaddress.suffixes()])
def test_every_subaddress_is_recognised(sub: str):
    assert ListAddress("team", "x.test", Subaddress(sub), "") in candidates(f"team-{sub}@x.test")


def test_unknown_suffix_is_only_a_posting_address():
    assert candidates("team-admin@x.test") == [
        ListAddress("team-admin", "x.test", Subaddress.posting, "")
    ]


@pytest.mark.parametrize("address", ["", "<>", "nodomain", "@x.test", "team@"])
def test_no_readings_for_non_addresses(address: str):
    assert candidates(address) == []


# --- normalize_email ----------------------------------------------------------------------
def test_normalize_lower_cases_and_strips():
    assert normalize_email("  Anne.Person@Example.COM ") == "anne.person@example.com"
    assert normalize_email("Anne <anne+tag@example.com>") == "anne+tag@example.com"


@pytest.mark.parametrize(
    "value",
    [
        "",
        "anne",
        "anne@",
        "@example.com",
        "anne@@example.com",
        "an ne@example.com",
        ".anne@example.com",
        "an..ne@example.com",
        "anne@-example.com",
        "anne@exa_mple.com",
        "anne@example..com",
        # Two addresses, or an address with junk glued on, must not pass as one.
        "anne@example.com, bob@example.com",
        "<anne@example.com> <bob@example.com>",
        "anne@example.com garbage",
    ],
)
def test_normalize_errors_name_the_field(value: str):
    with pytest.raises(InvalidInput) as info:
        normalize_email(value, field="subscriber")
    assert info.value.field == "subscriber"
    assert str(info.value).startswith("subscriber: ")
    # The message quotes what was typed (a bad domain is quoted on its own).
    assert repr(value) in str(info.value) or repr(value.rsplit("@", 1)[-1]) in str(info.value)


def test_normalize_default_field_is_email():
    with pytest.raises(InvalidInput) as info:
        normalize_email("nope")
    assert info.value.field == "email"


def test_parse_member_line_forms():
    assert parse_member_line("anne@example.com") == ("anne@example.com", "")
    assert parse_member_line("Anne Person <Anne@Example.com>") == (
        "anne@example.com",
        "Anne Person",
    )
    assert parse_member_line('"Person, Anne" <anne@example.com>') == (
        "anne@example.com",
        "Person, Anne",
    )
    assert parse_member_line("<anne@example.com>") == ("anne@example.com", "")


@pytest.mark.parametrize(
    "line", ["not an address", "anne@example.com, bob@example.com", "Person, Anne <a@example.com>"]
)
def test_parse_member_line_refuses_and_quotes_the_line(line: str):
    with pytest.raises(InvalidInput) as info:
        parse_member_line(line, field="line 7")
    assert info.value.field == "line 7"
    assert repr(line) in str(info.value)


# --- domains and list names ---------------------------------------------------------------
def test_check_domain():
    assert check_domain(" Lists.Example. ") == "lists.example"
    for bad in ["", "-x.test", "x-.test", "x..test", "x_y.test", "a" * 64 + ".test"]:
        with pytest.raises(InvalidInput) as info:
            check_domain(bad)
        assert info.value.field == "mail_host"


def test_check_list_name_accepts_and_lower_cases():
    assert check_list_name("Team") == "team"
    assert check_list_name("dev.team_2-x") == "dev.team_2-x"
    # A list may be called "owner" or "request": only the "-suffix" forms collide.
    assert check_list_name("owner") == "owner"
    assert check_list_name("a" * 64) == "a" * 64


@pytest.mark.parametrize("sub", [s.value for s in Subaddress.suffixes()])
def test_check_list_name_refuses_subaddress_suffixes(sub: str):
    with pytest.raises(InvalidInput) as info:
        check_list_name(f"team-{sub}")
    assert info.value.field == "list_name"
    assert f"-{sub}" in str(info.value)


@pytest.mark.parametrize("bad", ["", "-team", "team-", "te am", "team@x", "a" * 65, "tëam"])
def test_check_list_name_refuses_bad_names(bad: str):
    with pytest.raises(InvalidInput) as info:
        check_list_name(bad, field="name")
    assert info.value.field == "name"


def test_split_fqdn_listname():
    assert split_fqdn_listname("Team@Lists.Example") == ("team", "lists.example")
    for bad in ["team", "a@b@c.test", "team-owner@x.test", "team@-x.test"]:
        with pytest.raises(InvalidInput) as info:
            split_fqdn_listname(bad)
        assert info.value.field == "fqdn_listname"
