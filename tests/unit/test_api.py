"""The REST API's Falcon app in-process (falcon.testing) on real SQLite and PostgreSQL:
the dialect, paging in SQL, the subscription workflow, role limits, error shapes."""

from __future__ import annotations

import base64
import email
from datetime import timedelta
from typing import Any

import falcon
import pytest
from falcon.testing import TestClient
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from mtaplugin.api.app import create_app
from mtaplugin.api.dialect import as_bool, as_timedelta, delta
from mtaplugin.config import DatabaseSettings, Settings
from mtaplugin.db import sessionmaker_for
from mtaplugin.i18n import available_languages
from mtaplugin.manage import users
from mtaplugin.model import MailingList, OutboxMessage, PendingRequest, User
from tests.helpers import disabled_by_bounces, unique

ADMIN = ("restadmin", "restpass")


def _auth(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


class Api:
    def __init__(self, client: TestClient, auth: tuple[str, str] = ADMIN) -> None:
        self.client = client
        self.headers = _auth(*auth)

    def as_user(self, user: str, password: str) -> Api:
        return Api(self.client, (user, password))

    def call(
        self, method: str, path: str, body: str | None = None, **kw: Any
    ) -> falcon.testing.Result:
        headers = dict(self.headers)
        if body is not None:
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        return self.client.simulate_request(
            method, f"/3.1/{path}", body=body, headers=headers, **kw
        )

    def get(self, path: str) -> falcon.testing.Result:
        return self.call("GET", path)

    def post(self, path: str, body: str = "") -> falcon.testing.Result:
        return self.call("POST", path, body)

    def patch(self, path: str, body: str) -> falcon.testing.Result:
        return self.call("PATCH", path, body)

    def delete(self, path: str, body: str | None = None) -> falcon.testing.Result:
        return self.call("DELETE", path, body)


def api_for(module_db_url: str, module_engine: Engine, **sections: Any) -> Api:
    """The REST app on the module's database; ``sections``: settings other than the
    defaults (``archivers=ArchiversSettings(...)``)."""
    settings = Settings(database=DatabaseSettings(url=module_db_url), **sections)
    return Api(TestClient(create_app(settings, sessionmaker_for(module_engine))))


def new_domain(api: Api, prefix: str = "api") -> str:
    """A new mail domain, made over REST; its host name."""
    name = f"{unique(prefix)}.test"
    assert api.post("domains", f"mail_host={name}").status_code == 201
    return name


@pytest.fixture
def api(module_db_url: str, module_engine: Engine) -> Api:
    return api_for(module_db_url, module_engine)


@pytest.fixture
def host(api: Api) -> str:
    return new_domain(api)


def new_list(api: Api, host: str, **settings: str) -> str:
    name = unique("l")
    r = api.post("lists", f"fqdn_listname={name}@{host}")
    assert r.status_code == 201, r.text
    list_id = f"{name}.{host}"
    assert r.headers["location"] == f"http://falconframework.org/3.1/lists/{list_id}"
    if settings:
        body = "&".join(f"{k}={v}" for k, v in settings.items())
        assert api.patch(f"lists/{list_id}/config", body).status_code == 204
    return list_id


# --- pure helpers ---------------------------------------------------------------------------
@pytest.mark.parametrize("text", ["True", "true", "yes", "1", "on", "enabled"])
def test_truths_as_mailman_sends_them(text: str) -> None:
    assert as_bool("x", text) is True


@pytest.mark.parametrize("text", ["False", "no", "0", "off", "disabled"])
def test_falsehoods(text: str) -> None:
    assert as_bool("x", text) is False


def test_a_bad_boolean_names_the_field() -> None:
    with pytest.raises(falcon.HTTPBadRequest) as err:
        as_bool("emergency", "maybe")
    assert err.value.description.startswith('Invalid Parameter "emergency"')


def test_durations_read_and_written_like_mailman() -> None:
    assert as_timedelta("t", "7d") == timedelta(days=7)
    assert as_timedelta("t", "1w2d3h") == timedelta(days=9, hours=3)
    assert delta(timedelta(days=90)) == "90d"
    assert delta(timedelta(days=1, hours=2)) == "1d2h"
    with pytest.raises(falcon.HTTPBadRequest):
        as_timedelta("t", "soon")


# --- dialect --------------------------------------------------------------------------------
def test_collections_page_in_sql_and_keep_total_size(api: Api, host: str) -> None:
    list_id = new_list(api, host)
    for i in range(7):
        r = api.post(
            "members",
            f"list_id={list_id}&subscriber=p{i}@example.net&pre_verified=True&pre_confirmed=True",
        )
        assert r.status_code == 201, r.text
    page = api.get(f"lists/{list_id}/roster/member?count=3&page=3").json
    assert (page["start"], page["total_size"], len(page["entries"])) == (6, 7, 1)
    assert page["entries"][0]["email"] == "p6@example.net"
    assert "http_etag" in page and all("self_link" in e for e in page["entries"])
    beyond = api.get(f"lists/{list_id}/roster/member?count=3&page=9").json
    assert beyond["total_size"] == 7 and "entries" not in beyond
    assert api.get(f"lists/{list_id}/roster/member?page=0&count=2").status_code == 400
    assert api.get(f"lists/{list_id}/roster/member?count=x").status_code == 400


def test_json_bodies_and_percent_encoded_emails(api: Api, host: str) -> None:
    list_id = new_list(api, host)
    r = api.client.simulate_post(
        "/3.1/members",
        json={
            "list_id": list_id,
            "subscriber": "a+b@example.net",
            "pre_verified": True,
            "pre_confirmed": True,
        },
        headers=api.headers,
    )
    assert r.status_code == 201, r.text
    by_fqdn = list_id.replace(".", "@", 1)
    got = api.get(f"lists/{by_fqdn}/member/a%2Bb%40example.net")
    assert got.status_code == 200 and got.json["email"] == "a+b@example.net"
    assert api.get("lists/nope.example/member/a%40b.c").status_code == 404


def test_config_put_needs_every_writable_key_and_changes_nothing_on_error(
    api: Api, host: str
) -> None:
    list_id = new_list(api, host)
    r = api.call("PUT", f"lists/{list_id}/config", "display_name=X")
    assert r.status_code == 400 and r.json["description"].startswith("Missing parameters:")
    r = api.patch(f"lists/{list_id}/config", "display_name=Changed&max_num_recipients=-3")
    assert r.status_code == 400 and "max_num_recipients" in r.json["description"]
    assert api.get(f"lists/{list_id}/config/display_name").json["display_name"] != "Changed"
    assert api.patch(f"lists/{list_id}/config", "volume=3").json["description"] == (
        "Read-only attribute: volume"
    )
    config = api.get(f"lists/{list_id}/config").json
    assert config["autoresponse_grace_period"] == "90d"
    assert config["bounces_address"] == list_id.replace(".", "-bounces@", 1)
    r = api.patch(
        f"lists/{list_id}/config",
        "autoresponse_grace_period=2w&reply_goes_to_list=point_to_list&emergency=yes",
    )
    assert r.status_code == 204
    config = api.get(f"lists/{list_id}/config").json
    assert (config["autoresponse_grace_period"], config["reply_goes_to_list"]) == (
        "14d",
        "point_to_list",
    )
    assert config["emergency"] is True
    assert api.delete(f"lists/{list_id}/config/acceptable_aliases").status_code == 204
    assert api.delete(f"lists/{list_id}/config/emergency").status_code == 400


def test_a_language_without_a_catalog_is_refused_naming_the_field(api: Api, host: str) -> None:
    list_id = new_list(api, host)
    r = api.patch(f"lists/{list_id}/config", "preferred_language=klingon")
    assert r.status_code == 400
    assert 'Invalid Parameter "preferred_language"' in r.json["description"]
    assert "available: " + ", ".join(available_languages()) in r.json["description"]
    assert "zh_CN" in available_languages()
    language = api.get(f"lists/{list_id}/config/preferred_language").json
    assert language["preferred_language"] == "en"  # nothing changed
    assert api.patch(f"lists/{list_id}/config", "preferred_language=de").status_code == 204
    assert api.get(f"lists/{list_id}/config/preferred_language").json["preferred_language"] == (
        "de"
    )


def test_header_matches_keep_their_order(api: Api, host: str) -> None:
    list_id = new_list(api, host)
    for header in ("a", "b", "c"):
        assert (
            api.post(f"lists/{list_id}/header-matches", f"header=X-{header}&pattern=x").status_code
            == 201
        )
    assert api.patch(f"lists/{list_id}/header-matches/2", "position=0").status_code == 204
    found = api.get(f"lists/{list_id}/header-matches").json["entries"]
    assert [(m["header"], m["position"]) for m in found] == [("x-c", 0), ("x-a", 1), ("x-b", 2)]
    assert api.delete(f"lists/{list_id}/header-matches/1").status_code == 204
    found = api.get(f"lists/{list_id}/header-matches").json["entries"]
    assert [(m["header"], m["position"]) for m in found] == [("x-c", 0), ("x-b", 1)]
    bad = api.post(f"lists/{list_id}/header-matches", "header=X-y&pattern=(")
    assert bad.status_code == 400 and "pattern" in bad.json["description"]


# --- subscriptions ----------------------------------------------------------------------------
def test_an_unverified_address_gets_a_confirmation_with_the_token(
    api: Api, host: str, module_sessions: Any
) -> None:
    list_id = new_list(api, host, subscription_policy="open")
    r = api.post("members", f"list_id={list_id}&subscriber=new@example.net")
    assert r.status_code == 202 and r.json["token_owner"] == "subscriber"
    token = r.json["token"]
    with module_sessions() as s:
        pending = s.scalar(select(PendingRequest).where(PendingRequest.token == token))
        assert pending is not None and pending.email == "new@example.net"
        notices = s.scalars(select(OutboxMessage)).all()
        assert any(
            n.recipients == ["new@example.net"] and f"confirm {token}".encode() in n.raw
            for n in notices
        )
    again = api.post("members", f"list_id={list_id}&subscriber=new@example.net")
    assert again.status_code == 409
    assert again.json["description"] == "Subscription request already pending"
    assert api.post(f"lists/{list_id}/requests/{token}", "action=accept").status_code == 204
    assert api.get(f"lists/{list_id}/member/new@example.net").status_code == 200
    assert api.get("addresses/new@example.net").json["verified_on"]


def test_a_banned_address_cannot_subscribe(api: Api, host: str) -> None:
    list_id = new_list(api, host)
    assert api.post(f"lists/{list_id}/bans", "email=bad@example.net").status_code == 201
    r = api.post(
        "members", f"list_id={list_id}&subscriber=bad@example.net&pre_verified=1&pre_confirmed=1"
    )
    assert r.status_code == 400 and r.json["description"] == "Membership is banned"
    assert api.post(f"lists/{list_id}/bans", "email=^.*@spam\\.example$").status_code == 201
    r = api.post("members", f"list_id={list_id}&subscriber=eve@spam.example")
    assert r.status_code == 400 and r.json["description"] == "Membership is banned"
    assert api.get(f"lists/{list_id}/member/eve@spam.example").status_code == 404
    assert api.get(f"lists/{list_id}/requests").json["total_size"] == 0
    dup = api.post(f"lists/{list_id}/bans", "email=bad@example.net")
    assert dup.status_code == 400 and dup.json["description"] == "Address is already banned"


def test_digest_resource_does_what_mailmans_does(api: Api, host: str) -> None:
    """``bump``, ``send`` and ``periodic`` as Mailman's; digest delivery modes are taken."""
    list_id = new_list(api, host, subscription_policy="open")
    assert api.post(f"lists/{list_id}/digest", "").status_code == 200
    both = api.post(f"lists/{list_id}/digest", "send=True&periodic=True")
    assert both.status_code == 400
    assert both.json["description"] == "send and periodic options are mutually exclusive"
    for flag in ("send", "periodic"):
        # Nothing waits: accepted, and no issue number is used.
        assert api.post(f"lists/{list_id}/digest", f"{flag}=True").status_code == 202
    assert api.get(f"lists/{list_id}/digest").json["next_digest_number"] == 1
    # The first bump: no digest was ever sent, so the next issue of volume 1.
    assert api.post(f"lists/{list_id}/digest", "bump=True").status_code == 202
    digest = api.get(f"lists/{list_id}/digest").json
    assert (digest["volume"], digest["next_digest_number"]) == (1, 2)
    join = f"list_id={list_id}&subscriber=dee@example.net&pre_verified=1&pre_confirmed=1"
    r = api.post("members", join + "&delivery_mode=mime_digests")
    assert r.status_code == 201
    member = r.headers["location"].rsplit("/", 1)[1]
    assert api.get(f"members/{member}").json["delivery_mode"] == "mime_digests"
    r = api.patch(f"members/{member}", "delivery_mode=plaintext_digests")
    assert r.status_code == 204
    r = api.patch(f"members/{member}/preferences", "delivery_mode=summary_digests")
    assert r.status_code == 204
    assert api.get(f"members/{member}/all/preferences").json["delivery_mode"] == "summary_digests"
    r = api.patch(f"members/{member}/preferences", "delivery_mode=weekly_digests")
    assert r.status_code == 400 and "delivery_mode" in r.json["description"]


def test_digest_send_sends_what_waits(api: Api, host: str, module_sessions: Any) -> None:
    from datetime import UTC, datetime

    from mtaplugin.digests import store
    from mtaplugin.manage import lists

    list_id = new_list(api, host, digest_send_periodic="false")
    join = f"list_id={list_id}&subscriber=dee@example.net&pre_verified=1&pre_confirmed=1"
    assert api.post("members", join + "&delivery_mode=mime_digests").status_code == 201
    with module_sessions.begin() as s:
        pk = lists.get(s, list_id).id
        store.add(s, pk, b"Subject: waiting\r\n\r\nhi\r\n", now=datetime.now(UTC))
    # periodic is off for this list: accepted, nothing sent
    assert api.post(f"lists/{list_id}/digest", "periodic=True").status_code == 202
    with module_sessions() as s:
        assert store.pending(s, pk).posts == 1
    assert api.post(f"lists/{list_id}/digest", "send=True").status_code == 202
    with module_sessions() as s:
        assert store.pending(s, pk).posts == 0
        (row,) = s.scalars(
            select(OutboxMessage).where(
                OutboxMessage.mailing_list_id == pk, OutboxMessage.kind == "digest"
            )
        )
        assert row.recipients == ["dee@example.net"] and b"Digest, Vol 1, Issue 1" in row.raw
    assert api.get(f"lists/{list_id}/digest").json["next_digest_number"] == 2


def test_invitation_waits_for_the_invited(api: Api, host: str) -> None:
    list_id = new_list(api, host, subscription_policy="open")
    r = api.post(
        "members",
        f"list_id={list_id}&subscriber=guest@example.net&pre_verified=True&invitation=True",
    )
    assert r.status_code == 202 and r.json["token_owner"] == "subscriber"
    requests = api.get(f"lists/{list_id}/requests").json
    assert [e["email"] for e in requests["entries"]] == ["guest@example.net"]
    assert (
        api.post(f"lists/{list_id}/requests/{r.json['token']}", "action=discard").status_code == 204
    )
    assert api.get(f"lists/{list_id}/requests/count").json["count"] == 0


# --- security ---------------------------------------------------------------------------------
def test_deny_by_default(api: Api) -> None:
    r = api.client.simulate_get("/3.1/lists")
    assert r.status_code == 401 and r.json["description"] == "REST API authorization failed"
    assert "Basic" in r.headers["www-authenticate"]
    r = api.client.simulate_get("/3.1/no/such", headers={"Authorization": "Basic !!"})
    assert r.status_code == 401


def test_user_passwords_are_argon2_and_never_served(
    api: Api, host: str, module_sessions: Any
) -> None:
    email = f"{unique('u')}@example.net"
    r = api.post("users", f"email={email}&password=pw1&display_name=Pat")
    assert r.status_code == 201
    uid = r.headers["location"].rsplit("/", 1)[1]
    assert "password" not in api.get(f"users/{uid}").json
    with module_sessions() as s:
        stored = s.scalar(select(User.password).where(User.user_id == uid))
        assert stored.startswith("$argon2")
    assert api.post(f"users/{uid}/login", "cleartext_password=pw1").status_code == 204
    assert api.post(f"users/{uid}/login", "cleartext_password=nope").status_code == 403
    assert api.patch(f"users/{uid}", "cleartext_password=password2").status_code == 204
    me = api.as_user(email, "password2")
    assert me.get(f"users/{uid}").status_code == 200
    assert me.get("lists").json["total_size"] == 0
    assert me.get(f"users/{email}").json["user_id"] == uid
    assert api.as_user(email, "pw1").get("lists").status_code == 401


def test_a_new_password_through_rest_needs_the_webs_minimum(api: Api) -> None:
    """A user's password is their web log-in too: REST asks for as many characters as the
    web (``users.MIN_PASSWORD``), a 400 naming the field, and nothing changes."""
    email = f"{unique('short')}@example.net"
    assert api.post("users", f"email={email}&password=first password").status_code == 201
    me = api.as_user(email, "first password")
    put = "cleartext_password=x&display_name=Changed&is_server_owner=false"
    for who, method, body in ((me, "PATCH", "cleartext_password=x"), (api, "PUT", put)):
        r = who.call(method, f"users/{email}", body)
        assert r.status_code == 400, (method, r.text)
        assert "cleartext_password" in r.json["description"]
        assert str(users.MIN_PASSWORD) in r.json["description"]
    assert me.get(f"users/{email}").json.get("display_name", "") != "Changed"
    short = "s" * (users.MIN_PASSWORD - 1)
    assert me.patch(f"users/{email}", f"cleartext_password={short}").status_code == 400
    long_enough = "s" * users.MIN_PASSWORD
    assert me.patch(f"users/{email}", f"cleartext_password={long_enough}").status_code == 204
    assert api.as_user(email, long_enough).get(f"users/{email}").status_code == 200


def test_a_moderator_moderates_but_does_not_administer(api: Api, host: str) -> None:
    list_id = new_list(api, host)
    email = f"{unique('mod')}@example.net"
    assert api.post("users", f"email={email}&password=m").status_code == 201
    r = api.post("members", f"list_id={list_id}&subscriber={email}&role=moderator")
    assert r.status_code == 201
    mod = api.as_user(email, "m")
    assert mod.get(f"lists/{list_id}/held").status_code == 200
    assert mod.get(f"lists/{list_id}/config").status_code == 200
    r = mod.patch(f"lists/{list_id}/config", "emergency=true")
    assert r.status_code == 403 and r.json["title"] == "403 Forbidden"
    assert mod.delete(f"lists/{list_id}").status_code == 403
    assert mod.get("system/configuration").status_code == 403
    assert mod.get("bans").status_code == 403
    assert mod.get("users").status_code == 403


def test_no_traceback_on_internal_errors(api: Api, module_engine: Engine) -> None:
    app = create_app(Settings(), sessionmaker_for(module_engine))

    class Boom:
        def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
            raise RuntimeError("secret detail")

    app.add_route("/3.1/boom", Boom())
    r = TestClient(app).simulate_get("/3.1/boom", headers=_auth(*ADMIN))
    assert r.status_code == 500
    assert r.json == {"title": "500 Internal Server Error", "description": "internal error"}


def test_openapi_lists_every_route(api: Api) -> None:
    doc = api.get("openapi.json").json
    assert doc["openapi"].startswith("3.")
    assert {"/lists/{list}/roster/{role}", "/members", "/lists/{list}/held/{held}"} <= set(
        doc["paths"]
    )
    assert "post" in doc["paths"]["/members"]


def test_list_delete_by_a_domain_owner(api: Api, host: str, module_sessions: Any) -> None:
    list_id = new_list(api, host)
    email = f"{unique('dom')}@example.net"
    assert api.post("users", f"email={email}&password=d").status_code == 201
    assert api.post(f"domains/{host}/owners", f"owner={email}").status_code == 204
    owner = api.as_user(email, "d")
    assert owner.delete(f"lists/{list_id}").status_code == 204
    with module_sessions() as s:
        s: Session
        assert s.scalar(select(MailingList.id).where(MailingList.list_id == list_id)) is None


def test_counts_follow_every_change_of_the_roster(api: Api, host: str) -> None:
    list_id = new_list(api, host)

    def counts() -> tuple[int, int]:
        listed = api.get(f"lists/{list_id}").json["member_count"]
        paged = api.get(f"lists/{list_id}/roster/member?count=1&page=1").json["total_size"]
        return listed, paged

    assert counts() == (0, 0)
    for i in range(3):
        body = f"list_id={list_id}&subscriber=c{i}@example.net&pre_verified=1&pre_confirmed=1"
        assert api.post("members", body).status_code == 201
        assert counts() == (i + 1, i + 1)
    assert api.delete(f"lists/{list_id}/member/c0@example.net").status_code == 204
    assert counts() == (2, 2)


def test_a_refused_subscriber_is_told_at_a_verified_address_only(
    api: Api, host: str, module_sessions: Any
) -> None:
    list_id = new_list(api, host, subscription_policy="moderate")
    tokens = {}
    for who, verified in (("seen", "&pre_verified=1"), ("unseen", "")):
        r = api.post(
            "members",
            f"list_id={list_id}&subscriber={who}@{host}&pre_confirmed=1{verified}",
        )
        assert r.status_code == 202
        tokens[who] = r.json["token"]
    with module_sessions() as s:
        before = max([m.id for m in s.scalars(select(OutboxMessage))] or [0])
    # the unverified one must confirm first; the moderator refuses both
    for token in tokens.values():
        assert (
            api.post(f"lists/{list_id}/requests/{token}", "action=reject&reason=no").status_code
            == 204
        )
    with module_sessions() as s:
        refusals = [m.recipients for m in s.scalars(select(OutboxMessage)) if m.id > before]
    assert [f"seen@{host}"] in refusals and [f"unseen@{host}"] not in refusals
    assert api.get(f"lists/{list_id}/requests?token_owner=moderator").json["total_size"] == 0


def test_fields_limit_the_keys_of_roster_entries(api: Api, host: str) -> None:
    list_id = new_list(api, host)
    body = f"list_id={list_id}&subscriber=f@example.net&pre_verified=1&pre_confirmed=1"
    assert api.post("members", body).status_code == 201
    page = api.get(f"lists/{list_id}/roster/member?fields=email&fields=self_link").json
    assert set(page["entries"][0]) == {"email", "self_link", "http_etag"}


def test_template_uris_per_list_and_site(api: Api, host: str) -> None:
    list_id = new_list(api, host)
    footer = "list:member:regular:footer"
    r = api.patch(
        f"lists/{list_id}/uris",
        f"{footer}=https://example.org/footer.txt&username=u&password=secret",
    )
    assert r.status_code == 204, r.text
    entries = api.get(f"lists/{list_id}/uris").json["entries"]
    assert [(e["name"], e["uri"], e["username"]) for e in entries] == [
        (footer, "https://example.org/footer.txt", "u")
    ]
    assert "password" not in entries[0]
    one = api.get(f"lists/{list_id}/uris/{footer}").json
    assert one["self_link"].endswith(f"/lists/{list_id}/uris/{footer}")
    assert api.patch(f"lists/{list_id}/uris", "list:nope=https://x").status_code == 400
    assert api.patch(f"lists/{list_id}/uris", f"{footer}=gopher://x").status_code == 400
    assert api.delete(f"lists/{list_id}/uris/{footer}").status_code == 204
    assert api.get(f"lists/{list_id}/uris").json["total_size"] == 0
    assert api.patch("uris", f"{footer}=file:///etc/mtaplugin/footer.txt").status_code == 204
    assert api.get(f"uris/{footer}").json["uri"] == "file:///etc/mtaplugin/footer.txt"


def test_mailman_uris_and_setting_a_uri_again(api: Api, host: str, module_sessions: Any) -> None:
    from datetime import UTC, datetime

    from mtaplugin.model import Template, TemplateFetch

    list_id = new_list(api, host)
    footer = "list:member:regular:footer"
    ok = f"{footer}=mailman:///$listname/$language/list:member:regular:footer.txt"
    assert api.patch(f"lists/{list_id}/uris", ok).status_code == 204
    r = api.patch(f"lists/{list_id}/uris", f"{footer}=mailman:///en/no-such.txt")
    assert r.status_code == 400 and "mailman:" in r.json["description"]
    # Postorius saves an edit by setting the same URI again: Mailman evicts its cache, so
    # the template-fetch job must fetch it again (its text stays until then)
    uri = f"https://templates.test/{list_id}/footer.txt"
    assert api.patch(f"lists/{list_id}/uris", f"{footer}={uri}").status_code == 204
    later = datetime(2030, 1, 1, tzinfo=UTC)
    with module_sessions.begin() as s:
        # (the fetch at once after the PATCH found no such host: it recorded nothing)
        assert s.scalars(select(TemplateFetch).where(TemplateFetch.uri == uri)).first() is None
        s.add(TemplateFetch(uri=uri, text="old", fetched_at=later, refresh_at=later, error=""))
    assert api.patch(f"lists/{list_id}/uris", f"{footer}={uri}").status_code == 204
    with module_sessions() as s:
        row = s.scalars(select(TemplateFetch).where(TemplateFetch.uri == uri)).one()
        assert row.text == "old" and row.refresh_at < later
        # a text written before gives way to the URI
        t = s.scalars(select(Template).where(Template.uri == uri)).one()
        assert t.text == ""


def test_only_the_site_admin_may_use_file_uris(api: Api, host: str) -> None:
    list_id = new_list(api, host)
    email = f"{unique('own')}@example.net"
    assert api.post("users", f"email={email}&password=o").status_code == 201
    assert (
        api.post("members", f"list_id={list_id}&subscriber={email}&role=owner").status_code == 201
    )
    owner = api.as_user(email, "o")
    footer = "list:member:regular:footer"
    r = owner.patch(f"lists/{list_id}/uris", f"{footer}=file:///etc/shadow")
    assert r.status_code == 400 and "file:" in r.json["description"]
    # an http(s) URI of a public address (a name that resolves nowhere is refused: M4)
    assert owner.patch(f"lists/{list_id}/uris", f"{footer}=https://x.test/f").status_code == 400
    assert (
        owner.patch(f"lists/{list_id}/uris", f"{footer}=https://93.184.216.34/f").status_code == 204
    )
    assert owner.get("uris").status_code == 403


def test_rest_joins_and_leaves_send_what_the_list_says(
    api: Api, host: str, module_sessions: Any
) -> None:
    list_id = new_list(
        api,
        host,
        subscription_policy="open",
        send_welcome_message="true",
        send_goodbye_message="true",
        admin_notify_mchanges="true",
    )
    assert api.post("members", f"list_id={list_id}&subscriber=boss@example.net&role=owner")
    add = "list_id={}&subscriber={}&pre_verified=1&pre_confirmed=1&pre_approved=1"
    assert api.post("members", add.format(list_id, "ann@example.net")).status_code == 201
    quiet = add.format(list_id, "bea@example.net") + "&send_welcome_message=false"
    assert api.post("members", quiet).status_code == 201
    assert api.delete(f"lists/{list_id}/member/ann@example.net").status_code == 204
    gone = api.delete(f"lists/{list_id}/roster/member", "emails=bea@example.net&emails=x@y.net")
    assert gone.json == {"bea@example.net": True, "x@y.net": False}

    def subjects(rcpt: str) -> list[str]:
        with module_sessions() as s:
            pk = s.scalar(select(MailingList.id).where(MailingList.list_id == list_id))
            rows = s.scalars(
                select(OutboxMessage)
                .where(OutboxMessage.mailing_list_id == pk)
                .order_by(OutboxMessage.id)
            ).all()
            return [
                str(email.message_from_bytes(r.raw)["Subject"])
                for r in rows
                if r.recipients == [rcpt]
            ]

    assert [s.split(" ")[0] for s in subjects("ann@example.net")] == ["Welcome", "You"]
    assert [s.split(" ")[0] for s in subjects("bea@example.net")] == ["You"]  # only goodbye
    owner = " ".join(subjects("boss@example.net"))
    for text in ("ann@example.net joined", "ann@example.net left", "bea@example.net left"):
        assert text in owner


# --- bounces ------------------------------------------------------------------------------
def test_a_member_serves_its_bounce_record_as_mailman_does(
    api: Api, host: str, module_sessions: Any
) -> None:
    from datetime import UTC, datetime

    from mtaplugin.model import Member

    list_id = new_list(api, host)
    body = f"list_id={list_id}&subscriber=b@example.net&pre_verified=1&pre_confirmed=1"
    r = api.post("members", body)
    assert r.status_code == 201
    member_id = r.headers["location"].rsplit("/", 1)[1]
    fresh = api.get(f"members/{member_id}").json
    # Never bounced: no last_bounce_received; never warned: Mailman's datetime.min.
    assert fresh["bounce_score"] == 0 and fresh["total_warnings_sent"] == 0
    assert "last_bounce_received" not in fresh
    assert fresh["last_warning_sent"] == "0001-01-01T00:00:00"
    with module_sessions.begin() as s:
        member = s.scalar(select(Member).where(Member.member_id == member_id))
        bounced = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)
        disabled_by_bounces(member, bounced, datetime(2026, 12, 2, 10, 0, 7, tzinfo=UTC))
    entry = api.get(f"members/{member_id}").json
    assert entry["bounce_score"] == 5
    assert entry["last_bounce_received"] == "2026-12-01T09:30:00"
    assert entry["last_warning_sent"] == "2026-12-02T10:00:07"
    assert entry["total_warnings_sent"] == 1
    # The same entry in the roster and under /lists/{list}/member/{email}.
    roster = api.get(f"lists/{list_id}/roster/member").json["entries"]
    assert roster[0]["bounce_score"] == 5
    assert api.get(f"lists/{list_id}/member/b@example.net").json["total_warnings_sent"] == 1
    prefs = api.get(f"members/{member_id}/preferences").json
    assert prefs["delivery_status"] == "by_bounces"
    assert api.get(f"members/{member_id}/all/preferences").json["delivery_status"] == "by_bounces"
    found = api.get(f"members/find?list_id={list_id}&delivery_status=by_bounces").json
    assert found["total_size"] == 1


