"""``/3.1/openapi.json``: an OpenAPI 3 description built from the route table.

Every path and method the API serves is listed (from the resources' ``on_*`` responders),
with its path parameters, the paging parameters of collections, and the form fields of
the requests that take a body.  The error body and the collection are described once.
"""

from __future__ import annotations

import re
from typing import Any

import falcon

from mtaplugin import __version__
from mtaplugin.enums import Action, MemberRole

_METHODS = ("get", "post", "put", "patch", "delete")


def _one_of(*values: str) -> dict[str, Any]:
    """The schema of a string that is one of ``values``."""
    return {"type": "string", "enum": [str(v) for v in values]}


_S: dict[str, Any] = {"type": "string"}
_B = _one_of("true", "false")
_I: dict[str, Any] = {"type": "integer", "minimum": 0}
#: what a moderator decides on a held post or a request
_DECISION = _one_of("accept", "reject", "discard", "defer", "hold")

#: the settings of a roster source (mtaplugin.roster_sources.sources), all optional but ``kind``
#: for a new one
_ROSTER_SOURCE: dict[str, tuple[dict[str, Any], bool]] = {
    "kind": (_one_of("ldap", "sql"), False),
    **{
        name: (_S, False)
        for name in (
            "url", "bind_dn", "bind_password", "base_dn", "ldap_filter", "group_dn",
            "member_attribute", "mail_attribute", "name_attribute", "query",
        )
    },
    **{
        name: (_I, False)
        for name in ("timeout", "interval", "max_removals", "max_removal_percent")
    },
    "enabled": (_B, False),
}  # fmt: skip

#: form fields by (path, method): name → (schema, required)
FIELDS: dict[tuple[str, str], dict[str, tuple[dict[str, Any], bool]]] = {
    ("/domains", "post"): {
        "mail_host": (_S, True),
        "description": (_S, False),
        "alias_domain": (_S, False),
        "owner": (_S, False),
    },
    ("/domains/{domain}", "patch"): {"description": (_S, False)},
    ("/domains/{domain}/owners", "post"): {"owner": (_S, True)},
    ("/lists", "post"): {
        "fqdn_listname": (_S, True),
        "style_name": (_one_of("legacy-default", "legacy-announce", "private-default"), False),
    },
    ("/lists/find", "post"): {"subscriber": (_S, True), "role": (_S, False)},
    ("/people/{email}/forget", "post"): {
        "archive": (_one_of("keep", "remove", "anonymise"), False),
        "goodbye": (_B, False),
    },
    ("/people/{email}/lists", "post"): {
        "action": (_one_of("remove", "ban", "moderate"), True),
        "moderation_action": (_one_of("default", *Action), False),
        "lists": ({"type": "array", "items": _S}, False),
    },
    ("/lists/{list}/config", "patch"): {
        "display_name": (_S, False),
        "subject_prefix": (_S, False),
        "max_message_size": (_I, False),
        "advertised": (_B, False),
        "default_member_action": (_one_of(*Action), False),
    },
    ("/lists/{list}/held/{held}", "post"): {
        "action": (_DECISION, True),
        "comment": (_S, False),
    },
    ("/lists/{list}/requests/{token}", "post"): {
        "action": (_DECISION, True),
        "reason": (_S, False),
    },
    ("/lists/{list}/bans", "post"): {"email": (_S, True)},
    ("/bans", "post"): {"email": (_S, True)},
    ("/lists/{list}/roster-sources/{role}", "put"): _ROSTER_SOURCE,
    ("/lists/{list}/roster-sources/{role}", "patch"): _ROSTER_SOURCE,
    ("/lists/{list}/roster-sources/{role}/sync", "post"): {
        "force": (_B, False),
        "dry_run": (_B, False),
    },
    ("/lists/{list}/header-matches", "post"): {
        "header": (_S, True),
        "pattern": (_S, True),
        "action": (_S, False),
        "tag": (_S, False),
    },
    ("/lists/{list}/header-matches/{position}", "patch"): {
        "header": (_S, False),
        "pattern": (_S, False),
        "action": (_S, False),
        "position": (_I, False),
    },
    ("/members", "post"): {
        "list_id": (_S, True),
        "subscriber": (_S, True),
        "display_name": (_S, False),
        "role": (_one_of(*MemberRole), False),
        "pre_verified": (_B, False),
        "pre_confirmed": (_B, False),
        "pre_approved": (_B, False),
        "invitation": (_B, False),
        "send_welcome_message": (_B, False),
        "delivery_mode": (_S, False),
    },
    ("/members/find", "post"): {
        "list_id": (_S, False),
        "subscriber": (_S, False),
        "role": (_S, False),
    },
    ("/members/{member_id}", "patch"): {
        "delivery_mode": (_S, False),
        "moderation_action": (_S, False),
        "address": (_S, False),
        "topics": ({"type": "array", "items": _S}, False),
        "receive_nonmatching_topics": (_B, False),
    },
    ("/users", "post"): {
        "email": (_S, True),
        "password": (_S, False),
        "display_name": (_S, False),
    },
    ("/users/{user}", "patch"): {"display_name": (_S, False), "cleartext_password": (_S, False)},
    ("/users/{user}/addresses", "post"): {"email": (_S, True), "display_name": (_S, False)},
    ("/users/{user}/preferred_address", "post"): {"email": (_S, True)},
    ("/users/{user}/login", "post"): {"cleartext_password": (_S, True)},
    ("/addresses/{email}", "patch"): {"display_name": (_S, False)},
    ("/queues/{name}", "post"): {"list_id": (_S, True), "text": (_S, True)},
}
_PREFERENCES = {
    "acknowledge_posts": (_B, False),
    "hide_address": (_B, False),
    "receive_list_copy": (_B, False),
    "receive_own_postings": (_B, False),
    "delivery_mode": (_S, False),
    "delivery_status": (_S, False),
    "preferred_language": (_S, False),
}
_SUMMARIES = {
    "get": "Read",
    "post": "Create or act",
    "put": "Replace",
    "patch": "Change",
    "delete": "Remove",
}


