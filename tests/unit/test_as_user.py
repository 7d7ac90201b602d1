"""A membership "as the user" (Mailman's ``subscription_mode: as_user``) follows the
user's preferred address: after the person changes it, the next post goes to the new
address, and the old one gets nothing.  Through the real engine."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin.engine import ListEngine
from mtaplugin.enums import SubscriptionMode
from mtaplugin.manage import account_profile, lists, members, users
from mtaplugin.model import Member, User
from mtaplugin.model.base import utcnow
from mtaplugin.vocabulary.envelope import Envelope
from tests.helpers import make_post, unique
from tests.unit.sites import Site


def second_address(s: Session, user: User, email: str) -> None:
    users.add_address(s, user, email).verified_on = utcnow()


def subscribe_as_user(site: Site) -> tuple[str, str]:
    """A user with two verified addresses, subscribed as the user with the first."""
    old, new = f"{unique('carol')}@example.org", f"{unique('carol')}@example.org"
    with site.sessions.begin() as s:
        user = users.add_user(s, old, "carol-password-1")
        second_address(s, user, new)
        member = members.add(s, lists.get(s, site.address), old)
        member.user_id = user.id
        member.subscription_mode = SubscriptionMode.as_user
    return old, new


def post(site: Site, engine: ListEngine, subject: str) -> None:
    raw = make_post("anne@example.com", site.address, subject=subject)
    engine.decide(Envelope(mail_from="anne@example.com", recipients=[site.address]), raw, False)


def got(site: Site, rcpt: str, subject: str) -> bool:
    return any(m["Subject"] and subject in m["Subject"] for m in site.mails_to(rcpt))


def test_the_copy_goes_to_the_new_preferred_address(site: Site, engine: ListEngine):
    OLD, NEW = subscribe_as_user(site)
    before = unique("before")
    post(site, engine, before)
    assert got(site, OLD, before) and not got(site, NEW, before)

    with site.sessions.begin() as s:
        account_profile.set_preferred(s, users.user_by_email(s, OLD), NEW)
    after = unique("after")
    post(site, engine, after)
    assert got(site, NEW, after) and not got(site, OLD, after)
    assert site.is_member(NEW) and not site.is_member(OLD)


def test_an_as_address_membership_stays_with_its_address(site: Site, engine: ListEngine):
    old, new = f"{unique('dave')}@example.org", f"{unique('dave')}@example.org"
    with site.sessions.begin() as s:
        members.add(s, lists.get(s, site.address), old)
        user = users.add_user(s, old, "dave-password-1")
        second_address(s, user, new)
        users.set_preferred(s, user, new)
    subject = unique("dave")
    post(site, engine, subject)
    assert got(site, old, subject) and not got(site, new, subject)


def test_a_list_where_the_new_address_is_a_member_keeps_one_membership(site: Site):
    OLD, NEW = subscribe_as_user(site)
    with site.sessions.begin() as s:
        members.add(s, lists.get(s, site.address), NEW)
        users.set_preferred(s, users.user_by_email(s, OLD), NEW)
    with site.sessions() as s:
        pk = lists.get(s, site.address).id
        rows = s.scalars(select(Member).where(Member.mailing_list_id == pk)).all()
        emails = {m.address.email for m in rows} & {OLD, NEW}
    assert emails == {NEW, OLD}  # nothing lost, no duplicate row