@pytest.mark.parametrize(
    "field, value",
    [
        ("bounce_score", "0"),
        ("total_warnings_sent", "0"),
        ("last_bounce_received", ""),
        ("last_warning_sent", "2026-01-01T00:00:00"),
    ],
)
def test_the_bounce_record_is_read_only_and_a_patch_changes_nothing(
    api: Api, host: str, module_sessions: Any, field: str, value: str
) -> None:
    from mtaplugin.model import Member

    list_id = new_list(api, host)
    body = f"list_id={list_id}&subscriber=r@example.net&pre_verified=1&pre_confirmed=1"
    member_id = api.post("members", body).headers["location"].rsplit("/", 1)[1]
    with module_sessions.begin() as s:
        s.scalar(select(Member).where(Member.member_id == member_id)).bounce_score = 3
    r = api.patch(f"members/{member_id}", f"{field}={value}&moderation_action=hold")
    assert r.status_code == 400
    assert r.json["description"] == (
        f'Invalid Parameter "{field}": read-only: bounce processing keeps it'
    )
    entry = api.get(f"members/{member_id}").json
    assert entry["bounce_score"] == 3 and "moderation_action" not in entry
    # What Mailman lets a PATCH change still changes.
    assert api.patch(f"members/{member_id}", "moderation_action=hold").status_code == 204
    assert api.get(f"members/{member_id}").json["moderation_action"] == "hold"


