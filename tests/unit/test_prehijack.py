"""Pre-claimed addresses (finding M3 of the security review), replayed through the REST
app and the web app on one database (SQLite and PostgreSQL).

The review's ``t_prehijack``: an attacker with REST credentials adds the address of a
future list owner to their own user; the real owner then adds that address as an owner
on the web members page; the attacker administered the list over REST, and when the real
person signed up, the address (verified) joined the attacker's account.  Now an
unverified address is a claim (mtaplugin.manage.claims): it grants no role, no "my lists",
no password reset, and whoever shows the address is theirs takes it from the claimer."""

from __future__ import annotations

import base64
from pathlib import Path
from urllib.parse import quote

import falcon
import pytest
from falcon.testing import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin import config
from mtaplugin.api.app import create_app
from mtaplugin.enums import MemberRole
from mtaplugin.manage import lists, members, users
from mtaplugin.model import Address, Member, User
from tests.helpers import unique
from tests.unit.test_accounts import link_in, mails_to, new_account, sign_up
from tests.unit.webclient import PASSWORD, SECRET, Site

ATTACKER_PASSWORD = "attacker's own password"


pytestmark = pytest.mark.usefixtures("cheap_argon2")


class Rest:
    """The REST app, as one user (HTTP Basic)."""

    def __init__(self, app: falcon.App[falcon.Request, falcon.Response], who: str) -> None:
        self.client = TestClient(app)
        token = base64.b64encode(f"{who}:{ATTACKER_PASSWORD}".encode()).decode()
        self.headers = {"Authorization": f"Basic {token}"}

    def call(self, method: str, path: str, body: str | None = None) -> falcon.testing.Result:
        headers = dict(self.headers)
        if body is not None:
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        return self.client.simulate_request(method, f"/3.1/{path}", body=body, headers=headers)


@pytest.fixture
def site(web_site: Site) -> Site:
    return web_site


@pytest.fixture
def attacker(site: Site, module_sessions: sessionmaker[Session], tmp_path: Path) -> Rest:
    """A user with REST credentials (their own, verified address) and no role anywhere."""
    email = f"{unique('mallory')}@evil.example"
    with site.sessions.begin() as s:
        users.add_user(s, email, ATTACKER_PASSWORD)
    settings = config.load(
        environ={"MTAPLUGIN_SITE_SECRET_KEY": SECRET, "MTAPLUGIN_SITE_VAR_DIR": str(tmp_path)}
    )
    return Rest(create_app(settings, module_sessions), email)


def user_id_of(site: Site, rest: Rest) -> str:
    who = base64.b64decode(rest.headers["Authorization"].split()[1]).decode().split(":")[0]
    with site.sessions() as s:
        user = users.user_by_email(s, who, verified=True)
        assert user is not None
        return user.user_id


def test_the_reviews_prehijack_fails_at_every_step(site: Site, attacker: Rest):
    victim = f"{unique('newowner')}@corp.example"
    me = user_id_of(site, attacker)
    # (1) the attacker claims the address (a new one: allowed, unverified) and sets its
    #     delivery off, in advance
    claimed = attacker.call("POST", f"users/{me}/addresses", f"email={quote(victim)}")
    assert claimed.status_code == 201
    prefs = attacker.call("PATCH", f"addresses/{victim}/preferences", "delivery_status=by_user")
    assert prefs.status_code == 204
    with site.sessions() as s:
        address = users.find_address(s, victim)
        assert address is not None and address.verified_on is None
    # (2) the real owner adds the address as an owner of the list (web members page)
    owner = site.client()
    owner.login(f"owner@{site.host}")
    added = owner.post(
        f"/lists/{site.list_id}/members", {"op": "add", "role": "owner", "email": victim}
    )
    assert added.status_code == 200, added.text
    # (3) the attacker does not administer the list over REST
    assert attacker.call("GET", f"lists/{site.list_id}/config").status_code == 403
    patched = attacker.call("PATCH", f"lists/{site.list_id}/config", "display_name=Pwned")
    assert patched.status_code == 403
    listed = attacker.call("GET", f"users/{me}/addresses").json
    assert victim not in [e["email"] for e in listed.get("entries", [])]
    with site.sessions() as s:
        address = users.find_address(s, victim)
        assert address is not None and address.user_id is None
        assert address.delivery_status is None  # the claimer's choice went with the claim
        assert lists.get(s, site.address).display_name != "Pwned"
    # (4) the real person signs up: an account of their own, verified, with the role
    person = site.client()
    sign_up(person, victim)
    done = person.post(link_in(mails_to(site, victim)[-1]), {"password": PASSWORD})
    assert "Your account is ready" in done.text
    with site.sessions() as s:
        theirs = users.user_by_email(s, victim, verified=True)
        assert theirs is not None and theirs.user_id != me
    assert person.login(victim).status_code == 303
    assert person.get(f"/lists/{site.list_id}/settings").status_code == 200
    # the attacker's account has nothing of it
    assert attacker.call("GET", f"lists/{site.list_id}").status_code == 403
    listed = attacker.call("GET", f"users/{me}/addresses").json
    assert victim not in [e["email"] for e in listed.get("entries", [])]


