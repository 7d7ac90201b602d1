"""``/users``, ``/owners`` and a user's addresses, preferred address and login.

A user's password hash is **never** returned (Mailman returns it); ``cleartext_password``
sets it, ``/users/{id}/login`` checks it.
"""

from __future__ import annotations

from typing import Any

import falcon
from sqlalchemy import Select, or_, select

from mtaplugin.api import collections
from mtaplugin.api.dialect import (
    Params,
    as_bool,
    bad_request,
    created,
    forbidden,
    no_content,
    not_found,
)
from mtaplugin.api.resources.base import principal, session, url, workflow
from mtaplugin.api.resources.people_entries import address_entry, user_entry
from mtaplugin.errors import AlreadyExists, InvalidInput, NotFound
from mtaplugin.i18n import _
from mtaplugin.manage import users
from mtaplugin.model import Address, User


def the_user(req: falcon.Request, key: str) -> User:
    try:
        user = users.get(session(req), key)
    except NotFound:
        raise not_found(_("No such user: {key}").format(key=key)) from None
    principal(req).check_user(user)
    return user


def _users_page(req: falcon.Request, query: Select[User]) -> dict[str, Any]:
    """One page (or all) of the users ``query`` finds, as REST entries."""
    return collections.from_query(
        req, session(req), query, lambda u: user_entry(req, u), scalars=True
    )


class Users:
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        principal(req).require_admin()
        resp.media = _users_page(req, select(User).order_by(User.id))

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        principal(req).require_admin()
        p = Params.of(req)
        p.only({"email", "password", "display_name", "is_server_owner"})
        try:
            user = users.create(
                session(req),
                p.text("email"),
                password=p.text("password"),
                display_name=p.text("display_name") or "",
                is_server_owner=p.bool("is_server_owner", False),
                # the site admin who gives the address a log-in vouches for it
                verified=bool(p.text("password")),
                clock=workflow(req).clock,
            )
        except AlreadyExists as exc:
            raise bad_request(_("User already exists: {e}").format(e=exc.problem)) from None
        created(resp, url(req, "users", user.user_id))


class FindUsers:
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        principal(req).require_admin()
        q = Params.of(req).str("q", required=True)
        pattern = f"%{q.lower()}%"
        query = (
            select(User)
            .outerjoin(Address, Address.user_id == User.id)
            .where(or_(Address.email.like(pattern), User.display_name.ilike(pattern)))
            .distinct()
            .order_by(User.id)
        )
        resp.media = _users_page(req, query)


class Owners:
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        principal(req).require_admin()
        owners = select(User).where(User.is_server_owner.is_(True))
        resp.media = _users_page(req, owners.order_by(User.id))


class OneUser:
    def on_get(self, req: falcon.Request, resp: falcon.Response, user: str) -> None:
        resp.media = user_entry(req, the_user(req, user))

    def _update(self, req: falcon.Request, user: User, replace: bool) -> None:
        p = Params.of(req)
        p.only({"cleartext_password", "display_name", "is_server_owner"})
        if replace:
            for key in ("display_name", "is_server_owner"):
                if key not in p:
                    raise bad_request(_("Missing Parameter: {f}").format(f=key))
        if "display_name" in p:
            user.display_name = p.text("display_name") or ""
        if "is_server_owner" in p:
            principal(req).require_admin()
            # given, so a JSON null is no boolean (refused, naming the field)
            user.is_server_owner = as_bool("is_server_owner", p.raw("is_server_owner"))
        if "cleartext_password" in p:
            # the web's minimum: a user's password is their web log-in too
            try:
                hashed = users.hash_password(p.str("cleartext_password") or "", users.MIN_PASSWORD)
            except InvalidInput as exc:
                raise InvalidInput("cleartext_password", exc.problem) from None
            user.password = hashed

    def on_patch(self, req: falcon.Request, resp: falcon.Response, user: str) -> None:
        self._update(req, the_user(req, user), replace=False)
        no_content(resp)

    def on_put(self, req: falcon.Request, resp: falcon.Response, user: str) -> None:
        self._update(req, the_user(req, user), replace=True)
        no_content(resp)

    def on_delete(self, req: falcon.Request, resp: falcon.Response, user: str) -> None:
        principal(req).require_admin()
        users.delete(session(req), the_user(req, user))
        no_content(resp)


class UserAddresses:
    def on_get(self, req: falcon.Request, resp: falcon.Response, user: str) -> None:
        u = the_user(req, user)
        query = select(Address).where(Address.user_id == u.id).order_by(Address.email)
        resp.media = collections.from_query(
            req, session(req), query, lambda a: address_entry(req, a, u), scalars=True
        )

    def on_post(self, req: falcon.Request, resp: falcon.Response, user: str) -> None:
        u = the_user(req, user)
        p = Params.of(req)
        p.only({"email", "display_name", "absorb_existing"})
        email = p.str("email", required=True) or ""
        absorb = p.bool("absorb_existing", False)
        if not principal(req).is_admin and (
            absorb or users.find_address(session(req), email) is not None
        ):
            # An address that exists may carry a role (owner, moderator) or belong to
            # someone else: only the site admin attaches it to a user.
            raise forbidden(
                _("only the site administrator may attach an existing address to a user")
            )
        # A user's new address stays unverified: a claim that grants nothing (no role, no
        # log-in, no reset) until the link the web account page mails verifies it; anyone
        # who shows it is theirs first takes it (mtaplugin.manage.claims).
        address = users.add_address(
            session(req),
            u,
            email,
            p.text("display_name") or "",
            absorb=bool(absorb),
            clock=workflow(req).clock,
        )
        created(resp, url(req, "addresses", address.email))


class PreferredAddress:
    def on_get(self, req: falcon.Request, resp: falcon.Response, user: str) -> None:
        u = the_user(req, user)
        if u.preferred_address is None:
            raise not_found(_("the user has no preferred address"))
        resp.media = address_entry(req, u.preferred_address, u)

    def on_post(self, req: falcon.Request, resp: falcon.Response, user: str) -> None:
        u = the_user(req, user)
        p = Params.of(req)
        p.only({"email"})
        address = users.set_preferred(session(req), u, p.str("email", required=True))
        created(resp, url(req, "addresses", address.email))

    def on_delete(self, req: falcon.Request, resp: falcon.Response, user: str) -> None:
        u = the_user(req, user)
        u.preferred_address_id = None
        no_content(resp)


class Login:
    def on_post(self, req: falcon.Request, resp: falcon.Response, user: str) -> None:
        u = the_user(req, user)
        p = Params.of(req)
        p.only({"cleartext_password"})
        if not users.check_password(u, p.str("cleartext_password", required=True)):
            raise forbidden(_("wrong password"))
        no_content(resp)