def test_the_pipeline_and_shunt_queues_show_the_accepted_posts(
    api: Api, host: str, module_sessions: Any
) -> None:
    """``pipeline``: accepted posts waiting for the worker's fan-out; ``shunt``: those
    whose fan-out failed (Mailman's names for the same two states)."""
    from datetime import UTC, datetime

    from mtaplugin.model import AcceptedPost, MailingList

    list_id = new_list(api, host)
    before = {q: api.get(f"queues/{q}").json["count"] for q in ("pipeline", "shunt")}
    with module_sessions.begin() as s:
        pk = s.scalar(select(MailingList.id).where(MailingList.list_id == list_id))
        for failed in (False, False, True):
            s.add(AcceptedPost(mailing_list_id=pk, origin="mail", raw=b"x", post_number=1,
                               topics=[], archive=True, digest=False, news=False,
                               accepted_at=datetime.now(UTC), failed=failed))  # fmt: skip
    pipeline, shunt = (api.get(f"queues/{q}").json for q in ("pipeline", "shunt"))
    assert pipeline["count"] == before["pipeline"] + 2
    assert shunt["count"] == before["shunt"] + 1
    assert pipeline["directory"] == shunt["directory"] == "accepted_posts"
    with module_sessions.begin() as s:  # the module's other tests drain nothing of these
        s.query(AcceptedPost).filter(AcceptedPost.mailing_list_id == pk).delete()


