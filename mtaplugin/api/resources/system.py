"""``/system``: versions, a read-only view of the configuration, system preferences."""

from __future__ import annotations

import platform
from dataclasses import asdict, fields
from typing import Any

import falcon

from mtaplugin import __version__
from mtaplugin.api.dialect import not_found, plain, resource
from mtaplugin.api.resources.base import principal, url
from mtaplugin.config import Settings
from mtaplugin.i18n import _
from mtaplugin.model.preferences import SYSTEM_PREFERENCES

#: the posting pipelines ``/system/pipelines`` lists: a list's ``posting_pipeline`` must
#: name one (Mailman refuses another name with 400 too).  There is one: mtaplugin decides
#: a post by its own rules (docs/rules.md), whatever the name says.
POSTING_PIPELINES = ("default-posting-pipeline",)
#: configuration values never shown, not even to the site admin
_SECRET = {"admin_password", "url"}


class Versions:
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.media = resource(
            {
                "mailman_version": f"GNU Mailman 3.3.10 (compatible; mtaplugin {__version__})",
                "python_version": platform.python_version(),
                "api_version": req.context.api,
                "self_link": url(req, "system", "versions"),
            }
        )


class Configuration:
    """``/system/configuration[/{section}]``: mtaplugin's own settings, secrets left out."""

    def __init__(self, settings: Settings) -> None:
        self.sections: dict[str, dict[str, Any]] = {}
        for f in fields(settings):
            value = getattr(settings, f.name)
            if hasattr(value, "__dataclass_fields__"):
                self.sections[f.name] = {k: v for k, v in asdict(value).items() if k not in _SECRET}

    def on_get(self, req: falcon.Request, resp: falcon.Response, section: str = "") -> None:
        principal(req).require_admin()
        if not section:
            resp.media = resource({"sections": sorted(self.sections)})
            return
        if section not in self.sections:
            raise not_found(_("No such configuration section: {s}").format(s=section))
        body = {k: str(v) for k, v in self.sections[section].items()}
        body["self_link"] = url(req, "system", "configuration", section)
        resp.media = resource(body)


class SystemPreferences:
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        body = {k: plain(v) for k, v in SYSTEM_PREFERENCES.items()}
        body["self_link"] = url(req, "system", "preferences")
        resp.media = resource(body)


class Names:
    """``/system/pipelines`` and ``/system/chains``: the names Mailman's clients offer."""

    def __init__(self, key: str, names: list[str]) -> None:
        self.key = key
        self.names = names

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.media = resource({self.key: self.names})
