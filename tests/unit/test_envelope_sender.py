"""The envelope sender of every copy the engine makes or stores (the list's -bounces
address, never the poster's), and which posts go VERPed (:mod:`mtaplugin.copies.return_path`)."""

from __future__ import annotations

import pytest

from mtaplugin.config import BouncesSettings
from mtaplugin.copies.return_path import VerpPolicy
from mtaplugin.engine import ListEngine
from mtaplugin.posting.verdict import Accept, Discard
from mtaplugin.vocabulary.envelope import Envelope
from tests import helpers
from tests.helpers import make_post
from tests.unit.sites import Site


def envelope(*recipients: str, mail_from: str = "anne@example.com") -> Envelope:
    return helpers.envelope(*recipients, mail_from=mail_from)


# --- the decision ---------------------------------------------------------------------------
def test_no_verp_by_default() -> None:
    policy = VerpPolicy.from_settings(BouncesSettings())
    assert not any(policy.verped(n, own_copies=own) for n in range(1, 20) for own in (False, True))
    assert not policy.needs_exact_number


def test_interval_one_verps_every_post() -> None:
    policy = VerpPolicy(interval=1)
    assert all(policy.verped(n, own_copies=False) for n in range(1, 20))
    # every post: the number does not matter, so posts are counted in batches
    assert not policy.needs_exact_number


def test_interval_n_verps_every_nth_post_as_mailman_counts() -> None:
    # Mailman's to-outgoing reads post_id after counting the post: the post numbered 1
    # (the list's first) makes post_id 2.
    policy = VerpPolicy(interval=3)
    assert [n for n in range(1, 12) if policy.verped(n, own_copies=False)] == [2, 5, 8, 11]
    assert policy.needs_exact_number


def test_personalized_deliveries_verp_only_the_members_own_copies() -> None:
    policy = VerpPolicy.from_settings(BouncesSettings(verp_personalized_deliveries=True))
    assert policy.verped(1, own_copies=True)
    assert not policy.verped(1, own_copies=False)


def test_only_list_posts_are_verped() -> None:
    assert not VerpPolicy(personalized=True, interval=1).verped(None, own_copies=True)


# --- in place: CHGFROM ------------------------------------------------------------------------
def test_an_in_place_copy_leaves_with_the_lists_bounces_address(
    engine: ListEngine, site: Site
) -> None:
    raw = make_post("anne@example.com", site.addr("team"))
    verdict = engine.decide(envelope(site.addr("team")), raw)
    assert isinstance(verdict, Accept)
    assert verdict.edits.add_recipients  # fanned out in place ...
    assert verdict.edits.mail_from == site.addr("team-bounces")  # ... from -bounces


def test_with_other_recipients_the_envelope_sender_is_left_alone(
    engine: ListEngine, site: Site
) -> None:
    """Never in place with a non-list recipient: it gets the post from the poster, as
    sent; the list's copy goes through the outbox from the list's -bounces address."""
    raw = make_post("anne@example.com", site.addr("team"))
    verdict = engine.decide(envelope(site.addr("team"), "friend@elsewhere.test"), raw)
    assert isinstance(verdict, Accept)
    assert verdict.edits.mail_from is None
    assert verdict.edits.add_recipients == ()
    (row,) = site.outbox()
    assert row.mail_from == site.addr("team-bounces")
    assert row.post_number == 1


def test_mail_without_a_list_recipient_is_untouched(engine: ListEngine, site: Site) -> None:
    verdict = engine.decide(envelope("friend@elsewhere.test"), make_post("a@x.test", "b@y.test"))
    assert verdict == Accept()


def test_owner_mail_in_place_leaves_from_the_lists_bounces_address(
    engine: ListEngine, site: Site
) -> None:
    raw = make_post("stranger@example.net", site.addr("team-owner"))
    verdict = engine.decide(envelope(site.addr("team-owner"), mail_from="x@example.net"), raw)
    assert isinstance(verdict, Accept)
    assert verdict.edits.add_recipients == ("mod@example.com", "olive@example.com")
    assert verdict.edits.mail_from == site.addr("team-bounces")
    assert verdict.edits.header_ops == () and verdict.edits.body is None  # as it came


def test_the_moderators_notice_comes_from_the_lists_bounces_address(
    engine: ListEngine, site: Site
) -> None:
    raw = make_post("stranger@example.net", site.addr("team"), subject="hold me")
    assert isinstance(engine.decide(envelope(site.addr("team")), raw), Discard)
    (notice,) = [r for r in site.outbox() if r.kind == "notice"]
    assert "olive@example.com" in notice.recipients
    assert notice.mail_from == site.addr("team-bounces")
    assert notice.post_number is None  # a notice is never VERPed


# --- a VERPed post is never in place ----------------------------------------------------------
def test_a_verped_post_goes_through_the_outbox_numbered(site: Site) -> None:
    engine = ListEngine(site.sessions, verp=VerpPolicy(interval=2))
    post = make_post("anne@example.com", site.addr("team"))
    # post 1 (post_id becomes 2): VERPed, so the outbox sends it; the 250 delivers nothing
    first = engine.decide(envelope(site.addr("team")), post)
    assert isinstance(first, Discard)
    (row,) = site.outbox()
    assert row.kind == "post" and row.post_number == 1
    assert row.mail_from == site.addr("team-bounces")
    assert set(row.recipients) == {"anne@example.com", "bob@example.com"}
    assert b"List-Id: " in row.raw
    # post 2: not VERPed, fanned out in place; counted exactly (no batch pending)
    second = engine.decide(envelope(site.addr("team")), post)
    assert isinstance(second, Accept)
    assert second.edits.mail_from == site.addr("team-bounces")
    assert len(site.outbox()) == 1
    assert engine.counter.pending() == 0
    assert site.mlist().post_id == 3
    # post 3: VERPed again
    assert isinstance(engine.decide(envelope(site.addr("team")), post), Discard)
    assert [r.post_number for r in site.outbox()] == [1, 3]


@pytest.mark.parametrize("interval", [0, 1])
def test_owner_mail_is_never_verped(site: Site, interval: int) -> None:
    engine = ListEngine(site.sessions, verp=VerpPolicy(personalized=True, interval=interval))
    raw = make_post("stranger@example.net", site.addr("team-owner"))
    verdict = engine.decide(envelope(site.addr("team-owner")), raw)
    assert isinstance(verdict, Accept)
    assert verdict.edits.mail_from == site.addr("team-bounces")
    assert site.outbox() == []