def test_a_page_of_lists_follows_every_change(api: Api, host: str) -> None:
    """Pages of lists are answered from a cache while the lists' fingerprint stands: a new
    member, a changed setting, a new or deleted list each show on the next request."""
    first = new_list(api, host)

    def page() -> dict[str, Any]:
        r = api.get(f"domains/{host}/lists?count=50&page=1")
        assert r.status_code == 200, r.text
        assert r.headers["content-type"].startswith("application/json")
        return {e["list_id"]: e for e in r.json.get("entries", [])}

    assert page()[first]["member_count"] == 0
    assert page()[first]["member_count"] == 0  # the cached page
    body = f"list_id={first}&subscriber=p0@example.net&pre_verified=1&pre_confirmed=1"
    assert api.post("members", body).status_code == 201
    assert page()[first]["member_count"] == 1
    assert api.patch(f"lists/{first}/config", "description=Now%20described").status_code == 204
    assert page()[first]["description"] == "Now described"
    second = new_list(api, host)
    assert set(page()) == {first, second}
    assert api.delete(f"lists/{first}").status_code == 204
    assert set(page()) == {second}
    total = api.get("lists?count=1&page=1").json["total_size"]
    third = new_list(api, host)
    assert api.get("lists?count=1&page=1").json["total_size"] == total + 1
    assert set(page()) == {second, third}


