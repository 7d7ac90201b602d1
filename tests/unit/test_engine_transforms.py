"""The engine and the transforms: the in-place edits, content filtering at end of DATA
(reject, discard, forward, preserve), the %d post number, personalized outbox copies,
and released holds through the same sequence."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.engine import ListEngine
from mtaplugin.enums import Action, FilterAction, MemberRole
from mtaplugin.manage import domains, held, lists
from mtaplugin.model import FilteredPost, HeldMessage, OutboxMessage
from mtaplugin.posting.verdict import Accept, Discard, Dropped, Reject
from mtaplugin.vocabulary.draft import apply_ops, parse_fields
from mtaplugin.vocabulary.envelope import Envelope
from tests.helpers import list_template, make_post
from tests.unit.sites import Roster, make_site

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
SECRET = "k" * 40


#: anne and bob, and olive who owns the list
ROSTER = Roster(
    (
        ("anne@example.com", MemberRole.member),
        ("bob@example.com", MemberRole.member),
        ("olive@example.com", MemberRole.owner),
    )
)

#: a list that filters the HTML parts out of its posts
NO_HTML: dict[str, Any] = {"filter_content": True, "filter_types": ["text/html"]}


def new_list(sessions: sessionmaker[Session], base_url: str = "", **settings: object) -> str:
    site = make_site(sessions, ROSTER, base_url=base_url)
    site.update(**settings)
    return site.address


def envelope(address: str, sender: str = "anne@example.com") -> Envelope:
    return Envelope(mail_from=sender, recipients=[f"<{address}>"], queue_id="Q1")


def corpus_post(name: str, address: str) -> bytes:
    return (CORPUS / name).read_bytes().replace(b"team@lists.example.org", address.encode())


def outbox(
    sessions: sessionmaker[Session], address: str, kinds: tuple[str, ...] = ("post", "release")
) -> list[OutboxMessage]:
    with sessions() as s:
        mlist = lists.get(s, address)
        return list(
            s.scalars(
                select(OutboxMessage).where(
                    OutboxMessage.mailing_list_id == mlist.id, OutboxMessage.kind.in_(kinds)
                )
            )
        )


def test_in_place_edits_make_the_members_copy(module_sessions) -> None:
    address = new_list(module_sessions)
    raw = make_post("anne@example.com", address, subject="Re: plans", headers={"Approved": "pw"})
    verdict = ListEngine(module_sessions).decide(envelope(address), raw)
    assert isinstance(verdict, Accept)
    edits = verdict.edits
    end = raw.index(b"\n\n") + 2
    fields = dict(apply_ops(parse_fields(raw[:end]), edits.header_ops))
    assert fields["Subject"] == "[Team] Re: plans"
    assert "Approved" not in fields
    assert fields["List-Id"] == f'"Team" <team.{address.split("@")[1]}>'
    assert edits.body is not None and b"Team mailing list -- " in edits.body
    assert edits.body.startswith(b"Hello, list.")


def test_a_list_without_decoration_sends_no_body(module_sessions) -> None:

    address = new_list(module_sessions)
    with module_sessions.begin() as s:
        mlist = lists.get(s, address)
        s.add(list_template(mlist, "list:member:regular:footer", text=""))
    verdict = ListEngine(module_sessions).decide(
        envelope(address), make_post("anne@example.com", address)
    )
    assert isinstance(verdict, Accept)
    assert verdict.edits.body is None
    assert verdict.edits.header_ops  # the list's headers still go on


def test_the_post_number_in_the_prefix_counts_now(module_sessions) -> None:
    address = new_list(module_sessions, subject_prefix="[Team %d] ")
    engine = ListEngine(module_sessions)
    subjects = []
    for _ in range(2):
        verdict = engine.decide(envelope(address), make_post("anne@example.com", address))
        assert isinstance(verdict, Accept)
        subjects += [op.value for op in verdict.edits.header_ops if op.name == "Subject"]
    assert subjects == ["[Team 1] hello", "[Team 2] hello"]


def test_a_content_filter_reject_is_a_5xx_naming_the_rule(module_sessions) -> None:
    address = new_list(module_sessions, **NO_HTML, filter_action=FilterAction.reject)
    verdict = ListEngine(module_sessions).decide(
        envelope(address, "carol@example.com"), corpus_post("html-only.eml", address)
    )
    # carol is a nonmember: held before content filtering; a member's post is refused.
    assert isinstance(verdict, Discard)
    verdict = ListEngine(module_sessions).decide(
        envelope(address),
        corpus_post("html-only.eml", address).replace(b"carol@example.com", b"anne@example.com"),
    )
    assert isinstance(verdict, Reject)
    assert verdict.reply.code == 550 and "content-filter" in verdict.reply.text
    assert [r.rule for r in verdict.outcomes[0].reasons] == ["content-filter"]


@pytest.mark.parametrize(
    "action", [FilterAction.discard, FilterAction.forward, FilterAction.preserve]
)
def test_content_filter_discard_forward_preserve(module_sessions, action: FilterAction) -> None:
    address = new_list(
        module_sessions, **NO_HTML, filter_action=action, default_nonmember_action=Action.accept
    )
    verdict = ListEngine(module_sessions).decide(
        envelope(address), corpus_post("html-only.eml", address)
    )
    assert isinstance(verdict, Discard)
    assert isinstance(verdict.outcomes[0], Dropped)
    rows = outbox(module_sessions, address, ("notice",))
    with module_sessions() as s:
        mlist = lists.get(s, address)
        kept = list(s.scalars(select(FilteredPost).where(FilteredPost.mailing_list_id == mlist.id)))
    if action is FilterAction.forward:
        (row,) = rows
        assert row.recipients == ["olive@example.com"]
        assert b"Subject: Content filtered post to " in row.raw
    else:
        assert rows == []
    if action is FilterAction.preserve:
        (post,) = kept
        assert post.message_id == "<html@example.com>"
        assert "text/html" in post.reason
    else:
        assert kept == []


def test_one_click_lists_go_through_the_outbox_personalized(module_sessions) -> None:
    address = new_list(module_sessions, base_url="https://lists.example.org")
    raw = make_post("anne@example.com", address)
    plain = ListEngine(module_sessions).decide(envelope(address), raw)
    assert isinstance(plain, Accept)  # no secret: in place, the shared copy
    engine = ListEngine(module_sessions, secret_key=SECRET)
    verdict = engine.decide(envelope(address), raw)
    assert isinstance(verdict, Discard)  # answered 250; the copies are in the outbox
    (row,) = outbox(module_sessions, address)
    assert sorted(row.recipients) == ["anne@example.com", "bob@example.com"]
    host = address.split("@")[1]
    assert row.personalize == {
        "list_id": f"team.{host}",
        "listinfo_url": f"https://lists.example.org/lists/team.{host}/",
        "leave_address": f"team-leave@{host}",
        "post_number": 1,
        "should_mitigate": False,
    }
    # The archive copy: list headers, no footer yet (the worker adds each member's).
    assert b"List-Unsubscribe: <https://lists.example.org/lists/" in row.raw
    assert b"mailing list -- " not in row.raw


def test_personalized_lists_go_through_the_outbox_without_a_secret(module_sessions) -> None:
    from mtaplugin.enums import Personalization

    address = new_list(module_sessions, personalize=Personalization.individual)
    verdict = ListEngine(module_sessions).decide(
        envelope(address), make_post("anne@example.com", address)
    )
    assert isinstance(verdict, Discard)
    (row,) = outbox(module_sessions, address)
    assert row.personalize is not None and row.personalize["listinfo_url"] == ""


def test_a_released_hold_gets_the_members_copy(module_sessions) -> None:
    address = new_list(module_sessions, base_url="https://lists.example.org")
    verdict = ListEngine(module_sessions).decide(
        envelope(address, "stranger@example.net"),
        make_post("stranger@example.net", address, subject="Re: held"),
    )
    assert isinstance(verdict, Discard)
    (held_id,) = verdict.stored.held.values()
    with module_sessions.begin() as s:
        held.approve(held.Moderator(s, lists.get(s, address), "olive@example.com"), held_id)
    (row,) = outbox(module_sessions, address)
    assert b"Subject: [Team] Re: held" in row.raw
    assert b"List-Id: " in row.raw
    assert row.personalize is not None  # the worker makes each member's copy


def test_a_released_hold_that_content_filtering_empties_is_not_sent(module_sessions) -> None:
    address = new_list(module_sessions, **NO_HTML, filter_action=FilterAction.preserve)
    with module_sessions.begin() as s:
        mlist = lists.get(s, address)
        h = HeldMessage(
            mailing_list_id=mlist.id,
            sender="carol@example.com",
            raw=corpus_post("html-only.eml", address),
        )
        s.add(h)
        s.flush()
        result = held.approve(held.Moderator(s, mlist, "olive@example.com"), h.id)
        assert result.outbox_id is None
        assert s.scalars(select(FilteredPost).where(FilteredPost.mailing_list_id == mlist.id)).one()
    assert outbox(module_sessions, address) == []


def test_a_new_footer_template_reaches_the_next_post(module_sessions) -> None:
    from mtaplugin.enums import TemplateScope
    from mtaplugin.model import Template

    address = new_list(module_sessions)
    engine = ListEngine(module_sessions)

    def body() -> bytes:
        verdict = engine.decide(envelope(address), make_post("anne@example.com", address))
        assert isinstance(verdict, Accept) and verdict.edits.body is not None
        return verdict.edits.body

    assert b"Team mailing list -- " in body()
    with module_sessions.begin() as s:
        domain = domains.get(s, address.split("@")[1])
        s.add(
            Template(
                scope=TemplateScope.domain,
                domain_id=domain.id,
                name="list:member:regular:footer",
                text="Domain footer for $listname",
            )
        )
    assert body().endswith(f"Domain footer for {address}\r\n".encode())
    with module_sessions.begin() as s:
        mlist = lists.get(s, address)
        s.add(list_template(mlist, "list:member:regular:footer", text="List footer"))
    assert body().endswith(b"List footer\r\n")


def test_an_anonymous_lists_copy_goes_through_the_outbox(module_sessions) -> None:
    address = new_list(module_sessions, anonymous_list=True, description="Whistle")
    raw = make_post("anne@example.com", address, headers={"X-Originating-IP": "[192.0.2.9]"})
    verdict = ListEngine(module_sessions).decide(envelope(address), raw)
    # Not in place: Postfix's own Received: field would name the poster's client.
    assert isinstance(verdict, Discard)
    (row,) = outbox(module_sessions, address)
    head = row.raw.split(b"\r\n\r\n")[0]
    assert b"anne" not in head and b"192.0.2.9" not in head
    assert f"From: Whistle <{address}>".encode() in head
