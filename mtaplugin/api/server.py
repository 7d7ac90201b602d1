"""``mtaplugin api``: the Falcon app under gunicorn."""

from __future__ import annotations

import logging
from typing import Any

from gunicorn.app.base import BaseApplication

from mtaplugin.api.app import create_app
from mtaplugin.config import Settings, api_is_loopback
from mtaplugin.web.mount import mount

log = logging.getLogger(__name__)


class _Gunicorn(BaseApplication):
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        super().__init__()

    def load_config(self) -> None:
        self.cfg.set("bind", [self.settings.api.listen])
        self.cfg.set("workers", self.settings.api.workers)
        self.cfg.set("proc_name", "mtaplugin-api")
        self.cfg.set("accesslog", "-")
        self.cfg.set("graceful_timeout", 5)

    def load(self) -> Any:
        # The web pages share the process: /3.0/ and /3.1/ are the API, the rest the web UI.
        return mount(create_app(self.settings), self.settings)


def run(settings: Settings) -> None:
    if not api_is_loopback(settings):
        log.warning("the REST API listens on %s, not on loopback", settings.api.listen)
    _Gunicorn(settings).run()
