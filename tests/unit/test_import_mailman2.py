"""The Mailman 2.1 import: the real pickles Mailman 3.3.10 ships, read safely, mapped, and
applied on SQLite and PostgreSQL (twice: the second run changes nothing)."""

from __future__ import annotations

import pickle
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.enums import (
    Action,
    ArchivePolicy,
    DeliveryMode,
    DeliveryStatus,
    MemberRole,
    ReplyToMunging,
    SubscriptionPolicy,
)
from mtaplugin.errors import InvalidInput
from mtaplugin.importers import apply, mailman2, mm2pickle
from mtaplugin.manage import bans, header_matches, lists, members
from mtaplugin.model import Member, Template
from mtaplugin.notices.templates import render_text
from mtaplugin.testing.mailman_files import mailman_testing_file
from tests.helpers import unique


def config(name: str = "config.pck") -> dict[str, Any]:
    return mm2pickle.load(mailman_testing_file(name))


# -- reading the pickle -------------------------------------------------------------------


def test_the_pickles_mailman_ships_are_read_with_texts_decoded() -> None:
    plain = config()
    assert plain["real_name"] == "Test"
    assert plain["owner"] == ["anne@example.com"]
    assert set(plain["members"]) == {
        "dperson@example.org",
        "bperson@example.com",
        "cris.person@example.net",
    }
    assert config("config-greek.pck")["preferred_language"] == "el"
    bounces = config("config-with-instances.pck")["bounce_info"]
    assert bounces and all(isinstance(b, mm2pickle.BounceRecord) for b in bounces.values())
    assert all(b.score >= 1 for b in bounces.values())


def test_a_pickle_that_would_run_code_is_refused_and_nothing_runs(tmp_path: Path) -> None:
    target = tmp_path / "ran"

    class Touch:
        def __reduce__(self) -> tuple[Any, ...]:
            return (Path.touch, (target,))

    data = pickle.dumps({"real_name": "x", "members": {}, "data_version": 97, "x": Touch()}, 2)
    with pytest.raises(InvalidInput) as e:
        mm2pickle.loads(data, "evil.pck")
    assert e.value.field == "config"
    assert "refused" in str(e.value) and "nothing was run" in str(e.value)
    assert not target.exists()