def test_an_unverified_address_grants_no_role_no_lists_no_reset(site: Site, attacker: Rest):
    """Whatever put a role on an unverified address of an account (an import, an older
    version): REST and the web grant nothing through it, and a reset is not mailed to it."""
    claimed = f"{unique('claimed')}@corp.example"
    me = user_id_of(site, attacker)
    assert (
        attacker.call("POST", f"users/{me}/addresses", f"email={quote(claimed)}").status_code == 201
    )
    with site.sessions.begin() as s:
        address = users.find_address(s, claimed)
        assert address is not None
        mlist = lists.get(s, site.address)
        s.add(Member(mailing_list_id=mlist.id, role=MemberRole.owner, address_id=address.id))
        s.add(Member(mailing_list_id=mlist.id, role=MemberRole.member, address_id=address.id))
    assert attacker.call("GET", f"lists/{site.list_id}/config").status_code == 403
    # a log-in names a verified address (or the user_id)
    as_claimed = Rest(attacker.client.app, claimed)
    assert as_claimed.call("GET", "system/versions").status_code == 401
    web = site.client()
    who = base64.b64decode(attacker.headers["Authorization"].split()[1]).decode().split(":")[0]
    assert web.login(who, ATTACKER_PASSWORD).status_code == 303
    assert site.address not in web.get("/my").text
    assert web.get(f"/lists/{site.list_id}/settings").status_code in (403, 404)
    before = len(mails_to(site, claimed))
    site.client().post("/reset", {"email": claimed})
    assert len(mails_to(site, claimed)) == before


def test_a_claim_gives_way_to_a_confirmed_subscription_and_to_the_account_page(
    site: Site, attacker: Rest
):
    """A subscription confirmed by mail, or the person adding the address to their own
    account (the mailed link), takes the address off the account that claims it."""
    me = user_id_of(site, attacker)
    first, second = (f"{unique(n)}@corp.example" for n in ("sub", "acct"))
    for email in (first, second):
        answer = attacker.call("POST", f"users/{me}/addresses", f"email={quote(email)}")
        assert answer.status_code == 201
    with site.sessions.begin() as s:
        from mtaplugin.manage import subscriptions

        subscriptions.request_subscription(
            s, lists.get(s, site.address), first, pre_verified=True, pre_confirmed=True
        )
    person = new_account(site, f"own.{second}")
    person.post("/account", {"action": "add", "email": second})
    person.post(link_in(mails_to(site, second)[-1]), {})
    with site.sessions() as s:
        sub = users.find_address(s, first)
        assert sub is not None and sub.verified_on is not None
        assert sub.user is not None and sub.user.user_id != me and not sub.user.password
        assert members.is_member(s, lists.get(s, site.address), first)
        acct = users.find_address(s, second)
        owner = users.user_by_email(s, f"own.{second}", verified=True)
        assert acct is not None and owner is not None and acct.user_id == owner.id
        assert acct.verified_on is not None
        mine = s.scalars(select(Address.email).join(User).where(User.user_id == me)).all()
        assert first not in mine and second not in mine
