"""The site of the hostile-tenant test (tests/integration/test_hostile_tenant.py): two
domains with different owners on one ``mtaplugin serve`` behind a private Postfix whose
``virtual_alias_domains`` holds a domain of its own, each with a list, a member, a held
post, a subscription request and an archived post; the owners' REST and web clients; and
what each tenant has, to compare before and after."""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.error import HTTPError
from urllib.request import Request, urlopen

import pytest
import requests
from mailmanclient import Client
from sqlalchemy import func, select

from mtaplugin.manage import lists
from mtaplugin.model import (
    ArchivedMessage,
    Ban,
    Domain,
    HeaderMatch,
    HeldMessage,
    Member,
    PendingRequest,
    Template,
)
from mtaplugin.testing import wait_for, wait_for_port
from mtaplugin.testing.dns import DnsServer
from mtaplugin.testing.lab import Lab
from tests.conftest import BACKENDS
from tests.helpers import make_post, unique
from tests.integration.conftest import lab_database, postfix_lab
from tests.integration.labs import session_on

ADMIN = ("restadmin", "restpass")
PASSWORD = "a tenant's long passphrase"
_CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


@dataclass
class Tenant:
    """One domain, its owner (a REST and web user) and what lives in it."""

    name: str
    domain: str
    #: the alias domain the site allows this tenant's owner ([domains] owner_aliases)
    alias: str
    owner: str
    member: str
    user_id: str = ""
    list_id: str = ""
    fqdn: str = ""
    member_id: str = ""
    held_id: int = 0
    token: str = ""
    digest: str = ""

    @property
    def list_name(self) -> str:
        return self.fqdn.split("@")[0]


@dataclass
class Site:
    lab: Lab
    tenants: dict[str, Tenant]
    #: a domain Postfix delivers itself (virtual_alias_domains), offered to owners too
    hosted: str
    #: one of the site's own mail domains ([domains] site_mail_domains)
    own: str
    webs: dict[str, WebUser] = field(default_factory=dict)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.lab.api_port}"

    def pair(self, direction: str) -> tuple[Tenant, Tenant]:
        attacker, victim = direction.split("->")
        return self.tenants[attacker], self.tenants[victim]

    def web(self, tenant: Tenant) -> WebUser:
        if tenant.name not in self.webs:
            self.webs[tenant.name] = WebUser(self.base, tenant.owner)
        return self.webs[tenant.name]


def rest(
    site: Site, who: tuple[str, str], method: str, path: str, data: str | None = None
) -> tuple[int, str]:
    """One request to the real gunicorn; (status, body)."""
    req = Request(
        f"{site.base}/3.1/{path}", data=data.encode() if data is not None else None, method=method
    )
    if data is not None:
        req.add_header("Content-Type", "application/x-www-form-urlencoded")
    token = base64.b64encode(":".join(who).encode()).decode()
    req.add_header("Authorization", f"Basic {token}")
    try:
        with urlopen(req, timeout=60) as resp:
            return resp.status, resp.read().decode()
    except HTTPError as err:
        return err.code, err.read().decode()


class WebUser:
    """A browser session of one user on the site's web UI (cookies and the CSRF token)."""

    def __init__(self, base: str, email: str) -> None:
        self.base = base
        self.session = requests.Session()
        page = self.session.get(f"{base}/login", timeout=60)
        done = self.session.post(
            f"{base}/login",
            data={"email": email, "password": PASSWORD, "next": "/", "csrf_token": _csrf(page)},
            timeout=60,
        )
        assert done.status_code == 200 and "mtaplugin_session" in self.session.cookies, done.text

    def get(self, path: str) -> requests.Response:
        return self.session.get(f"{self.base}{path}", timeout=60, allow_redirects=False)

    def post(self, path: str, data: dict[str, str]) -> requests.Response:
        token = _csrf(self.session.get(f"{self.base}/my", timeout=60))
        return self.session.post(
            f"{self.base}{path}",
            data={**data, "csrf_token": token},
            timeout=60,
            allow_redirects=False,
        )


def _csrf(page: requests.Response) -> str:
    found = _CSRF.search(page.text)
    assert found is not None, page.text[:300]
    return found.group(1)