def test_self_links_come_from_the_configured_base_url(
    module_db_url: str, module_engine: Engine
) -> None:
    """``[api] base_url``: a proxy between Postorius and mtaplugin may rewrite Host, and
    the links still name the address clients use (as Mailman builds them from its
    [webservice] settings); without it, the request's own address."""
    from mtaplugin.config import ApiSettings

    settings = Settings(
        database=DatabaseSettings(url=module_db_url),
        api=ApiSettings(base_url="https://lists.example.org/rest/"),
    )
    proxied = Api(TestClient(create_app(settings, sessionmaker_for(module_engine))))
    name = f"{unique('api')}.test"
    r = proxied.call("POST", "domains", f"mail_host={name}", host="10.0.0.7")
    assert r.status_code == 201
    assert r.headers["location"] == f"https://lists.example.org/rest/3.1/domains/{name}"
    got = proxied.call("GET", f"domains/{name}", host="10.0.0.7").json
    assert got["self_link"] == f"https://lists.example.org/rest/3.1/domains/{name}"
    plain = Api(
        TestClient(
            create_app(
                Settings(database=DatabaseSettings(url=module_db_url)),
                sessionmaker_for(module_engine),
            )
        )
    )
    assert plain.get(f"domains/{name}").json["self_link"].startswith("http://falconframework.org/")