def _error(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }


def _operation(path: str, method: str) -> dict[str, Any]:
    params: list[dict[str, Any]] = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        for name in re.findall(r"{(\w+)}", path)
    ]
    if method == "get":
        params += [
            {"name": "count", "in": "query", "required": False, "schema": _I},
            {"name": "page", "in": "query", "required": False, "schema": {**_I, "minimum": 1}},
        ]
    op: dict[str, Any] = {
        "summary": f"{_SUMMARIES[method]} {path}",
        "operationId": f"{method}{re.sub(r'[^A-Za-z0-9]+', '_', path)}",
        "parameters": params,
        "responses": {
            "200": {"description": "OK", "content": {"application/json": {"schema": {}}}},
            "201": {"description": "Created; the Location header names the new resource"},
            "202": {"description": "Accepted; a token waits for confirmation or approval"},
            "204": {"description": "Done"},
            "400": _error("Bad request; the description names the field"),
            "401": _error("No or wrong credentials"),
            "403": _error("Not allowed for these credentials"),
            "404": _error("Not found"),
            "405": _error("Method not allowed"),
            "409": _error("Conflict"),
            "413": _error("Body too large"),
        },
    }
    fields = FIELDS.get((path, method))
    if fields is None and path.endswith("/preferences") and method in ("patch", "put"):
        fields = _PREFERENCES
    if fields:
        schema = {
            "type": "object",
            "properties": {name: s for name, (s, _req) in fields.items()},
            "required": [name for name, (_s, req) in fields.items() if req],
            "additionalProperties": False,
        }
        op["requestBody"] = {
            "required": True,
            "content": {"application/x-www-form-urlencoded": {"schema": schema}},
        }
    return op


def describe(table: list[tuple[str, Any]], server: str) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for path, resource in table:
        ops = {m: _operation(path, m) for m in _METHODS if hasattr(resource, f"on_{m}")}
        paths[path] = ops
    return {
        "openapi": "3.0.3",
        "info": {
            "title": "mtaplugin REST API (GNU Mailman 3.1 dialect)",
            "version": __version__,
        },
        "servers": [{"url": server}],
        "security": [{"basic": []}],
        "paths": paths,
        "components": {
            "securitySchemes": {"basic": {"type": "http", "scheme": "basic"}},
            "schemas": {
                "Error": {
                    "type": "object",
                    "required": ["title"],
                    "properties": {"title": _S, "description": _S},
                },
                "Collection": {
                    "type": "object",
                    "required": ["start", "total_size", "http_etag"],
                    "properties": {
                        "start": {"type": "integer"},
                        "total_size": {"type": "integer"},
                        "entries": {"type": "array", "items": {"type": "object"}},
                        "http_etag": _S,
                    },
                },
            },
        },
    }


class OpenAPI:
    def __init__(self, table: list[tuple[str, Any]]) -> None:
        self.table = table

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.media = describe(self.table, req.context.base)