def test_a_cut_short_or_foreign_pickle_is_refused_clearly() -> None:
    data = mailman_testing_file("config.pck").read_bytes()
    with pytest.raises(InvalidInput, match=r"cut short|not a readable pickle"):
        mm2pickle.loads(data[: len(data) // 2])
    with pytest.raises(InvalidInput, match=r"not a Mailman 2\.1 list configuration"):
        mm2pickle.loads(pickle.dumps({"hello": "world"}, 2))
    with pytest.raises(InvalidInput, match="not a readable pickle"):
        mm2pickle.loads(b"this is no pickle at all")


def test_texts_that_are_not_utf8_are_read_in_the_charset_of_the_lists_language() -> None:
    raw = {
        b"real_name": b"Test",
        b"members": {},
        b"data_version": 97,
        b"preferred_language": b"el",
        b"description": "Ελληνικά".encode("iso-8859-7"),
        b"info": "ünicode".encode(),
    }
    read = mm2pickle.loads(pickle.dumps(raw, 3))
    assert read["description"] == "Ελληνικά"
    assert read["info"] == "ünicode"


# -- the plan -----------------------------------------------------------------------------


def test_the_plan_of_mailmans_own_pickle() -> None:
    plan = mailman2.plan(config(), "test@example.com")
    s = plan.settings
    assert s["display_name"] == "Test"
    assert s["subject_prefix"] == "[Test] "
    assert s["archive_policy"] is ArchivePolicy.public
    assert s["default_nonmember_action"] is Action.hold  # generic_nonmember_action 1
    assert s["default_member_action"] is Action.defer
    assert s["subscription_policy"] is SubscriptionPolicy.confirm
    assert s["max_message_size"] == 40
    assert s["autoresponse_grace_period"] == timedelta(days=90)
    assert s["created_at"] == datetime.fromtimestamp(1270420777.274485, UTC)
    roles = {(m.email, m.role) for m in plan.members}
    assert ("anne@example.com", MemberRole.owner) in roles
    assert {m.email for m in plan.members if m.role is MemberRole.member} == {
        "dperson@example.org",
        "bperson@example.com",
        "cris.person@example.net",
    }
    bill = next(m for m in plan.members if m.email == "bperson@example.com")
    assert bill.display_name == "Bill Person"
    assert bill.delivery_mode is DeliveryMode.regular
    assert bill.receive_list_copy is False  # user_options 264: DontReceiveDuplicates
    assert any("passwords" in n for n in plan.notes)
    # 2.1's default footer is not imported: mtaplugin's own default says the same
    assert ("list:member:regular:footer", "") not in plan.templates


def test_bounce_records_become_bounce_scores() -> None:
    plan = mailman2.plan(config("config-with-instances.pck"), "sig@example.com")
    bouncing = [m for m in plan.members if m.bounce_score]
    assert bouncing and all(m.last_bounce_received is not None for m in bouncing)
    assert plan.settings["reply_goes_to_list"] is ReplyToMunging.point_to_list


def synthetic(**extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "real_name": "Dev",
        "data_version": 97,
        "members": {"ann@example.org": 0, "Bob@Example.org": "Bob@Example.org"},
        "digest_members": {"cy@example.org": 0},
        "user_options": {"ann@example.org": 128 | 4 | 16, "cy@example.org": 8},
        "delivery_status": {"ann@example.org": (4, 1422059989.0)},
        "default_member_moderation": 1,
        "member_moderation_action": 1,
        "ban_list": ["spam@example.net", "^.*@bad\\.example$", "^[unclosed"],
        "accept_these_nonmembers": ["friend@example.net", "^.*@partner\\.example$", "@other"],
        "discard_these_nonmembers": ["noise@example.net"],
        "header_filter_rules": [
            ("^x-spam-flag: yes\nsubject: .*viagra", 3, False),
            ("x-approve: yes", 1, False),
        ],
        "msg_footer": (
            "-- \n%(real_name)s at %(host_name)s: "
            "%(web_page_url)slistinfo%(cgiext)s/%(_internal_name)s\n"
            "Your password is %(user_password)s; costs $5, 100%%\n"
        ),
        "topics": [("Release News", "release|version", "About releases", False)],
        "topics_userinterest": {"ann@example.org": ["Release News"]},
        "unsubscribe_policy": 1,
    }
    base.update(extra)
    return base


def test_the_members_flags_moderation_and_delivery_carry_over() -> None:
    plan = mailman2.plan(synthetic(), "dev@example.com")
    by = {(m.email, m.role): m for m in plan.members}
    ann = by[("ann@example.org", MemberRole.member)]
    assert ann.moderation_action is Action.reject  # moderated, member_moderation_action 1
    assert ann.delivery_status is DeliveryStatus.by_bounces
    assert ann.acknowledge_posts is True and ann.hide_address is True
    assert ann.topics == ["Release_News"]
    bob = by[("bob@example.org", MemberRole.member)]
    assert bob.moderation_action is Action.defer  # not moderated on a moderated list
    cy = by[("cy@example.org", MemberRole.member)]
    assert cy.delivery_mode is DeliveryMode.plaintext_digests  # DisableMime
    assert by[("friend@example.net", MemberRole.nonmember)].moderation_action is Action.defer
    assert by[("noise@example.net", MemberRole.nonmember)].moderation_action is Action.discard
    assert plan.settings["default_member_action"] is Action.reject
    assert plan.settings["unsubscription_policy"] is SubscriptionPolicy.confirm_then_moderate
    assert plan.settings["accept_these_nonmembers"] == [
        "^.*@partner\\.example$",
        "@other@example.com",
    ]
    assert plan.settings["topics"] == [["Release_News", "release|version", "About releases"]]


def test_bans_header_filters_and_their_bad_entries() -> None:
    plan = mailman2.plan(synthetic(), "dev@example.com")
    assert plan.bans == ["spam@example.net", "^.*@bad\\.example$"]
    assert any("[unclosed" in n for n in plan.notes)
    assert plan.header_matches == [
        ("x-spam-flag", "yes", Action.discard),
        ("subject", ".*viagra", Action.discard),
    ]
    assert any("x-approve" in n and "no counterpart" in n for n in plan.notes)


def test_a_custom_footer_becomes_a_template_that_renders() -> None:
    plan = mailman2.plan(synthetic(), "dev@example.com")
    text = plan.templates[("list:member:regular:footer", "")]
    assert "%(" not in text
    out = render_text(
        text,
        "en",
        {
            "display_name": "Dev",
            "mail_host": "example.com",
            "listinfo_uri": "https://lists.example.com/dev",
        },
    )
    assert out == (
        "-- \nDev at example.com: https://lists.example.com/dev\n"
        "Your password is ; costs $5, 100%\n"
    )
    assert any("user_password" in n for n in plan.notes)


# -- applying it --------------------------------------------------------------------------


def test_import_then_import_again_changes_nothing(module_sessions: sessionmaker[Session]) -> None:
    name = f"{unique('mm2')}@{unique('dom')}.example"
    plan = mailman2.plan(config("config-with-instances.pck"), name)
    with module_sessions.begin() as s:
        first = apply.apply(s, plan)
    assert first.created_domain and first.created_list
    assert first.added[MemberRole.member] == 3 and first.added[MemberRole.owner] == 1
    assert first.added[MemberRole.nonmember] == 4  # accept_these_nonmembers, one twice
    with module_sessions.begin() as s:
        second = apply.apply(s, mailman2.plan(config("config-with-instances.pck"), name))
    assert not second.changed, second.changes
    with module_sessions() as s:
        mlist = lists.get(s, name)
        assert mlist.display_name == "eclipse-sig"
        assert mlist.description == "Eclipse Special Interest Group"
        assert mlist.max_message_size == 500
        roster = members.roster(s, mlist, MemberRole.member)
        assert len(roster) == 3
        scores = s.scalars(select(Member.bounce_score).where(Member.mailing_list_id == mlist.id))
        assert sum(scores) >= 2


def test_a_list_with_other_members_is_refused_and_left_as_it_was(
    module_sessions: sessionmaker[Session],
) -> None:
    name = f"{unique('mm2')}@{unique('dom')}.example"
    with module_sessions.begin() as s:
        apply.apply(s, mailman2.plan(config(), name))
        members.add(s, lists.get(s, name), "stranger@example.net")
    with (
        pytest.raises(InvalidInput, match="has 4 members that are not in this configuration") as e,
        module_sessions.begin() as s,
    ):
        apply.apply(s, mailman2.plan(synthetic(real_name="Other"), name))
    assert e.value.field == "list"
    with module_sessions() as s:
        assert lists.get(s, name).display_name == "Test"
    with module_sessions.begin() as s:
        merged = apply.apply(s, mailman2.plan(synthetic(real_name="Other"), name), merge=True)
        assert merged.changes
        mlist = lists.get(s, name)
        assert mlist.display_name == "Other"
        assert bans.is_banned(s, mlist, "spam@example.net")
        assert [(h.header, h.pattern) for h in header_matches.all_matches(s, mlist)] == [
            ("x-spam-flag", "yes"),
            ("subject", ".*viagra"),
        ]
        footer = s.scalar(
            select(Template.text).where(
                Template.mailing_list_id == mlist.id, Template.name == "list:member:regular:footer"
            )
        )
        assert footer is not None and "${listinfo_uri}" in footer
        assert members.is_member(s, mlist, "stranger@example.net")


def test_a_welcome_text_goes_above_the_usual_welcome_and_braces_stay_text() -> None:
    plan = mailman2.plan(
        synthetic(welcome_msg="Hi from %(real_name)s! Rules: {be nice} {{ no_var }}\n"),
        "dev@example.com",
    )
    text = plan.templates[("list:user:notice:welcome", "")]
    out = render_text(
        text,
        "en",
        {
            "display_name": "Dev",
            "listname": "dev@example.com",
            "posting_email": "dev@example.com",
            "user_email": "ann@example.org",
            "leave_email": "dev-leave@example.com",
            "request_email": "dev-request@example.com",
        },
    )
    assert out.startswith("Hi from Dev! Rules: {be nice} {{ no_var }}\n\n")
    assert "To post, write to dev@example.com." in out


@pytest.mark.parametrize("code", ["it", "pt_BR", "nl", "sv", "ca"])
def test_a_21_lists_language_survives_the_import_and_its_notices_speak_it(
    module_sessions: sessionmaker[Session], code: str
) -> None:
    from mtaplugin.notices.templates import render
    from tests.unit.test_import_mailman2_languages import imported_21

    raw = {
        b"real_name": b"Dev",
        b"members": {b"ann@example.org": 0, b"bob@example.org": 0},
        b"data_version": 97,
        b"preferred_language": code.encode(),
        b"language": {b"bob@example.org": b"en"},
        b"description": "Lista de discussão àçéñ".encode("iso-8859-1"),  # 2.1's charset
    }
    name = imported_21(module_sessions, raw)
    with module_sessions() as s:
        mlist = lists.get(s, name)
        assert mlist.preferred_language == code
        assert mlist.description == "Lista de discussão àçéñ"
        by_email = {a.email: m for m, a in members.roster(s, mlist, MemberRole.member)}
        assert by_email["bob@example.org"].preferred_language == "en"
        assert by_email["ann@example.org"].preferred_language is None  # the list's
        welcome = render("list:user:notice:welcome", code, mlist=mlist, user_email="a@b.example")
        english = render("list:user:notice:welcome", "en", mlist=mlist, user_email="a@b.example")
    assert welcome != english and "a@b.example" in welcome and name in welcome
