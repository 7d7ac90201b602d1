"""Every path of the API, under ``/3.1`` and ``/3.0`` (Mailman serves both)."""

from __future__ import annotations

from typing import Any

import falcon

from mtaplugin.api.resources import (
    addresses,
    bans,
    config,
    domains,
    held,
    lists,
    members,
    people,
    preferences,
    queues,
    roster_sources,
    system,
    uris,
    users,
)
from mtaplugin.api.resources.base import principal, url
from mtaplugin.config import Settings
from mtaplugin.model.preferences import PreferencesMixin


def _member_prefs(req: falcon.Request, member_id: str) -> tuple[PreferencesMixin, str]:
    # a moderator reads them; changing them is the owner's (or the site admin's) business
    member = members.member_by_id(req, member_id, administer=req.method != "GET")
    return member, url(req, "members", member.member_id, "preferences")


def _address_prefs(req: falcon.Request, email: str) -> tuple[PreferencesMixin, str]:
    address = addresses.the_address(req, email)
    return address, url(req, "addresses", address.email, "preferences")


def _user_prefs(req: falcon.Request, user: str) -> tuple[PreferencesMixin, str]:
    u = users.the_user(req, user)
    return u, url(req, "users", u.user_id, "preferences")


class AllMemberPreferences:
    def on_get(self, req: falcon.Request, resp: falcon.Response, member_id: str) -> None:
        member = members.member_by_id(req, member_id)
        chain = [member, member.address, member.user or member.address.user]
        resp.media = preferences.resolved(
            chain, url(req, "members", member.member_id, "all", "preferences")
        )


def routes(settings: Settings) -> list[tuple[str, Any]]:
    ban = bans.Bans()
    one_ban = bans.OneBan()
    return [
        ("/system", system.Versions()),
        ("/system/versions", system.Versions()),
        ("/system/configuration", system.Configuration(settings)),
        ("/system/configuration/{section}", system.Configuration(settings)),
        ("/system/preferences", system.SystemPreferences()),
        ("/system/pipelines", system.Names("pipelines", list(system.POSTING_PIPELINES))),
        ("/system/chains", system.Names("chains", ["accept", "discard", "hold", "reject"])),
        ("/domains", domains.Domains(settings)),
        ("/domains/{domain}", domains.OneDomain(settings)),
        ("/domains/{domain}/lists", lists.DomainLists()),
        ("/domains/{domain}/owners", domains.DomainOwners()),
        ("/lists", lists.Lists()),
        ("/lists/find", lists.FindLists()),
        ("/lists/styles", lists.Styles()),
        ("/lists/{list}", lists.OneList()),
        ("/lists/{list}/config", config.ListConfig()),
        ("/lists/{list}/config/{attribute}", config.ListConfigAttribute()),
        ("/lists/{list}/archivers", lists.Archivers()),
        ("/lists/{list}/digest", lists.Digest()),
        ("/lists/{list}/held", held.Held()),
        ("/lists/{list}/held/count", held.HeldCount()),
        ("/lists/{list}/held/{held}", held.OneHeld()),
        ("/lists/{list}/requests", held.Requests()),
        ("/lists/{list}/requests/count", held.RequestsCount()),
        ("/lists/{list}/requests/{token}", held.OneRequest()),
        ("/lists/{list}/bans", ban),
        ("/lists/{list}/bans/{email}", one_ban),
        ("/lists/{list}/header-matches", bans.HeaderMatches()),
        ("/lists/{list}/header-matches/find", bans.FindHeaderMatches()),
        ("/lists/{list}/header-matches/{position}", bans.OneHeaderMatch()),
        ("/lists/{list}/roster/{role}", members.Roster()),
        ("/lists/{list}/roster-sources", roster_sources.RosterSources()),
        ("/lists/{list}/roster-sources/{role}", roster_sources.OneRosterSource()),
        ("/lists/{list}/roster-sources/{role}/sync", roster_sources.RosterSync()),
        ("/lists/{list}/{role}/{email}", members.ListMember()),
        ("/bans", ban),
        ("/bans/{email}", one_ban),
        ("/members", members.Members()),
        ("/members/find", members.FindMembers()),
        ("/members/{member_id}", members.OneMember()),
        ("/members/{member_id}/preferences", preferences.Preferences(_member_prefs)),
        ("/members/{member_id}/all/preferences", AllMemberPreferences()),
        ("/users", users.Users()),
        ("/users/find", users.FindUsers()),
        ("/users/{user}", users.OneUser()),
        ("/users/{user}/addresses", users.UserAddresses()),
        ("/users/{user}/preferred_address", users.PreferredAddress()),
        ("/users/{user}/preferences", preferences.Preferences(_user_prefs)),
        ("/users/{user}/login", users.Login()),
        ("/owners", users.Owners()),
        ("/addresses", addresses.Addresses()),
        ("/addresses/{email}", addresses.OneAddress()),
        ("/addresses/{email}/verify", addresses.Verify(True)),
        ("/addresses/{email}/unverify", addresses.Verify(False)),
        ("/addresses/{email}/memberships", addresses.Memberships()),
        ("/addresses/{email}/user", addresses.AddressUser()),
        ("/addresses/{email}/preferences", preferences.Preferences(_address_prefs)),
        ("/uris", uris.Uris()),
        ("/uris/{template}", uris.OneUri()),
        ("/domains/{domain}/uris", uris.Uris()),
        ("/domains/{domain}/uris/{template}", uris.OneUri()),
        ("/lists/{list}/uris", uris.Uris()),
        ("/lists/{list}/uris/{template}", uris.OneUri()),
        ("/people/{email}", people.Person()),
        ("/people/{email}/forget", people.Forget(settings)),
        ("/people/{email}/lists", people.PersonLists()),
        ("/queues", queues.Queues()),
        ("/queues/{name}", queues.OneQueue()),
        ("/queues/{name}/{file}", queues.QueueFile()),
    ]


def add_routes(
    app: falcon.App[falcon.Request, falcon.Response], prefix: str, settings: Settings
) -> None:
    from mtaplugin.api.openapi import OpenAPI

    table = routes(settings)
    for path, resource in table:
        app.add_route(prefix + path, resource)
    app.add_route(prefix + "/openapi.json", OpenAPI(table))


__all__ = ["add_routes", "principal", "routes"]
