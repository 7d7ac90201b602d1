"""Every role on every door: each route of the REST API and of the web UI, read from the
Falcon routers, tried by each role on each target, against ONE table of expected answers.

Roles: anonymous, member (a plain member of the own list), moderator and owner (of the own
list), domain owner (of the other domain, ``b.example``), site admin.  Targets: the own list
(``own@a.example``), the other list (``other@a.example``, not advertised) and the other
domain's list (``far@b.example``); routes about a person take the plain member of that list
(on the own list: the member role themselves).

THE RULES (docs/rest.md "Security beyond Mailman", docs/web.md "Who / What"):

REST API -- no credentials: 401 everywhere, before routing.  Otherwise
  user        any user (collections are filtered to what the caller may see)
  self        the person themselves, or the site admin; else 403
  list_read   moderator or owner of that list, owner of its domain, site admin; else 403
  list_admin  owner of that list, owner of its domain, site admin; else 403
  domain      owner of that domain, site admin; else 403
  staff       whoever administers some list (owner, domain owner, site admin); else 403
  site        the site admin only; else 403
Web UI -- "login" below means a 303 to /login?next=... for an anonymous visitor.
  public      anybody
  visitor     anybody not logged in (sign-up); a logged-in user is sent on (303)
  token       anybody, the token in the URL is the credential: a made-up one is 404
  login       any logged-in user; anonymous: login
  list_see    a list the viewer may see (advertised, or a member/moderator/owner of it,
              or its domain's owner, or the site admin); else 404
  list_read   anonymous: login; a list the viewer may not see: 404; seen but not
              moderated: 403; moderator/owner/domain owner/site admin: allowed
  list_admin  as list_read, but owners (of the list or its domain) and the site admin only
  list_site   as list_admin, but a change is the site admin's alone (roster sources: their
              URLs and credentials reach other systems); owners: 403
  archive     by the list's archive_policy (docs/archive.md): public: anybody; private:
              its members, moderators, owners, domain owner, site admin; else 404
              (seeded: the own list and the other domain private, the other list public)
  archive_login  the mbox downloads and the forms to write: anonymous: login; then archive
  staff       anonymous: login; who administers no list: 403
  domain      anonymous: login; not the domain's owner nor site admin: 404
  site        anonymous: login; not the site admin: 404

The last column is the answer when the door opens: the request is sent with an empty body,
so a write that passed the door answers 400 (the body names the missing field) or does
what an empty body means (204).  Every request runs in a SAVEPOINT rolled back afterwards.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from falcon import testing

from mtaplugin import passwords
from tests.unit import doors as d
from tests.unit.webclient import CHEAP_PASSWORDS

# fmt: off
API: list[tuple[str, str, str, int]] = [
    # method, path (under /3.1 and /3.0), rule, answer when allowed
    ("GET",    "/system",                              "user",       200),
    ("GET",    "/system/versions",                     "user",       200),
    ("GET",    "/system/configuration",                "site",       200),
    ("GET",    "/system/configuration/{section}",      "site",       404),
    ("GET",    "/system/preferences",                  "user",       200),
    ("GET",    "/system/pipelines",                    "user",       200),
    ("GET",    "/system/chains",                       "user",       200),
    ("GET",    "/openapi.json",                        "user",       200),
    ("GET",    "/domains",                             "user",       200),
    ("POST",   "/domains",                             "site",       400),
    ("GET",    "/domains/{domain}",                    "domain",     200),
    ("PUT",    "/domains/{domain}",                    "domain",     204),
    ("PATCH",  "/domains/{domain}",                    "domain",     204),
    ("DELETE", "/domains/{domain}",                    "site",       204),
    ("GET",    "/domains/{domain}/lists",              "user",       200),
    ("GET",    "/domains/{domain}/owners",             "domain",     200),
    ("POST",   "/domains/{domain}/owners",             "site",       400),
    ("DELETE", "/domains/{domain}/owners",             "site",       204),
    ("GET",    "/domains/{domain}/uris",               "domain",     200),
    ("PUT",    "/domains/{domain}/uris",               "domain",     204),
    ("PATCH",  "/domains/{domain}/uris",               "domain",     204),
    ("DELETE", "/domains/{domain}/uris",               "domain",     204),
    ("GET",    "/domains/{domain}/uris/{template}",    "domain",     404),
    ("PUT",    "/domains/{domain}/uris/{template}",    "domain",     204),
    ("PATCH",  "/domains/{domain}/uris/{template}",    "domain",     204),
    ("DELETE", "/domains/{domain}/uris/{template}",    "domain",     404),
    ("GET",    "/lists",                               "user",       200),
    ("POST",   "/lists",                               "user",       400),  # then: domain
    ("GET",    "/lists/find",                          "user",       400),
    ("POST",   "/lists/find",                          "user",       400),
    ("GET",    "/lists/styles",                        "user",       200),
    ("GET",    "/lists/{list}",                        "list_read",  200),
    ("DELETE", "/lists/{list}",                        "list_admin", 204),
    ("GET",    "/lists/{list}/config",                 "list_read",  200),
    ("PUT",    "/lists/{list}/config",                 "list_admin", 400),
    ("PATCH",  "/lists/{list}/config",                 "list_admin", 204),
    ("GET",    "/lists/{list}/config/{attribute}",     "list_read",  200),
    ("PUT",    "/lists/{list}/config/{attribute}",     "list_admin", 400),
    ("PATCH",  "/lists/{list}/config/{attribute}",     "list_admin", 400),
    ("DELETE", "/lists/{list}/config/{attribute}",     "list_admin", 400),
    ("GET",    "/lists/{list}/roster-sources",         "list_admin", 200),
    ("GET",    "/lists/{list}/roster-sources/{role}",  "list_admin", 404),  # none set
    ("PUT",    "/lists/{list}/roster-sources/{role}",  "site",       400),
    ("PATCH",  "/lists/{list}/roster-sources/{role}",  "site",       400),
    ("DELETE", "/lists/{list}/roster-sources/{role}",  "site",       404),
    ("POST",   "/lists/{list}/roster-sources/{role}/sync", "list_admin", 404),
    ("GET",    "/lists/{list}/archivers",              "list_read",  200),
    ("PUT",    "/lists/{list}/archivers",              "list_admin", 400),  # names all
    ("PATCH",  "/lists/{list}/archivers",              "list_admin", 204),
    ("GET",    "/lists/{list}/digest",                 "list_read",  200),
    ("POST",   "/lists/{list}/digest",                 "list_admin", 200),
    ("GET",    "/lists/{list}/held",                   "list_read",  200),
    ("GET",    "/lists/{list}/held/count",             "list_read",  200),
    ("GET",    "/lists/{list}/held/{held}",            "list_read",  200),
    ("POST",   "/lists/{list}/held/{held}",            "list_read",  400),
    ("GET",    "/lists/{list}/requests",               "list_read",  200),
    ("GET",    "/lists/{list}/requests/count",         "list_read",  200),
    ("GET",    "/lists/{list}/requests/{token}",       "list_read",  200),
    ("POST",   "/lists/{list}/requests/{token}",       "list_read",  400),
    ("GET",    "/lists/{list}/bans",                   "list_read",  200),
    ("POST",   "/lists/{list}/bans",                   "list_admin", 400),
    ("GET",    "/lists/{list}/bans/{email}",           "list_read",  200),
    ("DELETE", "/lists/{list}/bans/{email}",           "list_admin", 204),
    ("GET",    "/lists/{list}/header-matches",         "list_read",  200),
    ("POST",   "/lists/{list}/header-matches",         "list_admin", 400),
    ("DELETE", "/lists/{list}/header-matches",         "list_admin", 204),
    ("GET",    "/lists/{list}/header-matches/find",    "list_read",  200),
    ("POST",   "/lists/{list}/header-matches/find",    "list_read",  200),
    ("GET",    "/lists/{list}/header-matches/{position}", "list_read", 200),
    ("PUT",    "/lists/{list}/header-matches/{position}", "list_admin", 400),
    ("PATCH",  "/lists/{list}/header-matches/{position}", "list_admin", 204),
    ("DELETE", "/lists/{list}/header-matches/{position}", "list_admin", 204),
    ("GET",    "/lists/{list}/roster/{role}",          "list_read",  200),
    ("DELETE", "/lists/{list}/roster/{role}",          "list_admin", 400),
    ("GET",    "/lists/{list}/{role}/{email}",         "list_read",  200),
    # a moderator may set a member's moderation action (address, delivery: owners only)
    ("PATCH",  "/lists/{list}/{role}/{email}",         "list_read",  204),
    ("DELETE", "/lists/{list}/{role}/{email}",         "list_admin", 204),
    ("GET",    "/lists/{list}/uris",                   "list_read",  200),
    ("PUT",    "/lists/{list}/uris",                   "list_admin", 204),
    ("PATCH",  "/lists/{list}/uris",                   "list_admin", 204),
    ("DELETE", "/lists/{list}/uris",                   "list_admin", 204),
    ("GET",    "/lists/{list}/uris/{template}",        "list_read",  404),
    ("PUT",    "/lists/{list}/uris/{template}",        "list_admin", 204),
    ("PATCH",  "/lists/{list}/uris/{template}",        "list_admin", 204),
    ("DELETE", "/lists/{list}/uris/{template}",        "list_admin", 404),
    ("GET",    "/bans",                                "site",       200),
    ("POST",   "/bans",                                "site",       400),
    ("GET",    "/bans/{email}",                        "site",       404),
    ("DELETE", "/bans/{email}",                        "site",       404),
    ("GET",    "/members",                             "user",       200),
    ("POST",   "/members",                             "user",       400),  # then: list_admin
    ("GET",    "/members/find",                        "user",       200),
    ("POST",   "/members/find",                        "user",       200),
    ("GET",    "/members/{member_id}",                 "list_read",  200),
    ("PATCH",  "/members/{member_id}",                 "list_read",  204),  # as above
    ("DELETE", "/members/{member_id}",                 "list_admin", 204),
    ("GET",    "/members/{member_id}/preferences",     "list_read",  200),
    ("PUT",    "/members/{member_id}/preferences",     "list_admin", 204),
    ("PATCH",  "/members/{member_id}/preferences",     "list_admin", 204),
    ("DELETE", "/members/{member_id}/preferences",     "list_admin", 204),
    ("GET",    "/members/{member_id}/all/preferences", "list_read",  200),
    ("GET",    "/users",                               "site",       200),
    ("POST",   "/users",                               "site",       201),
    ("GET",    "/users/find",                          "site",       400),
    ("GET",    "/users/{user}",                        "self",       200),
    ("PUT",    "/users/{user}",                        "self",       400),
    ("PATCH",  "/users/{user}",                        "self",       204),
    ("DELETE", "/users/{user}",                        "site",       204),
    ("GET",    "/users/{user}/addresses",              "self",       200),
    ("POST",   "/users/{user}/addresses",              "self",       400),  # a new one only
    ("GET",    "/users/{user}/preferred_address",      "self",       200),
    ("POST",   "/users/{user}/preferred_address",      "self",       400),
    ("DELETE", "/users/{user}/preferred_address",      "self",       204),
    ("GET",    "/users/{user}/preferences",            "self",       200),
    ("PUT",    "/users/{user}/preferences",            "self",       204),
    ("PATCH",  "/users/{user}/preferences",            "self",       204),
    ("DELETE", "/users/{user}/preferences",            "self",       204),
    ("POST",   "/users/{user}/login",                  "self",       400),
    ("GET",    "/owners",                              "site",       200),
    ("GET",    "/addresses",                           "site",       200),
    ("GET",    "/addresses/{email}",                   "self",       200),
    ("PATCH",  "/addresses/{email}",                   "self",       204),
    ("DELETE", "/addresses/{email}",                   "self",       204),
    ("POST",   "/addresses/{email}/verify",            "site",       204),
    ("POST",   "/addresses/{email}/unverify",          "self",       204),
    ("GET",    "/addresses/{email}/memberships",       "self",       200),
    ("GET",    "/addresses/{email}/user",              "self",       200),
    ("POST",   "/addresses/{email}/user",              "site",       400),
    ("PUT",    "/addresses/{email}/user",              "site",       400),
    ("DELETE", "/addresses/{email}/user",              "site",       204),
    ("GET",    "/addresses/{email}/preferences",       "self",       200),
    ("PUT",    "/addresses/{email}/preferences",       "self",       204),
    ("PATCH",  "/addresses/{email}/preferences",       "self",       204),
    ("DELETE", "/addresses/{email}/preferences",       "self",       204),
    ("GET",    "/uris",                                "site",       200),
    ("PUT",    "/uris",                                "site",       204),
    ("PATCH",  "/uris",                                "site",       204),
    ("DELETE", "/uris",                                "site",       204),
    ("GET",    "/uris/{template}",                     "site",       404),
    ("PUT",    "/uris/{template}",                     "site",       204),
    ("PATCH",  "/uris/{template}",                     "site",       204),
    ("DELETE", "/uris/{template}",                     "site",       404),
    ("GET",    "/people/{email}",                      "site",       200),
    ("GET",    "/people/{email}/forget",               "site",       200),
    ("POST",   "/people/{email}/forget",               "site",       200),
    ("GET",    "/people/{email}/lists",                "user",       200),  # scoped
    ("POST",   "/people/{email}/lists",                "staff",      400),
    ("GET",    "/queues",                              "site",       200),
    ("GET",    "/queues/{name}",                       "site",       200),
    ("POST",   "/queues/{name}",                       "site",       400),
    ("DELETE", "/queues/{name}/{file}",                "site",       404),
]

WEB: list[tuple[str, str, str, int]] = [
    ("GET",    "/",                                    "public",     200),
    ("GET",    "/login",                               "public",     200),
    ("POST",   "/login",                               "public",     401),  # no password
    ("POST",   "/logout",                              "public",     303),
    ("GET",    "/reset",                               "public",     200),
    ("POST",   "/reset",                               "public",     303),
    ("GET",    "/reset/{token}",                       "token",      404),
    ("POST",   "/reset/{token}",                       "token",      404),
    ("GET",    "/confirm/{token}",                     "token",      404),
    ("POST",   "/confirm/{token}",                     "token",      404),
    ("GET",    "/my",                                  "login",      200),
    ("POST",   "/my",                                  "login",      404),  # names no list
    ("GET",    "/signup",                              "visitor",    200),
    ("POST",   "/signup",                              "public",     400),
    ("GET",    "/account",                             "login",      200),
    ("POST",   "/account",                             "login",      400),
    ("GET",    "/account/preferences",                 "login",      200),
    ("POST",   "/account/preferences",                 "login",      303),
    ("GET",    "/account/verify/{token}",              "token",      404),
    ("POST",   "/account/verify/{token}",              "token",      404),
    ("GET",    "/account/export",                      "login",      200),
    ("GET",    "/account/export.json",                 "login",      200),
    ("GET",    "/people",                              "staff",      200),
    ("POST",   "/people",                              "staff",      400),
    ("GET",    "/domains",                             "login",      200),  # scoped
    ("GET",    "/domains/{mail_host}",                 "domain",     200),
    ("POST",   "/domains/{mail_host}",                 "domain",     400),
    ("GET",    "/domains/{mail_host}/templates",       "domain",     200),
    ("GET",    "/domains/{mail_host}/templates/{name}", "domain",    200),
    ("POST",   "/domains/{mail_host}/templates/{name}", "domain",    303),
    ("GET",    "/templates",                           "site",       200),
    ("GET",    "/templates/{name}",                    "site",       200),
    ("POST",   "/templates/{name}",                    "site",       303),
    ("GET",    "/lists/{list_id}/roster-sources",      "list_admin", 200),
    ("POST",   "/lists/{list_id}/roster-sources",      "list_site",  400),
    ("GET",    "/lists/{list_id}",                     "list_see",   200),
    ("GET",    "/lists/{list_id}/subscribe",           "list_see",   200),
    ("POST",   "/lists/{list_id}/subscribe",           "list_see",   400),
    ("GET",    "/lists/{list_id}/unsubscribe",         "list_see",   200),
    ("POST",   "/lists/{list_id}/unsubscribe",         "list_see",   400),
    ("GET",    "/lists/{list_id}/unsubscribe/{token}", "token",      404),
    ("POST",   "/lists/{list_id}/unsubscribe/{token}", "token",      404),
    ("GET",    "/lists/{list_id}/held",                "list_read",  200),
    ("POST",   "/lists/{list_id}/held",                "list_read",  400),
    ("GET",    "/lists/{list_id}/held/{held_id:int}",  "list_read",  200),
    ("POST",   "/lists/{list_id}/held/{held_id:int}",  "list_read",  400),
    ("GET",    "/lists/{list_id}/requests",            "list_read",  200),
    ("POST",   "/lists/{list_id}/requests",            "list_read",  400),
    ("GET",    "/lists/{list_id}/settings",            "list_admin", 200),
    ("GET",    "/lists/{list_id}/settings/{group}",    "list_admin", 200),
    ("POST",   "/lists/{list_id}/settings/{group}",    "list_admin", 400),
    ("GET",    "/lists/{list_id}/members",             "list_admin", 200),
    ("POST",   "/lists/{list_id}/members",             "list_admin", 400),
    ("GET",    "/lists/{list_id}/mass",                "list_admin", 200),
    ("POST",   "/lists/{list_id}/mass",                "list_admin", 303),
    ("GET",    "/lists/{list_id}/bans",                "list_admin", 200),
    ("POST",   "/lists/{list_id}/bans",                "list_admin", 400),
    ("GET",    "/lists/{list_id}/header-matches",      "list_admin", 200),
    ("POST",   "/lists/{list_id}/header-matches",      "list_admin", 400),
    ("GET",    "/lists/{list_id}/templates",           "list_admin", 200),
    ("GET",    "/lists/{list_id}/templates/{name}",    "list_admin", 200),
    ("POST",   "/lists/{list_id}/templates/{name}",    "list_admin", 303),
    ("GET",    "/archive/{list_id}",                   "archive",    200),
    ("GET",    "/archive/{list_id}/{year:int}/{month:int}", "archive", 200),
    ("GET",    "/archive/{list_id}/search",            "archive",    200),
    ("GET",    "/archive/{list_id}/feed.atom",         "archive",    200),
    ("GET",    "/archive/{list_id}/{year:int}-{month:int}.mbox", "archive_login", 200),
    ("GET",    "/archive/{list_id}/new",               "archive_login", 200),
    ("POST",   "/archive/{list_id}/new",               "archive_login", 400),
    # nothing is archived: 404 for each reader, the same 404 as for a list not shown
    ("GET",    "/archive/{list_id}/message/{digest}",  "archive",    404),
    ("GET",    "/archive/{list_id}/message/{digest}/attachment/{number:int}", "archive", 404),
    ("GET",    "/archive/{list_id}/thread/{thread_id:int}", "archive", 404),
    ("GET",    "/archive/{list_id}/thread/{thread_id:int}.mbox", "archive_login", 404),
    ("GET",    "/archive/{list_id}/message/{digest}/reply", "archive_login", 404),
    ("POST",   "/archive/{list_id}/message/{digest}/reply", "archive_login", 404),
    # the old archive's links (HyperKitty, Pipermail): 301 to the same page, 404 as the page
    ("GET",    "/hyperkitty/list/{fqdn}",                  "archive",    301),
    ("GET",    "/hyperkitty/list/{fqdn}/latest",           "archive",    301),
    ("GET",    "/hyperkitty/list/{fqdn}/message/{digest}", "archive",    404),
    ("GET",    "/hyperkitty/list/{fqdn}/thread/{digest}",  "archive",    404),
    ("GET",    "/hyperkitty/list/{fqdn}/{year:int}/{month:int}", "archive", 301),
    ("GET",    "/hyperkitty/list/{fqdn}/{year:int}/{month:int}/{day:int}", "archive", 301),
    ("GET",    "/archives/list/{fqdn}",                  "archive",    301),
    ("GET",    "/archives/list/{fqdn}/latest",           "archive",    301),
    ("GET",    "/archives/list/{fqdn}/message/{digest}", "archive",    404),
    ("GET",    "/archives/list/{fqdn}/thread/{digest}",  "archive",    404),
    ("GET",    "/archives/list/{fqdn}/{year:int}/{month:int}", "archive", 301),
    ("GET",    "/archives/list/{fqdn}/{year:int}/{month:int}/{day:int}", "archive", 301),
    ("GET",    "/pipermail/{list_name}",                "archive",    301),
    ("GET",    "/pipermail/{list_name}/{period}",       "archive",    301),
    ("GET",    "/pipermail/{list_name}/{period}/{page}", "archive",   404),
]
# fmt: on

LOGIN_REDIRECT = "login"


# --- who has which right on which target ----------------------------------------------


def moderates(role: str, target: str) -> bool:
    return administers(role, target) or (role == "moderator" and target == "own_list")


def administers(role: str, target: str) -> bool:
    return (
        role == "site_admin"
        or (role == "owner" and target == "own_list")
        or owns_domain(role, target)
    )


def owns_domain(role: str, target: str) -> bool:
    return role == "site_admin" or (role == "domain_owner" and target == "other_domain")


def sees(role: str, target: str) -> bool:
    """The other list is not advertised; a member sees the lists they are a member of."""
    return target != "other_list" or moderates(role, target)


def reads_archive(role: str, target: str) -> bool:
    public = target == "other_list"
    return public or moderates(role, target) or (role == "member" and target == "own_list")


def expected(app: str, rule: str, role: str, target: str, ok: int) -> int | str:
    logged_in = role != "anonymous"
    staff = role in ("owner", "domain_owner", "site_admin")
    if app == "api":
        if not logged_in:
            return 401
        allowed = {
            "user": True,
            "self": role == "site_admin" or (role == "member" and target == "own_list"),
            "list_read": moderates(role, target),
            "list_admin": administers(role, target),
            "domain": owns_domain(role, target),
            "staff": staff,
            "site": role == "site_admin",
        }[rule]
        return ok if allowed else 403
    if rule in ("public", "token"):
        return ok
    if rule == "visitor":
        return ok if not logged_in else 303
    if rule == "archive":
        return ok if reads_archive(role, target) else 404
    if rule == "list_see":
        return ok if sees(role, target) else 404
    if not logged_in:
        return LOGIN_REDIRECT
    if rule == "login":
        return ok
    if rule == "archive_login":
        return ok if reads_archive(role, target) else 404
    if rule == "staff":
        return ok if staff else 403
    if rule == "domain":
        return ok if owns_domain(role, target) else 404
    if rule == "site":
        return ok if role == "site_admin" else 404
    if not sees(role, target):
        return 404
    if rule == "list_site":
        return ok if role == "site_admin" else 403
    can = moderates(role, target) if rule == "list_read" else administers(role, target)
    return ok if can else 403


# --- running it ------------------------------------------------------------------------

PARAM = re.compile(r"\{(\w+)(?::\w+)?\}")
TARGETED = {"domain", "list", "held", "token", "member_id", "user", "email"}
TARGETED |= {"list_id", "mail_host", "held_id", "fqdn", "list_name"}
FIXED = {
    "attribute": "display_name",
    "section": "mailman",
    "position": "0",
    "role": "member",
    "template": "list:member:regular:footer",
    "name": "in",
    "file": "nothing",
    "group": "list-identity",
    "digest": "0" * 32,
    "number": "1",
    "year": "2026",
    "month": "1",
    "thread_id": "1",
    "day": "1",
    "period": "2026-January",
    "page": "000001.html",
}


def fill(site: d.Doors, app: str, template: str, target: str) -> str:
    s = site.seeded

    def value(m: re.Match[str]) -> str:
        name = m.group(1)
        if name in ("domain", "mail_host"):
            return d.host(target)
        if name in ("list", "list_id"):
            return d.list_id(target)
        if name == "fqdn":
            return d.LIST[target]
        if name == "list_name":
            return d.LIST[target].split("@")[0]
        if name in ("held", "held_id"):
            return str(s.held_ids[target])
        if name == "token":
            # the API's pending request of that list; in the web a made-up token
            return s.tokens[target] if app == "api" else "made-up-token"
        if name == "member_id":
            return s.member_ids[target]
        if name == "user":
            return s.user_ids["member" if target == "own_list" else target]
        if name == "email":
            if template.startswith("/lists/{list}/bans/"):
                return f"banned@{target.replace('_', '-')}.example"
            if template.startswith("/bans/"):
                return "banned@nowhere.example"
            return d.SUBSCRIBER[target]
        if name == "name" and app == "web":
            return "list:user:notice:welcome"
        return FIXED[name]

    return PARAM.sub(value, template)


def targets_of(template: str) -> tuple[str, ...]:
    names = {m.group(1) for m in PARAM.finditer(template)}
    return d.TARGETS if names & TARGETED else ("own_list",)


@dataclass
class Answer:
    app: str
    method: str
    path: str
    role: str
    target: str
    want: int | str
    result: testing.Result

    @property
    def got(self) -> int | str:
        r = self.result
        if r.status_code == 303 and "/login?next=" in (r.headers.get("location") or ""):
            return LOGIN_REDIRECT
        return r.status_code


class _Keep(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@dataclass
class Run:
    answers: list[Answer]
    log: list[str]
    site: d.Doors


def table(app: str) -> dict[tuple[str, str], tuple[str, int]]:
    rows = API if app == "api" else WEB
    return {(method, path): (rule, ok) for method, path, rule, ok in rows}


def routes(site: d.Doors, app: str) -> list[tuple[str, str]]:
    """(method, path as in the table) of every responder of the app."""
    if app == "web":
        return [(m, t) for t, m in d.routes_of(site.web)]
    found = []
    for t, m in d.routes_of(site.api):
        version, _slash, rest = t[1:].partition("/")
        assert version in ("3.0", "3.1"), t
        found.append((m, "/" + rest))
    return sorted(set(found))


@pytest.fixture(scope="module")
def run(module_db_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    mp = pytest.MonkeyPatch()
    mp.setattr(passwords, "PASSWORDS", CHEAP_PASSWORDS)
    keep = _Keep()
    logging.getLogger().addHandler(keep)
    level = logging.getLogger().level
    logging.getLogger().setLevel(logging.DEBUG)
    try:
        for site in d.make_doors(module_db_url, tmp_path_factory.mktemp("var")):
            answers: list[Answer] = []
            for app in ("api", "web"):
                rows = table(app)
                for method, template in routes(site, app):
                    if (method, template) not in rows:
                        continue  # test_every_route_is_in_the_table names it
                    rule, ok = rows[(method, template)]
                    for target in targets_of(template):
                        path = fill(site, app, template, target)
                        if app == "api":
                            path = "/3.1" + path
                        for role in d.ROLES:
                            answers.append(
                                Answer(
                                    app,
                                    method,
                                    path,
                                    role,
                                    target,
                                    expected(app, rule, role, target, ok),
                                    site.request(app, role, method, path),
                                )
                            )
            yield Run(answers, keep.lines, site)
    finally:
        logging.getLogger().removeHandler(keep)
        logging.getLogger().setLevel(level)
        mp.undo()


# --- the tests --------------------------------------------------------------------------


@pytest.mark.parametrize("app", ["api", "web"])
def test_every_route_is_in_the_table(run: Run, app: str) -> None:
    """A new route (or a new method on one) fails here until the table says who may use it."""
    present = set(routes(run.site, app))
    rows = set(table(app))
    assert sorted(present - rows) == [], "routes the access table does not cover"
    assert sorted(rows - present) == [], "table rows for routes that do not exist"


def test_the_api_answers_under_both_versions_alike(run: Run) -> None:
    """/3.0 serves exactly the routes of /3.1 (the matrix is run under /3.1)."""
    by_version: dict[str, set[tuple[str, str]]] = {"3.0": set(), "3.1": set()}
    for t, m in d.routes_of(run.site.api):
        version, _slash, rest = t[1:].partition("/")
        by_version[version].add((m, rest))
    assert by_version["3.0"] == by_version["3.1"]


@pytest.mark.parametrize("app", ["api", "web"])
def test_every_role_gets_the_documented_answer(run: Run, app: str) -> None:
    wrong = [
        f"{a.method} {a.path} as {a.role} on {a.target}: want {a.want}, got {a.got}"
        + (f" {a.result.text[:120]!r}" if isinstance(a.got, int) and a.got >= 500 else "")
        for a in run.answers
        if a.app == app and a.got != a.want
    ]
    assert wrong == [], f"{len(wrong)} answers differ:\n" + "\n".join(wrong)


def test_nobody_sees_the_lists_they_have_no_role_on_through_the_api(run: Run) -> None:
    """Collections answer 200 to every user but show only what the caller may read."""
    hidden = {
        "member": ("other.a.example", "far.b.example"),
        "moderator": ("other.a.example", "far.b.example"),
        "owner": ("other.a.example", "far.b.example"),
        "domain_owner": ("own.a.example", "other.a.example"),
    }
    leaks = []
    for a in run.answers:
        if a.app != "api" or a.role not in hidden or a.result.status_code != 200:
            continue
        if any(f"/lists/{lid}" in a.path for lid in hidden[a.role]):
            continue
        for list_id in hidden[a.role]:
            if list_id in a.result.text:
                leaks.append(f"{a.method} {a.path} as {a.role} shows {list_id}")
    assert leaks == []


def _strings(result: testing.Result) -> str:
    return "\n".join([result.text, *(f"{k}: {v}" for k, v in result.headers.items())])


def test_no_secret_in_any_answer_or_log_line(run: Run) -> None:
    """Password hashes (argon2 and the legacy schemes), the site secret, the REST admin
    password, the moderator password's hash, pending tokens: never in a body, a header or
    a log line -- except a pending request's token shown to the list's moderators."""
    seeded = run.site.seeded
    hash_marks = re.compile(r"\$(argon2(id|i|d)?|2[aby]|5|6|1)\$")
    found = []
    for a in run.answers:
        text = _strings(a.result)
        own_tokens = {
            seeded.tokens[t] for t in d.TARGETS if a.app == "api" and moderates(a.role, t)
        }
        for secret in seeded.secrets - own_tokens:
            if secret in text:
                found.append(f"{a.method} {a.path} as {a.role}: {secret[:24]}")
        if hash_marks.search(text):
            found.append(f"{a.method} {a.path} as {a.role}: a password hash")
        if a.app == "web":
            session_key = run.site.session_key.hex()
            if session_key in text:
                found.append(f"{a.method} {a.path} as {a.role}: the session key")
    log = "\n".join(run.log)
    for secret in seeded.secrets:
        if secret in log:
            found.append(f"log: {secret[:24]}")
    if hash_marks.search(log):
        found.append("log: a password hash")
    assert run.answers and found == []


def test_the_matrix_covers_every_role_and_target(run: Run) -> None:
    seen = {(a.role, a.target) for a in run.answers}
    assert seen == {(r, t) for r in d.ROLES for t in d.TARGETS}
    assert len(run.answers) > 2000
    json.dumps([a.path for a in run.answers])


def test_every_web_form_refuses_a_post_without_its_csrf_token(run: Run) -> None:
    """Every POST responder of the web app (read from the router), as the site admin who
    may do everything: without the token, or with another session's, 403 and nothing done.
    Only the RFC 8058 one-click unsubscribe is exempt (its signed token is the credential)."""
    site = run.site
    exempt = []
    wrong = []
    for template, method in d.routes_of(site.web):
        if method != "POST":
            continue
        path = fill(site, "web", template, "own_list")
        resource = site.web._router.find(path)
        assert resource is not None, path
        if getattr(resource[0], "csrf_exempt", False):
            exempt.append(template)
            continue
        for role in ("site_admin", "anonymous"):
            for token in (None, "a-token-of-another-session"):
                r = site.request("web", role, "POST", path, csrf=False, token=token)
                if r.status_code != 403 or "Form expired" not in r.text:
                    wrong.append(f"{path} as {role} token={token}: {r.status_code}")
    assert wrong == []
    assert exempt == ["/lists/{list_id}/unsubscribe/{token}"]


def test_a_user_cannot_take_an_address_that_carries_a_role(run: Run) -> None:
    """Found by the matrix: a user could attach any existing address to their user (with
    ``absorb_existing`` even another user's) and mark it verified, and so become its
    owner or moderator.  Now only a new address, and only the site admin verifies."""
    site = run.site
    me = site.seeded.user_ids["member"]
    point = site.conn.begin_nested()
    try:
        for email, absorb in ((d.LOGIN["owner"], "true"), ("orphan-owner@a.example", "false")):
            if email.startswith("orphan"):
                # an owner address with no user yet (as after an import)
                with_orphan = site.request(
                    "api",
                    "site_admin",
                    "POST",
                    "/3.1/members",
                    form=f"list_id={d.list_id('other_list')}&subscriber={email}&role=owner",
                    keep=True,
                )
                assert with_orphan.status_code == 201, with_orphan.text
            r = site.request(
                "api",
                "member",
                "POST",
                f"/3.1/users/{me}/addresses",
                form=f"email={email}&absorb_existing={absorb}",
            )
            assert r.status_code == 403, (email, r.status_code, r.text)
        own = d.SUBSCRIBER["own_list"]
        r = site.request("api", "member", "POST", f"/3.1/addresses/{own}/verify")
        assert r.status_code == 403
        for target in ("own_list", "other_list"):
            got = site.request("api", "member", "GET", f"/3.1/lists/{d.list_id(target)}")
            assert got.status_code == 403
        fresh = site.request(
            "api", "member", "POST", f"/3.1/users/{me}/addresses", form="email=new@people.example"
        )
        assert fresh.status_code == 201
    finally:
        point.rollback()
