"""How an address and a user are rendered (``/addresses``, ``/users``, a domain's owners):
one module, so that the resources that show each other's entries do not import each other."""

from __future__ import annotations

from typing import Any

import falcon

from mtaplugin.api.dialect import iso, resource
from mtaplugin.api.resources.base import url
from mtaplugin.model import Address, User


def address_entry(req: falcon.Request, a: Address, user: User | None = None) -> dict[str, Any]:
    owner = user if user is not None else a.user
    return resource(
        {
            "email": a.email,
            "original_email": a.original_email,
            "display_name": a.display_name or None,
            "registered_on": iso(a.registered_on),
            "verified_on": iso(a.verified_on),
            "user": url(req, "users", owner.user_id) if owner is not None else None,
            "self_link": url(req, "addresses", a.email),
        },
        drop_none=True,
    )


def user_entry(req: falcon.Request, user: User) -> dict[str, Any]:
    return resource(
        {
            "created_on": iso(user.created_on),
            "display_name": user.display_name or None,
            "is_server_owner": user.is_server_owner,
            "user_id": user.user_id,
            "self_link": url(req, "users", user.user_id),
        },
        drop_none=True,
    )
