"""Every URL of the web UI (the REST API keeps ``/3.0/`` and ``/3.1/``)."""

from __future__ import annotations

from pathlib import Path

import falcon

from mtaplugin.config import Settings
from mtaplugin.enums import RequestType
from mtaplugin.web.pages import (
    account,
    archive,
    archive_write,
    auth,
    domains,
    held,
    legacy_archive,
    members,
    mine,
    oneclick,
    people,
    public,
    requests,
    roster_sources,
    rules,
    templates,
)
from mtaplugin.web.pages import settings as list_settings

STATIC = Path(__file__).parent / "static"


def add_routes(app: falcon.App[falcon.Request, falcon.Response], settings: Settings) -> None:
    app.add_static_route("/static", str(STATIC))
    app.add_route("/", public.Index())
    app.add_route("/login", auth.Login(settings))
    app.add_route("/logout", auth.Logout())
    app.add_route("/reset", auth.ResetRequest(settings))
    app.add_route("/reset/{token}", auth.ResetPassword())
    app.add_route("/my", mine.MyLists())
    app.add_route("/account/export", people.MyData(download=True))
    app.add_route("/account/export.json", people.MyData(download=False))
    app.add_route("/people", people.People())
    app.add_route("/signup", account.SignUp(settings))
    app.add_route("/account", account.Account())
    app.add_route("/account/preferences", account.GlobalPreferences())
    app.add_route("/account/verify/{token}", account.Verify())
    app.add_route("/confirm/{token}", public.Confirm())
    app.add_route("/domains", domains.DomainIndex())
    app.add_route("/domains/{mail_host}", domains.DomainPage(settings))
    app.add_route("/lists/{list_id}", public.ListInfo())
    app.add_route("/lists/{list_id}/subscribe", public.Subscribe(RequestType.subscription))
    app.add_route("/lists/{list_id}/unsubscribe", public.Subscribe(RequestType.unsubscription))
    app.add_route("/lists/{list_id}/unsubscribe/{token}", oneclick.OneClick(settings))
    app.add_route("/lists/{list_id}/held", held.HeldQueue())
    app.add_route("/lists/{list_id}/held/{held_id:int}", held.HeldPost())
    app.add_route("/lists/{list_id}/requests", requests.Requests())
    app.add_route("/lists/{list_id}/settings", list_settings.SettingsIndex())
    app.add_route("/lists/{list_id}/settings/{group}", list_settings.SettingsGroup())
    app.add_route("/lists/{list_id}/members", members.Members())
    app.add_route("/lists/{list_id}/mass", members.MassSubscription())
    app.add_route("/lists/{list_id}/bans", rules.Bans())
    app.add_route("/lists/{list_id}/roster-sources", roster_sources.RosterSources())
    app.add_route("/lists/{list_id}/header-matches", rules.HeaderMatches())
    # the templates of the site, of a domain and of a list: the same pages, the scope in the path
    for scope in ("", "/domains/{mail_host}", "/lists/{list_id}"):
        app.add_route(scope + "/templates", templates.TemplateIndex())
        app.add_route(scope + "/templates/{name}", templates.TemplateEditor())
    add_archive_routes(app, settings)


def add_archive_routes(
    app: falcon.App[falcon.Request, falcon.Response], settings: Settings
) -> None:
    """The list archive (trailing slashes are optional: the app strips them)."""
    base = "/archive/{list_id}"
    compose = archive_write.Compose(settings)
    app.add_route(base + "/new", compose)
    app.add_route(base + "/message/{digest}/reply", compose)
    app.add_route(base, archive.Overview())
    app.add_route(base + "/{year:int}/{month:int}", archive.MonthPage())
    app.add_route(base + "/{year:int}-{month:int}.mbox", archive.MonthMbox())
    app.add_route(base + "/thread/{thread_id:int}", archive.ThreadPage())
    app.add_route(base + "/thread/{thread_id:int}.mbox", archive.ThreadMbox())
    app.add_route(base + "/message/{digest}", archive.MessagePage())
    app.add_route(base + "/message/{digest}/attachment/{number:int}", archive.AttachmentDownload())
    app.add_route(base + "/search", archive.SearchPage())
    app.add_route(base + "/feed.atom", archive.Feed())
    # HyperKitty's and Pipermail's links, redirected to the same post, thread or month
    legacy_archive.add_routes(app)
