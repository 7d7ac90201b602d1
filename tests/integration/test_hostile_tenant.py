"""A hostile tenant (issue 30, deliverable 4): two domains with different owners on one
site, the real ``mtaplugin serve`` (gunicorn: REST and web) behind a private Postfix, on
SQLite and PostgreSQL.  Each owner tries against the other's domain what the security
review lists -- over REST, on the web and by mail -- and nothing crosses:

- mail routing: ``alias_domain`` set to the other's domain or alias, to a domain Postfix
  already handles (``virtual_alias_domains``, ``mydestination``), to one of the site's own
  mail domains or to anybody's (``gmail.com``) is refused naming ``alias_domain`` (H3); the
  site does not start to relay for it, and list mail at the owner's own alias never
  reaches the other's list;
- the other's domain, lists, members, held posts, subscription requests, bans, header
  matches, template URIs and archive: 403 over REST, 403/404 on the web, and the
  collections do not show them;
- the other's people: an existing address cannot be attached to one's own user, and a
  new one claimed in advance grants nothing once the other owner makes it an owner (M3);
- by mail: ``who`` for the other's list does not give its roster away.

After all that, the other tenant's data is as it was.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from urllib.parse import quote

import pytest

from mtaplugin.testing import wait_for
from tests.helpers import make_post, unique
from tests.integration.tenants import (
    ADMIN,
    PASSWORD,
    Site,
    Tenant,
    rest,
    snapshot,
)
from tests.integration.tenants import site as site
from tests.replies import NO_SUCH_LIST, POSTFIX_RELAY_DENIED, Reply, said

DIRECTIONS = ["alice->bob", "bob->alice"]


# --- mail routing: alias_domain (H3) ------------------------------------------------------------
@pytest.mark.parametrize("direction", DIRECTIONS)
def test_no_alias_domain_takes_anybody_elses_mail(site: Site, direction: str) -> None:
    me, them = site.pair(direction)
    before = (snapshot(site, me), snapshot(site, them))
    tries = {
        them.domain: "already a domain or an alias",
        them.alias: "already a domain or an alias",
        site.hosted: "virtual_alias_domains",
        site.own: "site's own mail domains",
        "gmail.com": "only the site administrator",
        "co.uk": "public suffix",
    }
    for value, why in tries.items():
        status, body = rest(
            site, (me.owner, PASSWORD), "PATCH", f"domains/{me.domain}", f"alias_domain={value}"
        )
        assert status == 400, (value, status, body)
        description = json.loads(body)["description"]
        assert "alias_domain" in description and why in description, (value, description)
        page = site.web(me).post(f"/domains/{me.domain}", {"op": "alias", "alias_domain": value})
        assert page.status_code == 400 and "alias_domain:" in page.text, (value, page.text[:300])
    # nor on the site admin's word: the other tenant's, Postfix's own
    for value in (them.domain, them.alias, site.hosted, site.own):
        status, body = rest(site, ADMIN, "PATCH", f"domains/{me.domain}", f"alias_domain={value}")
        assert status == 400 and "alias_domain" in body, (value, body)
    assert (snapshot(site, me), snapshot(site, them)) == before
    # the site relays none of it, and mail at my alias never reaches their list
    stranger = "someone@example.net"
    for rcpt in ("john.doe@gmail.com", f"team@{site.own}"):
        refused = site.lab.send(stranger, [rcpt], make_post(stranger, rcpt))
        assert said(refused) == ("rcpt", POSTFIX_RELAY_DENIED), (rcpt, refused)
    # (the lookup server keeps a "no" for a few seconds: wait until my alias relays)
    rcpt = f"{them.list_name}@{me.alias}"

    def answer() -> tuple[str, Reply] | None:
        return said(site.lab.send(stranger, [rcpt], make_post(stranger, rcpt)))

    wait_for(lambda: answer() != ("rcpt", POSTFIX_RELAY_DENIED), timeout=60)
    assert answer() == ("rcpt", NO_SUCH_LIST)


# --- REST ---------------------------------------------------------------------------------------
def rest_attacks(me: Tenant, them: Tenant) -> list[tuple[str, str, str | None]]:
    held = f"lists/{them.list_id}/held/{them.held_id}"
    return [
        ("GET", f"domains/{them.domain}", None),
        ("PATCH", f"domains/{them.domain}", "description=pwned"),
        ("PUT", f"domains/{them.domain}", "description=pwned"),
        ("DELETE", f"domains/{them.domain}", None),
        ("GET", f"domains/{them.domain}/owners", None),
        ("POST", f"domains/{them.domain}/owners", f"owner={quote(me.owner)}"),
        ("DELETE", f"domains/{them.domain}/owners", None),
        ("PATCH", f"domains/{them.domain}/uris", "list:user:notice:welcome=http://x.test/w"),
        ("POST", "lists", f"fqdn_listname=evil@{them.domain}"),
        ("GET", f"lists/{them.list_id}", None),
        ("DELETE", f"lists/{them.list_id}", None),
        ("GET", f"lists/{them.list_id}/config", None),
        ("PATCH", f"lists/{them.list_id}/config", "display_name=pwned"),
        ("PATCH", f"lists/{them.list_id}/config/subject_prefix", "subject_prefix=pwned"),
        ("GET", f"lists/{them.list_id}/roster/member", None),
        ("GET", f"lists/{them.list_id}/member/{them.member}", None),
        ("DELETE", f"lists/{them.list_id}/member/{them.member}", None),
        ("GET", f"members/{them.member_id}", None),
        ("PATCH", f"members/{them.member_id}", "delivery_status=by_moderator"),
        ("PATCH", f"members/{them.member_id}/preferences", "delivery_status=by_user"),
        ("DELETE", f"members/{them.member_id}", None),
        (
            "POST",
            "members",
            f"list_id={them.list_id}&subscriber={quote(me.owner)}&role=owner"
            "&pre_verified=true&pre_confirmed=true&pre_approved=true",
        ),
        ("GET", f"lists/{them.list_id}/held", None),
        ("GET", held, None),
        ("POST", held, "action=accept"),
        ("POST", held, "action=discard"),
        ("GET", f"lists/{them.list_id}/requests", None),
        ("POST", f"lists/{them.list_id}/requests/{them.token}", "action=accept"),
        ("POST", f"lists/{them.list_id}/bans", f"email={quote(them.member)}"),
        ("POST", f"lists/{them.list_id}/header-matches", "header=subject&pattern=x"),
        ("PATCH", f"lists/{them.list_id}/uris", "list:member:regular:footer=http://x.test/f"),
        ("PATCH", f"lists/{them.list_id}/archivers", "mail-archive=true"),
        ("POST", f"lists/{them.list_id}/digest", "send=true"),
        ("GET", f"users/{them.user_id}", None),
        ("PATCH", f"users/{them.user_id}", "display_name=pwned"),
        ("GET", f"addresses/{quote(them.member)}", None),
        ("PATCH", f"addresses/{quote(them.member)}/preferences", "delivery_status=by_user"),
        ("POST", f"addresses/{quote(them.member)}/unverify", None),
        ("POST", f"users/{me.user_id}/addresses", f"email={quote(them.member)}"),
        ("POST", f"users/{me.user_id}/addresses", f"email={quote(them.owner)}"),
    ]


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_over_rest_nothing_of_the_other_tenant_is_read_or_changed(
    site: Site, direction: str
) -> None:
    me, them = site.pair(direction)
    before = snapshot(site, them)
    crossed = []
    for method, path, data in rest_attacks(me, them):
        status, body = rest(site, (me.owner, PASSWORD), method, path, data)
        if status not in (403, 404):
            crossed.append(f"{method} {path}: {status} {body[:120]}")
    assert crossed == []
    # the collections show none of it
    for path in ("lists", "domains", "members", f"members/find?list_id={them.list_id}"):
        status, body = rest(site, (me.owner, PASSWORD), "GET", path)
        assert status == 200 and them.list_id not in body and them.domain not in body, path
        assert them.member not in body, path
    assert snapshot(site, them) == before


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_a_claimed_address_of_the_other_tenant_grants_nothing(site: Site, direction: str) -> None:
    """M3 across tenants: I claim an address the other tenant will use, before they do;
    they make it an owner of their list; I get nothing of it."""
    me, them = site.pair(direction)
    newcomer = f"{unique('deputy')}@{them.domain}"
    status, body = rest(
        site, (me.owner, PASSWORD), "POST", f"users/{me.user_id}/addresses", f"email={newcomer}"
    )
    assert status == 201, body
    status, body = rest(
        site,
        (them.owner, PASSWORD),
        "POST",
        "members",
        f"list_id={them.list_id}&subscriber={newcomer}&role=owner",
    )
    assert status == 201, body
    for method, path in (("GET", f"lists/{them.list_id}/config"), ("GET", f"lists/{them.list_id}")):
        status, _body = rest(site, (me.owner, PASSWORD), method, path)
        assert status == 403, (method, path, status)
    status, body = rest(site, (me.owner, PASSWORD), "GET", f"users/{me.user_id}/addresses")
    assert status == 200 and newcomer not in body
    # the claimed address does not log anybody in either
    status, _body = rest(site, (newcomer, PASSWORD), "GET", "lists")
    assert status == 401


# --- the web ------------------------------------------------------------------------------------
def web_attacks(me: Tenant, them: Tenant) -> list[tuple[str, str, dict[str, str]]]:
    lst = f"/lists/{them.list_id}"
    now = datetime.now(UTC)
    return [
        ("GET", f"/domains/{them.domain}", {}),
        ("POST", f"/domains/{them.domain}", {"op": "create", "list_name": "evil"}),
        ("POST", f"/domains/{them.domain}", {"op": "alias", "alias_domain": me.alias}),
        ("POST", f"/domains/{them.domain}", {"op": "add_owner", "email": me.owner}),
        ("POST", f"/domains/{them.domain}", {"op": "remove_owner", "email": them.owner}),
        (
            "POST",
            f"/domains/{them.domain}",
            {"op": "remove", "list_id": them.list_id, "confirm_name": them.fqdn},
        ),
        ("GET", f"/domains/{them.domain}/templates", {}),
        ("GET", f"{lst}/settings", {}),
        ("POST", f"{lst}/settings/list-identity", {"display_name": "pwned"}),
        ("GET", f"{lst}/members", {}),
        ("POST", f"{lst}/members", {"op": "add", "role": "owner", "email": me.owner}),
        ("POST", f"{lst}/members", {"op": "remove", "role": "member", "email": them.member}),
        ("POST", f"{lst}/mass", {"op": "subscribe", "emails": me.owner}),
        ("GET", f"{lst}/held", {}),
        ("GET", f"{lst}/held/{them.held_id}", {}),
        ("POST", f"{lst}/held/{them.held_id}", {"action": "approve"}),
        ("GET", f"{lst}/requests", {}),
        ("POST", f"{lst}/requests", {"token": them.token, "action": "accept"}),
        ("POST", f"{lst}/bans", {"op": "add", "email": them.member}),
        ("POST", f"{lst}/header-matches", {"op": "add", "header": "subject", "pattern": "x"}),
        ("GET", f"{lst}/templates", {}),
        ("GET", f"{lst}/roster-sources", {}),
        ("GET", f"/archive/{them.list_id}", {}),
        ("GET", f"/archive/{them.list_id}/search?q=archived", {}),
        ("GET", f"/archive/{them.list_id}/message/{them.digest}", {}),
        ("GET", f"/archive/{them.list_id}/{now.year}-{now.month}.mbox", {}),
        ("GET", f"/archive/{them.list_id}/feed.atom", {}),
        ("POST", f"/archive/{them.list_id}/new", {"subject": "x", "body": "y"}),
    ]


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_on_the_web_nothing_of_the_other_tenant_is_read_or_changed(
    site: Site, direction: str
) -> None:
    me, them = site.pair(direction)
    before = snapshot(site, them)
    web = site.web(me)
    # the door works: my own archive and domain open
    assert web.get(f"/archive/{me.list_id}/message/{me.digest}").status_code == 200
    assert web.get(f"/domains/{me.domain}").status_code == 200
    crossed = []
    for method, path, data in web_attacks(me, them):
        answer = web.get(path) if method == "GET" else web.post(path, data)
        if answer.status_code not in (403, 404):
            crossed.append(f"{method} {path}: {answer.status_code}")
        elif them.member in answer.text:
            crossed.append(f"{method} {path}: shows the other tenant's data")
    assert crossed == []
    for path in ("/domains", "/my", "/people"):
        answer = web.get(path)
        assert them.domain not in answer.text and them.member not in answer.text, path
    assert snapshot(site, them) == before


# --- mail ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("direction", DIRECTIONS)
def test_by_mail_the_other_lists_roster_is_not_given_away(site: Site, direction: str) -> None:
    me, them = site.pair(direction)
    marker = unique("who")
    request_address = them.fqdn.replace("@", "-request@")
    post = make_post(me.owner, request_address, subject="who", body=f"echo {marker}\n")
    assert site.lab.send(me.owner, [request_address], post) is None

    def answered() -> list[bytes]:
        return [m.data for m in site.lab.sink.to(me.owner) if marker.encode() in m.data]

    wait_for(lambda: answered() != [], timeout=60)
    assert all(them.member.encode() not in data for data in answered())