# --- the site -----------------------------------------------------------------------------------
@pytest.fixture(scope="module", params=BACKENDS)
def site(
    request: pytest.FixtureRequest,
    lab_root: Path,
    lab_dns: DnsServer,
) -> Iterator[Site]:
    tag = unique("hostile")
    tenants = {
        name: Tenant(
            name=name,
            domain=f"{name}-{tag}.test",
            alias=f"lists.{name}-{tag}.test",
            owner=f"{name}@owners-{tag}.test",
            member=f"member@people-{name}-{tag}.test",
        )
        for name in ("alice", "bob")
    }
    hosted, own = f"hosted-{tag}.test", f"mx-{tag}.test"
    url = lab_database(request, lab_root, request.param)
    lab = postfix_lab(
        lab_root / f"{tag}-{request.param}",
        url,
        lab_dns,
        env={
            # every alias a tenant will try is "allowed" to owners, so that what refuses
            # the dangerous ones is the check that must (the tenants, Postfix, the site)
            "MTAPLUGIN_DOMAINS_OWNER_ALIASES": ", ".join(
                [*(n for t in tenants.values() for n in (t.alias, t.domain)), hosted, own, "co.uk"]
            ),
            "MTAPLUGIN_DOMAINS_SITE_MAIL_DOMAINS": own,
        },
    )
    # Postfix delivers a domain of its own; mtaplugin asks it (postconf/postmap)
    lab.postfix.extra_main = {"virtual_alias_domains": hosted}
    lab.env["MAIL_CONFIG"] = str(lab.postfix.conf)
    with lab:
        wait_for_port(lab.api_port, timeout=60)
        built = Site(lab, tenants, hosted, own)
        _furnish(built)
        yield built


def _furnish(site: Site) -> None:
    """As the site admin: each tenant's domain and owner, a list with a member, a held post,
    a subscription request and an archived post; then each owner sets their allowed alias."""
    admin = Client(f"{site.base}/3.1", *ADMIN)
    for t in site.tenants.values():
        domain = admin.create_domain(t.domain)
        user = admin.create_user(t.owner, PASSWORD, t.name.title())
        t.user_id = str(user.user_id)
        admin.get_address(t.owner).verify()
        domain.add_owner(t.owner)
        mlist = domain.create_list(f"team-{t.name}")
        t.list_id, t.fqdn = mlist.list_id, mlist.fqdn_listname
        mlist.settings["archive_policy"] = "private"
        mlist.settings.save()
        member = mlist.subscribe(t.member, pre_verified=True, pre_confirmed=True, pre_approved=True)
        t.member_id = str(member.member_id)
        pending = mlist.subscribe(f"joiner@people-{t.name}.test", pre_verified=True)
        t.token = str(pending["token"])
        # a stranger's post is held; a member's post is archived
        held = unique("held")
        stranger = f"stranger@{t.name}.example"
        assert site.lab.send(stranger, [t.fqdn], make_post(stranger, t.fqdn, held)) is None
        archived = unique("archived")
        assert site.lab.send(t.member, [t.fqdn], make_post(t.member, t.fqdn, archived)) is None
        with session_on(site.lab) as s:
            mlist_pk = lists.get(s, t.fqdn).id

            def found(mlist_pk: int = mlist_pk, held: str = held) -> bool:
                return (
                    s.scalar(
                        select(HeldMessage.id).where(
                            HeldMessage.mailing_list_id == mlist_pk, HeldMessage.subject == held
                        )
                    )
                    is not None
                )

            wait_for(found, timeout=60)
            t.held_id = s.scalar(select(HeldMessage.id).where(HeldMessage.subject == held)) or 0
            archive = select(ArchivedMessage.message_id_hash).where(
                ArchivedMessage.mailing_list_id == mlist_pk
            )
            wait_for(lambda archive=archive: s.scalar(archive) is not None, timeout=60)
            t.digest = s.scalar(archive) or ""
        # the owner's own alias, the one the site allows them
        status, body = rest(
            site, (t.owner, PASSWORD), "PATCH", f"domains/{t.domain}", f"alias_domain={t.alias}"
        )
        assert status == 204, body


def snapshot(site: Site, t: Tenant) -> dict[str, object]:
    """What the tenant has: nothing the other tenant does may change it."""
    with session_on(site.lab) as s:
        mlist = lists.get(s, t.fqdn)
        domain = s.scalar(select(Domain).where(Domain.mail_host == t.domain))
        assert domain is not None

        def count(model: type, *where: object) -> int:
            return int(s.scalar(select(func.count()).select_from(model).where(*where)) or 0)

        return {
            "domain": (domain.description, domain.alias_domain, domain.base_url),
            "domain_owners": sorted(u.user_id for u in domain.owners),
            "lists": sorted(m.fqdn_listname for m, _n in lists.all_lists(s, t.domain)),
            "settings": (mlist.display_name, mlist.description, mlist.subject_prefix),
            "members": sorted(
                (a_id, role.value, str(status))
                for a_id, role, status in s.execute(
                    select(Member.address_id, Member.role, Member.delivery_status).where(
                        Member.mailing_list_id == mlist.id
                    )
                )
            ),
            "held": count(HeldMessage, HeldMessage.mailing_list_id == mlist.id),
            "requests": count(PendingRequest, PendingRequest.mailing_list_id == mlist.id),
            "bans": count(Ban, Ban.mailing_list_id == mlist.id),
            "header_matches": count(HeaderMatch, HeaderMatch.mailing_list_id == mlist.id),
            "templates": count(Template, Template.mailing_list_id == mlist.id),
            "archived": count(ArchivedMessage, ArchivedMessage.mailing_list_id == mlist.id),
        }
