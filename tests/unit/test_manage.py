"""mtaplugin.manage: domains, lists and members against real SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.enums import (
    Action,
    ArchivePolicy,
    DeliveryMode,
    MemberRole,
    SubscriptionPolicy,
)
from mtaplugin.errors import AlreadyExists, InvalidInput, NotFound
from mtaplugin.manage import domains, lists, members
from mtaplugin.model import Address, Domain, MailingList, Member
from tests.helpers import unique
from tests.unit.dbutil import count, counts

ALL = (Domain, MailingList, Member, Address)


@pytest.fixture
def host(session: Session) -> str:
    return domains.create(session, f"{unique('dom')}.example", "test domain").mail_host


@pytest.fixture
def mlist(session: Session, host: str) -> MailingList:
    return lists.create(session, f"{unique('team')}@{host}")


# --- domains ------------------------------------------------------------------------------
def test_domain_create_and_get(session: Session):
    d = domains.create(session, "Lists.Example.", "Our lists", "https://lists.example/")
    assert d.id is not None
    assert d.mail_host == "lists.example"
    assert (d.description, d.base_url) == ("Our lists", "https://lists.example/")
    assert domains.get(session, "  LISTS.example ") is d
    assert session.scalar(select(Domain.mail_host)) == "lists.example"


def test_domain_duplicate_is_refused_and_changes_nothing(session: Session):
    domains.create(session, "lists.example")
    before = counts(session, *ALL)
    with pytest.raises(AlreadyExists) as info:
        domains.create(session, "LISTS.EXAMPLE", "again")
    assert info.value.field == "mail_host"
    assert "lists.example" in str(info.value)
    assert counts(session, *ALL) == before
    assert domains.get(session, "lists.example").description == ""


@pytest.mark.parametrize("bad", ["", "not a domain", "-x.example", "x..example"])
def test_domain_invalid_name_is_refused(session: Session, bad: str):
    with pytest.raises(InvalidInput) as info:
        domains.create(session, bad)
    assert info.value.field == "mail_host"
    assert count(session, Domain) == 0


def test_domain_unknown(session: Session):
    with pytest.raises(NotFound) as info:
        domains.get(session, "nowhere.example")
    assert info.value.field == "mail_host"
    with pytest.raises(NotFound):
        domains.remove(session, "nowhere.example")


def test_all_domains_counts_lists_in_name_order(session: Session):
    domains.create(session, "b.example")
    domains.create(session, "a.example")
    lists.create(session, "one@b.example")
    lists.create(session, "two@b.example")
    assert [(d.mail_host, n) for d, n in domains.all_domains(session)] == [
        ("a.example", 0),
        ("b.example", 2),
    ]


def test_domain_remove_takes_its_lists_and_members(session: Session):
    domains.create(session, "keep.example")
    kept = lists.create(session, "kept@keep.example")
    members.add(session, kept, "anne@example.com")
    domains.create(session, "gone.example")
    gone = lists.create(session, "gone@gone.example")
    members.add(session, gone, "bob@example.com")
    members.add(session, gone, "anne@example.com", MemberRole.owner)
    session.expunge_all()

    domains.remove(session, "Gone.Example")

    assert [d.mail_host for d, _n in domains.all_domains(session)] == ["keep.example"]
    assert session.scalars(select(MailingList.list_id)).all() == ["kept.keep.example"]
    assert count(session, Member) == 1
    # Addresses belong to people, not to a list: they stay.
    assert count(session, Address) == 2


# --- lists --------------------------------------------------------------------------------
def test_list_create_defaults(session: Session, host: str):
    m = lists.create(session, f"Team@{host.upper()}", description="talk")
    assert m.list_name == "team"
    assert m.mail_host == host
    assert m.list_id == f"team.{host}"
    assert m.fqdn_listname == f"team@{host}"
    assert m.display_name == "Team"
    assert m.subject_prefix == "[Team] "
    assert m.description == "talk"
    assert m.style_name == "legacy-default"
    assert m.default_member_action is Action.defer
    assert m.default_nonmember_action is Action.hold
    assert m.allow_list_posts is True
    assert m.advertised is True
    assert m.post_id == 1
    assert m.owner_address == f"team-owner@{host}"


def test_list_display_name_given(session: Session, host: str):
    m = lists.create(session, f"dev@{host}", display_name="Developers")
    assert m.display_name == "Developers"
    assert m.subject_prefix == "[Developers] "


def test_announce_style(session: Session, host: str):
    m = lists.create(session, f"news@{host}", style_name="legacy-announce")
    assert m.style_name == "legacy-announce"
    assert m.allow_list_posts is False
    assert m.default_member_action is Action.hold
    assert m.default_nonmember_action is Action.reject


def test_private_style(session: Session, host: str):
    m = lists.create(session, f"secret@{host}", style_name="private-default")
    assert m.advertised is False
    assert m.subscription_policy is SubscriptionPolicy.confirm_then_moderate
    assert m.archive_policy is ArchivePolicy.private
    # The moderation defaults stay those of a discussion list.
    assert m.default_nonmember_action is Action.hold


def test_style_settings_are_persisted(sessions: sessionmaker[Session]):
    with sessions.begin() as s:
        domains.create(s, "styles.example")
        lists.create(s, "news@styles.example", style_name="legacy-announce")
    # A new session reads the row back from the database, not from the identity map.
    with sessions() as s:
        m = lists.get(s, "news@styles.example")
        assert m.style_name == "legacy-announce"
        assert m.allow_list_posts is False
        assert m.default_member_action is Action.hold
        assert m.default_nonmember_action is Action.reject


def test_list_unknown_style_is_refused(session: Session, host: str):
    with pytest.raises(InvalidInput) as info:
        lists.create(session, f"x@{host}", style_name="fancy")
    assert info.value.field == "style_name"
    assert "legacy-announce" in str(info.value)
    assert count(session, MailingList) == 0


def test_list_in_unknown_domain_is_refused(session: Session):
    with pytest.raises(NotFound) as info:
        lists.create(session, "team@nowhere.example")
    assert info.value.field == "mail_host"
    assert count(session, MailingList) == 0


def test_list_duplicate_is_refused_and_changes_nothing(session: Session, host: str):
    lists.create(session, f"team@{host}", description="first")
    before = counts(session, *ALL)
    with pytest.raises(AlreadyExists) as info:
        lists.create(session, f"TEAM@{host}", description="second")
    assert info.value.field == "fqdn_listname"
    assert counts(session, *ALL) == before
    assert lists.get(session, f"team@{host}").description == "first"


@pytest.mark.parametrize("name", ["team-owner", "team-request", "-team", "te am", "team@x@y"])
def test_list_bad_name_is_refused(session: Session, host: str, name: str):
    fqdn = name if "@" in name else f"{name}@{host}"
    with pytest.raises(InvalidInput) as info:
        lists.create(session, fqdn)
    assert info.value.field == "fqdn_listname"
    assert count(session, MailingList) == 0


def test_list_get_by_address_or_list_id(session: Session, mlist: MailingList):
    assert lists.get(session, mlist.fqdn_listname.upper()) is mlist
    assert lists.get(session, f" {mlist.list_id} ") is mlist
    with pytest.raises(NotFound) as info:
        lists.get(session, f"nosuch@{mlist.mail_host}")
    assert info.value.field == "list"
    with pytest.raises(NotFound):
        lists.get(session, f"nosuch.{mlist.mail_host}")


def test_all_lists_counts_only_members(session: Session, host: str):
    domains.create(session, "other.example")
    b = lists.create(session, f"b@{host}")
    a = lists.create(session, f"a@{host}")
    lists.create(session, "z@other.example")
    members.add(session, a, "anne@example.com")
    members.add(session, a, "bob@example.com")
    members.add(session, a, "olive@example.com", MemberRole.owner)
    members.add(session, b, "nina@example.com", MemberRole.nonmember)
    mine = [(m.fqdn_listname, n) for m, n in lists.all_lists(session, host.upper())]
    assert mine == [(f"a@{host}", 2), (f"b@{host}", 0)]
    everything = [m.fqdn_listname for m, _n in lists.all_lists(session)]
    assert everything == sorted(everything, key=lambda a: (a.split("@")[1], a))
    assert len(everything) == 3
    with pytest.raises(NotFound):
        lists.all_lists(session, "nowhere.example")


def test_list_remove_takes_its_members(session: Session, host: str):
    gone = lists.create(session, f"gone@{host}")
    kept = lists.create(session, f"kept@{host}")
    members.add(session, gone, "anne@example.com")
    members.add(session, kept, "anne@example.com")
    session.expunge_all()
    lists.remove(session, f"gone@{host}")
    assert [m.list_name for m, _n in lists.all_lists(session, host)] == ["kept"]
    assert count(session, Member) == 1
    with pytest.raises(NotFound):
        lists.remove(session, f"gone@{host}")


# --- members ------------------------------------------------------------------------------
def test_member_add(session: Session, mlist: MailingList):
    m = members.add(session, mlist, "  Anne@Example.COM ", display_name="Anne")
    assert m.role is MemberRole.member
    assert m.mailing_list_id == mlist.id
    assert len(m.member_id) == 32
    address = session.get(Address, m.address_id)
    assert address is not None
    assert address.email == "anne@example.com"
    assert address.display_name == "Anne"
    # An administrator who adds an address vouches for it.
    assert address.verified_on is not None
    assert members.get(session, mlist, "ANNE@example.com", MemberRole.member) is m


def test_member_options(session: Session, mlist: MailingList):
    m = members.add(
        session,
        mlist,
        "anne@example.com",
        delivery_mode=DeliveryMode.mime_digests,
        moderation_action=Action.hold,
    )
    assert m.delivery_mode is DeliveryMode.mime_digests
    assert m.moderation_action is Action.hold


def test_one_address_many_roles_and_lists(session: Session, host: str):
    a = lists.create(session, f"a@{host}")
    b = lists.create(session, f"b@{host}")
    members.add(session, a, "anne@example.com")
    members.add(session, a, "anne@example.com", MemberRole.owner)
    members.add(session, b, "anne@example.com")
    assert count(session, Address) == 1
    assert count(session, Member) == 3


def test_member_duplicate_is_refused_and_changes_nothing(session: Session, mlist: MailingList):
    members.add(session, mlist, "anne@example.com")
    before = counts(session, *ALL)
    with pytest.raises(AlreadyExists) as info:
        members.add(session, mlist, "ANNE@example.com")
    assert info.value.field == "email"
    assert "anne@example.com" in str(info.value)
    assert counts(session, *ALL) == before


def test_member_bad_address_is_refused_and_changes_nothing(session: Session, mlist: MailingList):
    before = counts(session, *ALL)
    with pytest.raises(InvalidInput) as info:
        members.add(session, mlist, "anne at example.com")
    assert info.value.field == "email"
    assert counts(session, *ALL) == before


def test_member_remove(session: Session, mlist: MailingList):
    members.add(session, mlist, "anne@example.com")
    members.add(session, mlist, "anne@example.com", MemberRole.owner)
    members.remove(session, mlist, "Anne@Example.com", MemberRole.member)
    assert [(m.role, a.email) for m, a in members.roster(session, mlist)] == [
        (MemberRole.owner, "anne@example.com")
    ]
    with pytest.raises(NotFound) as info:
        members.remove(session, mlist, "anne@example.com", MemberRole.member)
    assert info.value.field == "email"
    assert count(session, Member) == 1


def test_roster_order_and_role_filter(session: Session, mlist: MailingList):
    for email in ["carol@example.com", "anne@example.com", "bob@example.com"]:
        members.add(session, mlist, email)
    members.add(session, mlist, "olive@example.com", MemberRole.owner)
    everyone = members.roster(session, mlist)
    assert len(everyone) == 4
    only = [a.email for _m, a in members.roster(session, mlist, MemberRole.member)]
    assert only == ["anne@example.com", "bob@example.com", "carol@example.com"]
    assert [a.email for _m, a in members.roster(session, mlist, MemberRole.owner)] == [
        "olive@example.com"
    ]
    assert members.roster(session, mlist, MemberRole.moderator) == []


@pytest.mark.parametrize(
    ("parse", "good", "expected", "field"),
    [
        (members.parse_role, " Owner ", MemberRole.owner, "role"),
        (members.parse_delivery_mode, "MIME_digests", DeliveryMode.mime_digests, "delivery_mode"),
        (members.parse_action, "discard", Action.discard, "moderation_action"),
    ],
)
def test_parsers(parse, good: str, expected: object, field: str):
    assert parse(good) is expected
    with pytest.raises(InvalidInput) as info:
        parse("bogus")
    assert info.value.field == field
    assert "'bogus'" in str(info.value)


# --- mass add -----------------------------------------------------------------------------
def test_validate_lines_reports_bad_lines_with_numbers():
    lines = [
        "anne@example.com",
        "",
        "# a comment",
        "Bob Person <Bob@Example.com>",
        "not an address",
        "anne@example.com",  # a repeat is kept once
        "carol@exa mple.com",
        "dave@example.com, erin@example.com",
    ]
    entries, errors = members.validate_lines(lines)
    assert entries == [("anne@example.com", ""), ("bob@example.com", "Bob Person")]
    assert len(errors) == 3
    assert errors[0].startswith("line 5: ")
    assert errors[1].startswith("line 7: ")
    assert errors[2].startswith("line 8: ")
    assert "'not an address'" in errors[0]


def test_validate_lines_all_good():
    entries, errors = members.validate_lines([" a@example.com ", "B <b@example.com>\n"])
    assert errors == []
    assert entries == [("a@example.com", ""), ("b@example.com", "B")]


def test_add_many(session: Session, mlist: MailingList):
    members.add(session, mlist, "anne@example.com")
    other = lists.create(session, f"other@{mlist.mail_host}")
    members.add(session, other, "bob@example.com")
    entries, errors = members.validate_lines(
        ["anne@example.com", "Bob <bob@example.com>", "Carol <carol@example.com>"]
    )
    assert errors == []
    result = members.add_many(session, mlist, entries)
    assert (result.added, result.already) == (2, 1)
    assert [a.email for _m, a in members.roster(session, mlist)] == [
        "anne@example.com",
        "bob@example.com",
        "carol@example.com",
    ]
    # bob's existing address is reused, not duplicated.
    assert count(session, Address) == 3
    carol = members.get(session, mlist, "carol@example.com", MemberRole.member)
    assert carol.display_name == "Carol"
    again = members.add_many(session, mlist, entries)
    assert (again.added, again.already) == (0, 3)
    assert count(session, Member) == 4


def test_add_many_in_batches_with_progress(
    session: Session, mlist: MailingList, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(members, "BATCH", 3)
    entries = [(f"user{i}@example.com", "") for i in range(8)]
    seen: list[int] = []
    result = members.add_many(
        session,
        mlist,
        entries,
        role=MemberRole.nonmember,
        delivery_mode=DeliveryMode.plaintext_digests,
        progress=seen.append,
    )
    assert result.added == 8
    assert seen == [3, 3, 2]
    roster = members.roster(session, mlist, MemberRole.nonmember)
    assert len(roster) == 8
    assert {m.delivery_mode for m, _a in roster} == {DeliveryMode.plaintext_digests}
    assert members.roster(session, mlist, MemberRole.member) == []
