"""``/addresses``: an address, its verification, its memberships, its user."""

from __future__ import annotations

import falcon
from sqlalchemy import select

from mtaplugin.api import collections
from mtaplugin.api.dialect import Params, bad_request, no_content, not_found
from mtaplugin.api.resources.base import principal, session, url, workflow
from mtaplugin.api.resources.people_entries import address_entry, user_entry
from mtaplugin.i18n import _
from mtaplugin.manage import users
from mtaplugin.model import Address, Member, User


def the_address(req: falcon.Request, email: str) -> Address:
    address = users.find_address(session(req), email)
    if address is None:
        raise not_found(_("No such address: {email}").format(email=email))
    who = principal(req)
    if not who.is_admin and (address.user_id is None or address.user_id != who.user_pk):
        who.require_admin()
    return address


class Addresses:
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        principal(req).require_admin()
        query = select(Address).order_by(Address.email)
        resp.media = collections.from_query(
            req, session(req), query, lambda a: address_entry(req, a), scalars=True
        )


class OneAddress:
    def on_get(self, req: falcon.Request, resp: falcon.Response, email: str) -> None:
        resp.media = address_entry(req, the_address(req, email))

    def on_patch(self, req: falcon.Request, resp: falcon.Response, email: str) -> None:
        address = the_address(req, email)
        p = Params.of(req)
        p.only({"display_name"})
        address.display_name = p.text("display_name") or ""
        no_content(resp)

    def on_delete(self, req: falcon.Request, resp: falcon.Response, email: str) -> None:
        address = the_address(req, email)
        s = session(req)
        for user in s.scalars(select(User).where(User.preferred_address_id == address.id)):
            user.preferred_address_id = None
        s.delete(address)
        no_content(resp)


class Verify:
    def __init__(self, verified: bool) -> None:
        self.verified = verified

    def on_post(self, req: falcon.Request, resp: falcon.Response, email: str) -> None:
        address = the_address(req, email)
        if self.verified:
            # Verifying is proof of ownership: the site admin's call (a confirmation by
            # mail), never the user's own say-so.
            principal(req).require_admin()
            address.verified_on = address.verified_on or workflow(req).clock()
        else:
            address.verified_on = None
        no_content(resp)


class AddressUser:
    def on_get(self, req: falcon.Request, resp: falcon.Response, email: str) -> None:
        address = the_address(req, email)
        if address.user is None:
            raise not_found(_("the address has no user"))
        resp.media = user_entry(req, address.user)

    def _link(self, req: falcon.Request, resp: falcon.Response, email: str) -> None:
        principal(req).require_admin()
        address = the_address(req, email)
        p = Params.of(req)
        p.only({"user_id", "auto_create"})
        key = p.str("user_id")
        if key:
            address.user_id = users.get(session(req), key).id
        elif p.bool("auto_create", False):
            user = User(display_name=address.display_name, created_on=workflow(req).now())
            session(req).add(user)
            session(req).flush()
            address.user_id = user.id
        else:
            raise bad_request(_("give user_id or auto_create"))
        session(req).flush()
        resp.status = falcon.HTTP_201
        resp.location = url(req, "users", address.user.user_id if address.user else "")

    on_post = _link
    on_put = _link

    def on_delete(self, req: falcon.Request, resp: falcon.Response, email: str) -> None:
        principal(req).require_admin()
        address = the_address(req, email)
        if address.user_id is None:
            raise not_found(_("the address has no user"))
        address.user_id = None
        no_content(resp)


class Memberships:
    def on_get(self, req: falcon.Request, resp: falcon.Response, email: str) -> None:
        from mtaplugin.api.resources.member_view import member_entry, member_query

        address = the_address(req, email)
        query = member_query().where(Member.address_id == address.id)
        resp.media = collections.from_query(
            req, session(req), query, lambda r: member_entry(req, r)
        )
