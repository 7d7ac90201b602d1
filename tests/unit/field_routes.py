"""The REST writes of the field-level access matrix, route by route (the rows' kinds and
the generated rows are tests/unit/field_rows.py)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from mtaplugin.api.resources.config import ATTRIBUTES
from mtaplugin.api.resources.uris import TEMPLATE_NAMES
from mtaplugin.roster_sources import sources
from tests.unit import doors as d
from tests.unit.field_rows import Field, Route, bool_field, config_fields, preferences


# --- every other write -----------------------------------------------------------------------
def _uris(rule: str) -> dict[str, Field]:
    uri = Field(
        rule,
        "mailman:///list:member:regular:footer",
        ("ftp://example.org/x", "mailman:///no-such-template"),
        ("file:///etc/mtaplugin/footer.txt",),
    )
    rows = {name: uri for name in TEMPLATE_NAMES}
    rows["username"] = Field(rule, "fetcher")
    rows["password"] = Field(rule, "fetch secret")
    return rows


def _one_uri(rule: str) -> dict[str, Field]:
    return {
        "uri": Field(
            rule,
            "mailman:///list:member:regular:footer",
            ("ftp://example.org/x",),
            ("file:///etc/mtaplugin/footer.txt",),
        ),
        "username": Field(rule, "fetcher"),
        "password": Field(rule, "fetch secret"),
    }


_MEMBER_PATCH = {
    # a moderator may set a member's moderation; the address and delivery are the owners'
    "moderation_action": Field("list_read", "hold", ("sometimes",)),
    "receive_nonmatching_topics": bool_field("list_read"),
    "topics": Field("list_read", None),
    "delivery_mode": Field("list_admin", "regular", ("pigeon",)),
    "address": Field("list_admin", d.SUBSCRIBER["other_list"], ("nobody@nowhere.example",)),
}
_LEAVE = {
    "pre_confirmed": bool_field("list_admin"),
    "pre_approved": bool_field("list_admin"),
}
_DOMAIN = {
    "description": Field("domain", "Our lists"),
    "base_url": Field("domain", "https://lists.b.example"),
    # clearing is the domain's own business; naming one is the site admin's (H3)
    "alias_domain": Field(
        "domain", "", ("com", d.HOST_A, "not a domain"), ("lists.b-alias.example",)
    ),
    "owner": Field("site", d.LOGIN["member"]),
}
_MATCH = {
    "header": Field("list_admin", "x-other"),
    "pattern": Field("list_admin", "no", ("^(unclosed",)),
    "action": Field("list_admin", "discard", ("explode",)),
    "tag": Field("list_admin", "spam"),
    "position": Field("list_admin", "0", ("x",)),
}
#: the archivers the site enables (doors: the built-in one)
_ARCHIVERS = {"mtaplugin": bool_field("list_admin")}
_NEW_MEMBER = "list_id=own.a.example&subscriber=new@people.example"
_SURE = "&pre_verified=true&pre_confirmed=true&pre_approved=true"

ROUTES: dict[tuple[str, str], Route] = {
    # people
    ("PATCH", "/addresses/{email}"): Route("own_list", {"display_name": Field("self", "Mem Ber")}),
    ("PATCH", "/addresses/{email}/preferences"): Route("own_list", preferences("self")),
    ("PUT", "/addresses/{email}/preferences"): Route("own_list", preferences("self")),
    ("PATCH", "/users/{user}/preferences"): Route("own_list", preferences("self")),
    ("PUT", "/users/{user}/preferences"): Route("own_list", preferences("self")),
    ("PATCH", "/users/{user}"): Route(
        "own_list",
        {
            "display_name": Field("self", "Mem Ber"),
            "cleartext_password": Field("self", "another long password"),
            "is_server_owner": Field("site", "false", ("maybe",)),
        },
    ),
    # PUT names every field, is_server_owner among them: the site admin's
    ("PUT", "/users/{user}"): Route(
        "own_list",
        {
            "display_name": Field("site", "Mem Ber"),
            "cleartext_password": Field("site", "another long password"),
            "is_server_owner": Field("site", "false", ("maybe",)),
        },
        base="display_name=Mem&is_server_owner=false",
    ),
    ("POST", "/users/{user}/addresses"): Route(
        "own_list",
        {
            # a new address only (unverified: a claim, M3); an existing one is the admin's
            "email": Field("self", "new@people.example", ("not an address",)),
            "display_name": Field("self", "New"),
            # absorbing another user's address is the site admin's
            "absorb_existing": Field("self", "false", ("maybe",), ("true",)),
        },
        ok=201,
        base="email=new@people.example",
    ),
    ("POST", "/users/{user}/preferred_address"): Route(
        "own_list", {"email": Field("self", d.LOGIN["member"])}, ok=201
    ),
    ("POST", "/users"): Route(
        "site",
        {
            "email": Field("site", "new@people.example", ("not an address",)),
            "password": Field("site", "a long password"),
            "display_name": Field("site", "New"),
            "is_server_owner": Field("site", "false", ("maybe",)),
        },
        ok=201,
    ),
    ("POST", "/addresses/{email}/user"): Route(
        "own_list", {"user_id": Field("site", None), "auto_create": Field("site", None)}
    ),
    ("PUT", "/addresses/{email}/user"): Route(
        "own_list", {"user_id": Field("site", None), "auto_create": Field("site", None)}
    ),
    ("POST", "/people/{email}/forget"): Route(
        "own_list",
        {"archive": Field("site", "keep"), "goodbye": Field("site", "false")},
        ok=200,
    ),
    ("POST", "/people/{email}/lists"): Route(
        "own_list",
        {
            "action": Field("staff", None),
            "lists": Field("staff", None),
            "moderation_action": Field("staff", None),
        },
    ),
    # domains
    ("PATCH", "/domains/{domain}"): Route("other_domain", _DOMAIN),
    ("PUT", "/domains/{domain}"): Route("other_domain", _DOMAIN),
    ("POST", "/domains"): Route(
        "site",
        {
            "mail_host": Field("site", "new.example", ("not a domain", d.HOST_A)),
            "description": Field("site", "New"),
            "base_url": Field("site", "https://new.example"),
            "alias_domain": Field("site", "lists.new.example", ("com", d.HOST_B)),
            "owner": Field("site", d.LOGIN["member"]),
        },
        ok=201,
        base="mail_host=new.example",
    ),
    ("POST", "/domains/{domain}/owners"): Route(
        "other_domain", {"owner": Field("site", d.LOGIN["member"])}
    ),
    # lists
    ("POST", "/lists"): Route(
        "other_domain",
        {
            "fqdn_listname": Field("domain", "new@b.example", ("bad name@b.example",)),
            "style_name": Field("domain", "legacy-announce", ("no-such-style",)),
            "display_name": Field("domain", "New"),
            "description": Field("domain", "A new list"),
        },
        ok=201,
        base="fqdn_listname=new@b.example",
    ),
    ("PATCH", "/lists/{list}/config"): Route("own_list", config_fields(), generated=True),
    # PUT names every setting: the good values of the others go with the one tried
    ("PUT", "/lists/{list}/config"): Route(
        "own_list",
        config_fields(),
        base=urlencode({n: f.good or "" for n, f in config_fields().items()}),
        generated=True,
    ),
    ("PATCH", "/lists/{list}/config/{attribute}"): Route(
        "own_list", config_fields(), generated=True
    ),
    ("PUT", "/lists/{list}/config/{attribute}"): Route("own_list", config_fields(), generated=True),
    ("PATCH", "/lists/{list}/archivers"): Route(
        "own_list", {"mtaplugin": bool_field("list_admin")}
    ),
    ("PUT", "/lists/{list}/archivers"): Route("own_list", {"mtaplugin": bool_field("list_admin")}),
    ("POST", "/lists/{list}/digest"): Route(
        "own_list",
        {
            "send": bool_field("list_admin"),
            "bump": bool_field("list_admin"),
            "periodic": bool_field("list_admin"),
        },
        ok=202,
    ),
    ("POST", "/lists/{list}/bans"): Route(
        "own_list",
        {"email": Field("list_admin", "spammer@example.net", ("not an address",))},
        ok=201,
    ),
    ("POST", "/lists/{list}/header-matches"): Route(
        "own_list",
        {
            "header": Field("list_admin", "x-spam-flag"),
            "pattern": Field("list_admin", "yes", ("^(unclosed",)),
            "action": Field("list_admin", "discard", ("explode",)),
            "tag": Field("list_admin", "spam"),
        },
        ok=201,
        base="header=x-a&pattern=b",
    ),
    ("PATCH", "/lists/{list}/header-matches/{position}"): Route("own_list", _MATCH),
    ("PUT", "/lists/{list}/header-matches/{position}"): Route(
        "own_list", _MATCH, base="header=x-a&pattern=b"
    ),
    ("PATCH", "/lists/{list}/roster-sources/{role}"): Route(
        "own_list", {name: Field("site", None) for name in sources.WRITABLE}
    ),
    ("PUT", "/lists/{list}/roster-sources/{role}"): Route(
        "own_list", {name: Field("site", None) for name in sources.WRITABLE}
    ),
    ("POST", "/lists/{list}/roster-sources/{role}/sync"): Route(
        "own_list", {"force": Field("list_admin", None), "dry_run": Field("list_admin", None)}
    ),
    ("DELETE", "/lists/{list}/roster/{role}"): Route(
        "own_list", {"emails": Field("list_admin", d.SUBSCRIBER["own_list"])}, ok=200
    ),
    # moderation
    ("POST", "/lists/{list}/held/{held}"): Route(
        "own_list",
        {
            "action": Field("list_read", "defer", ("explode",)),
            "comment": Field("list_read", "Later."),
            "reason": Field("list_read", "Later."),
            "forward": Field("list_read", "boss@example.org", ("not an address",)),
        },
        base="action=defer",
    ),
    ("POST", "/lists/{list}/requests/{token}"): Route(
        "own_list",
        {"action": Field("list_read", "defer", ("explode",)), "reason": Field("list_read", "x")},
        base="action=defer",
    ),
    # members
    ("POST", "/members"): Route(
        "own_list",
        {
            "list_id": Field("list_admin", "own.a.example", ("no.such.list",)),
            "subscriber": Field("list_admin", "new@people.example", ("not an address",)),
            "role": Field("list_admin", "member", ("overlord",)),
            "display_name": Field("list_admin", "New"),
            "delivery_mode": Field("list_admin", "regular", ("pigeon",)),
            "delivery_status": Field("list_admin", "by_user", ("asleep",)),
            "moderation_action": Field("list_admin", "hold", ("sometimes",)),
            "pre_verified": bool_field("list_admin"),
            "pre_confirmed": bool_field("list_admin"),
            "pre_approved": bool_field("list_admin"),
            "send_welcome_message": bool_field("list_admin", "false"),
            "invitation": bool_field("list_admin", "false"),
        },
        ok=201,
        base=_NEW_MEMBER + _SURE,
    ),
    ("PATCH", "/members/{member_id}"): Route("own_list", _MEMBER_PATCH),
    ("PATCH", "/lists/{list}/{role}/{email}"): Route("own_list", _MEMBER_PATCH),
    ("DELETE", "/members/{member_id}"): Route("own_list", _LEAVE),
    ("DELETE", "/lists/{list}/{role}/{email}"): Route("own_list", _LEAVE),
    ("PATCH", "/members/{member_id}/preferences"): Route("own_list", preferences("list_admin")),
    ("PUT", "/members/{member_id}/preferences"): Route("own_list", preferences("list_admin")),
    # template URIs: the list's owners, the domain's, the site admin's
    ("PATCH", "/lists/{list}/uris"): Route("own_list", _uris("list_admin"), generated=True),
    ("PUT", "/lists/{list}/uris"): Route("own_list", _uris("list_admin"), generated=True),
    ("PATCH", "/lists/{list}/uris/{template}"): Route("own_list", _one_uri("list_admin")),
    ("PUT", "/lists/{list}/uris/{template}"): Route("own_list", _one_uri("list_admin")),
    ("PATCH", "/domains/{domain}/uris"): Route("other_domain", _uris("domain"), generated=True),
    ("PUT", "/domains/{domain}/uris"): Route("other_domain", _uris("domain"), generated=True),
    ("PATCH", "/domains/{domain}/uris/{template}"): Route("other_domain", _one_uri("domain")),
    ("PUT", "/domains/{domain}/uris/{template}"): Route("other_domain", _one_uri("domain")),
    ("PATCH", "/uris"): Route("site", _uris("site"), generated=True),
    ("PUT", "/uris"): Route("site", _uris("site"), generated=True),
    ("PATCH", "/uris/{template}"): Route("site", _one_uri("site")),
    ("PUT", "/uris/{template}"): Route("site", _one_uri("site")),
    # site
    ("POST", "/bans"): Route(
        "site", {"email": Field("site", "spammer@example.net", ("not an address",))}, ok=201
    ),
    ("POST", "/queues/{name}"): Route(
        "site", {"list_id": Field("site", None), "text": Field("site", None)}
    ),
}

#: POSTs that look things up or check them: their parameters change nothing
QUERIES = {
    ("POST", "/lists/find"),
    ("POST", "/members/find"),
    ("POST", "/lists/{list}/header-matches/find"),
    ("POST", "/users/{user}/login"),
}

#: where the fields of a route come from when its responder passes none to Params.only
TABLES: dict[tuple[str, str], Any] = {
    **{(m, p): ATTRIBUTES.writable for m in ("PATCH", "PUT") for p in ("/lists/{list}/config",)},
    **{
        (m, p): ATTRIBUTES.writable
        for m in ("PATCH", "PUT")
        for p in ("/lists/{list}/config/{attribute}",)
    },
    **{
        (m, p): {*TEMPLATE_NAMES, "username", "password"}
        for m in ("PATCH", "PUT")
        for p in ("/lists/{list}/uris", "/domains/{domain}/uris", "/uris")
    },
    **{(m, "/lists/{list}/roster-sources/{role}"): sources.WRITABLE for m in ("PATCH", "PUT")},
}
