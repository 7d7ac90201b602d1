"""The web forms' fields for the field-level access matrix (tests/unit/test_field_matrix.py).

The list settings pages are not here: their fields are ``list_settings.GROUPS``, each of
the kind its column gives (``list_settings.field_of``).  Every other form is read from the
templates themselves (:func:`forms_in_templates`: each ``<form method="post">`` and the
names of its inputs); :data:`FORMS` says, for each, where it posts, who may post it (the
web rules of tests/unit/test_access_matrix.py) and which values are refused (the page
answers 400 naming the field, and nothing changes).  A form or a field without a row
fails the inventory test.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from tests.unit import doors as d

TEMPLATES = Path(__file__).resolve().parents[2] / "mtaplugin" / "web" / "templates"
_FORM = re.compile(r"<form\b([^>]*)>(.*?)</form>", re.S)
_INPUT = re.compile(r"<(?:input|select|textarea|button)\b([^>]*)>", re.S)
_ATTR = re.compile(r'([\w-]+)="([^"]*)"')
#: the inputs that say which operation a form is (their values tell the forms apart)
OPERATIONS = ("op", "action")


@dataclass(frozen=True)
class W:
    """A web form field: the rule of who may post it, and the values refused."""

    rule: str
    bad: tuple[str, ...] = ()
    #: values only the site admin may give (anybody else: 400 naming the field)
    site_only: tuple[str, ...] = ()
    #: what the page says of a refused value (None: the field's name, as ``name: why``)
    says: str | None = None


@dataclass(frozen=True)
class Form:
    template: str
    #: the values of its op/action inputs ("" when it has none)
    ops: tuple[str, ...]
    fields: dict[str, W]
    #: where it posts, as whom the refusals are tried, and the rest of a good post
    path: str = ""
    role: str = "site_admin"
    base: dict[str, str] = field(default_factory=dict)


def forms_in_templates() -> list[tuple[str, tuple[str, ...], frozenset[str]]]:
    """(template, op values, field names) of every POST form the templates render; names
    built at render time (``{{ f.name }}``) are left out."""
    found = []
    for path in sorted(TEMPLATES.glob("*.html")):
        for attrs, inner in _FORM.findall(path.read_text(encoding="utf-8")):
            if dict(_ATTR.findall(attrs)).get("method") != "post":
                continue
            names: set[str] = set()
            ops: set[str] = set()
            for tag in _INPUT.findall(inner):
                a = dict(_ATTR.findall(tag))
                name = a.get("name", "")
                if not name or name == "csrf_token" or "{" in name:
                    continue
                names.add(name)
                if name in OPERATIONS and "value" in a and "{" not in a["value"]:
                    ops.add(a["value"])
            if names:
                found.append((path.name, tuple(sorted(ops)), frozenset(names)))
    return found


OWN = f"/lists/{d.list_id('own_list')}"
ADDRESS = ("not an address",)
NOBODY = ("nobody@nowhere.example",)
#: the public subscription page words a bad address for a visitor, without field names
PUBLIC_SAYS = "not an email address"
#: filled in by the test: the own list's membership of the plain member
MEMBER_ID = "{member_id}"

FORMS: list[Form] = [
    # the account
    Form(
        "account.html",
        ("preferred",),
        {"action": W("login"), "email": W("login", NOBODY)},
        "/account",
        "member",
        {"action": "preferred"},
    ),
    Form(
        "account.html",
        ("remove",),
        {"action": W("login"), "email": W("login", NOBODY)},
        "/account",
        "member",
        {"action": "remove"},
    ),
    Form(
        "account.html",
        ("add",),
        {"action": W("login"), "email": W("login", ADDRESS)},
        "/account",
        "member",
        {"action": "add"},
    ),
    Form(
        "account.html",
        ("password",),
        {
            "action": W("login"),
            "current_password": W("login", ("not my password",)),
            "password": W("login", ("short",)),
            "password_again": W("login"),
        },
        "/account",
        "member",
        {
            "action": "password",
            "current_password": d.PASSWORD,
            "password": "a new long password",
            "password_again": "a new long password",
        },
    ),
    Form(
        "account.html",
        ("delete",),
        {"action": W("login"), "sure": W("login", ("",)), "password": W("login", ("wrong",))},
        "/account",
        "member",
        {"action": "delete", "sure": "1", "password": d.PASSWORD},
    ),
    Form(
        "account_preferences.html",
        (),
        {
            "delivery_mode": W("login", ("pigeon",)),
            "delivery": W("login"),
            "preferred_language": W("login", ("xx-nowhere",)),
        },
        "/account/preferences",
        "member",
    ),
    Form("account_verify.html", (), {"password": W("token")}),
    Form(
        "archive_compose.html",
        (),
        {"sender": W("archive_login"), "subject": W("archive_login"), "body": W("archive_login")},
    ),
    Form(
        "signup.html",
        (),
        {n: W("visitor") for n in ("email", "display_name", "password", "password_again")},
    ),
    Form("login.html", (), {n: W("public") for n in ("next", "email", "password")}),
    Form("reset_request.html", (), {"email": W("public")}),
    Form("reset_password.html", (), {"password": W("token"), "password_again": W("token")}),
    Form("oneclick.html", (), {"List-Unsubscribe": W("token")}),
    # a list's public pages
    Form(
        "listinfo.html",
        (),
        {"email": W("list_see", ADDRESS, says=PUBLIC_SAYS), "display_name": W("list_see")},
        f"{OWN}/subscribe",
        "anonymous",
    ),
    Form(
        "subscribe.html",
        (),
        {"email": W("list_see", ADDRESS, says=PUBLIC_SAYS), "display_name": W("list_see")},
        f"{OWN}/subscribe",
        "anonymous",
    ),
    Form(
        "mine.html",
        (),
        {"member_id": W("login"), "delivery_mode": W("login", ("pigeon",)), "delivery": W("login")},
        "/my",
        "member",
        {"member_id": MEMBER_ID},
    ),
    Form(
        "mine.html",
        (),
        {
            "member_id": W("login"),
            "topics_form": W("login"),
            "topics": W("login"),
            "nonmatching": W("login"),
        },
    ),
    Form(
        "mine.html",
        (),
        {"preferred_language": W("login", ("xx-nowhere",))},
        "/my",
        "member",
    ),
    # list owners
    Form(
        "members.html",
        ("add",),
        {
            "op": W("list_admin"),
            "email": W("list_admin", ADDRESS),
            "display_name": W("list_admin"),
            "role": W("list_admin", ("overlord",)),
        },
        f"{OWN}/members",
        "owner",
        {"op": "add", "role": "owner", "email": "new@people.example"},
    ),
    Form(
        "members.html",
        ("moderation",),
        {
            "op": W("list_admin"),
            "role": W("list_admin", ("overlord",)),
            "email": W("list_admin", NOBODY),
            "moderation_action": W("list_admin", ("sometimes",)),
        },
        f"{OWN}/members",
        "owner",
        {"op": "moderation", "role": "member", "email": d.SUBSCRIBER["own_list"]},
    ),
    Form(
        "members.html",
        ("remove",),
        {"op": W("list_admin"), "role": W("list_admin"), "email": W("list_admin", NOBODY)},
        f"{OWN}/members",
        "owner",
        {"op": "remove", "role": "owner"},
    ),
    Form(
        "mass.html",
        (),
        {n: W("list_admin") for n in ("addresses", "op", "confirm_name", "quiet")},
    ),
    Form("bans.html", ("remove",), {"op": W("list_admin"), "ban_id": W("list_admin")}),
    Form("bans.html", (), {"email": W("list_admin", ADDRESS)}, f"{OWN}/bans", "owner"),
    Form("header_matches.html", ("remove",), {"op": W("list_admin"), "match_id": W("list_admin")}),
    Form(
        "header_matches.html",
        (),
        {
            "header": W("list_admin"),
            "pattern": W("list_admin", ("^(unclosed",)),
            "action": W("list_admin", ("explode",)),
        },
        f"{OWN}/header-matches",
        "owner",
        {"header": "x-spam", "pattern": "yes", "action": "discard"},
    ),
    Form(
        "template_edit.html", ("preview", "save"), {"op": W("list_admin"), "text": W("list_admin")}
    ),
    Form("template_edit.html", ("reset",), {"op": W("list_admin")}),
    Form(
        "roster_sources.html",
        ("sync",),
        {n: W("list_admin") for n in ("op", "role", "dry_run", "force")},
    ),
    Form(
        "roster_sources.html",
        ("save",),
        {n: W("list_site") for n in ("op", "role", "bind_password", "enabled")}
        | {"kind": W("list_site", ("nonsense",))},
        f"{OWN}/roster-sources",
        "site_admin",
        {"op": "save", "role": "member"},
    ),
    Form("roster_sources.html", ("remove",), {"op": W("list_site"), "role": W("list_site")}),
    # moderators
    Form("held_queue.html", (), {"request_id": W("list_read")}),
    Form(
        "requests.html",
        ("accept", "defer", "discard", "reject"),
        {"request_id": W("list_read"), "reason": W("list_read"), "action": W("list_read")},
    ),
    # domain owners, the site admin
    Form(
        "domain.html",
        ("create",),
        {
            "op": W("domain"),
            "list_name": W("domain", ("bad name", "")),
            "description": W("domain"),
            "style_name": W("domain", ("no-such-style",)),
        },
        f"/domains/{d.HOST_B}",
        "domain_owner",
        {"op": "create", "list_name": "new"},
    ),
    Form(
        "domain.html",
        ("remove",),
        {
            "op": W("domain"),
            "list_id": W("domain", (d.list_id("own_list"),)),
            "confirm_name": W("domain", ("wrong",)),
        },
        f"/domains/{d.HOST_B}",
        "domain_owner",
        {"op": "remove", "list_id": d.list_id("other_domain")},
    ),
    Form(
        "domain.html",
        ("alias",),
        {
            "op": W("domain"),
            # H3: a domain owner clears it; naming one is the site admin's
            "alias_domain": W("domain", ("com", d.HOST_A, "not a domain"), ("lists.b.example",)),
        },
        f"/domains/{d.HOST_B}",
        "domain_owner",
        {"op": "alias"},
    ),
    Form(
        "domain.html",
        ("add_owner",),
        {"op": W("domain"), "email": W("domain", NOBODY)},
        f"/domains/{d.HOST_B}",
        "site_admin",  # L6: a domain's owners are the site admin's to change
        {"op": "add_owner"},
    ),
    Form(
        "domain.html",
        ("remove_owner",),
        {"op": W("domain"), "email": W("domain", NOBODY)},
        f"/domains/{d.HOST_B}",
        "site_admin",  # L6: a domain's owners are the site admin's to change
        {"op": "remove_owner"},
    ),
    Form(
        "people.html",
        ("ban", "moderate", "remove"),
        {
            "email": W("staff"),
            "lists": W("staff"),
            "action": W("staff"),
            "moderation_action": W("staff"),
        },
    ),
]
