"""``mtaplugin api``: the Falcon app under gunicorn."""

from __future__ import annotations

import logging
import os
from typing import Any

from gunicorn.app.base import BaseApplication

from mtaplugin.api import exposure
from mtaplugin.api.access_log import RedactingLogger
from mtaplugin.api.app import create_app
from mtaplugin.api.background import TemplateFetcher
from mtaplugin.config import Settings, api_is_loopback
from mtaplugin.web import client_ip
from mtaplugin.web.app import create_web_app
from mtaplugin.web.mount import mount, split
from mtaplugin.wiring import build

log = logging.getLogger(__name__)


class _Gunicorn(BaseApplication):
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        super().__init__()

    def load_config(self) -> None:
        binds = [self.settings.api.listen]
        if self.settings.web.listen:
            binds.append(self.settings.web.listen)
        self.cfg.set("bind", binds)
        self.cfg.set("workers", self.settings.api.workers)
        self.cfg.set("proc_name", "mtaplugin-api")
        self.cfg.set("accesslog", "-")
        # the access log shows no token of a mailed link (/reset/<token> ...)
        self.cfg.set("logger_class", RedactingLogger)
        # the proxies whose X-Forwarded-Proto (and, for the log-in limit, X-Forwarded-For)
        # are believed: one setting for gunicorn and the web UI
        proxies = client_ip.networks(self.settings.web.forwarded_allow_ips)
        self.cfg.set("forwarded_allow_ips", ",".join(str(n) for n in proxies))
        self.cfg.set("graceful_timeout", 5)
        # gunicorn >= 25.1 opens a control socket for gunicornc, by default one per user
        # ($XDG_RUNTIME_DIR or ~/.gunicorn/gunicorn.ctl): two instances would take each
        # other's.  Ours is per instance, beside its state; off when the path is too long
        # for a unix socket.
        if "control_socket" in self.cfg.settings:
            path = control_socket(self.settings)
            if path is None:
                self.cfg.set("control_socket_disable", True)
            else:
                self.cfg.set("control_socket", path)
                self.cfg.set("control_socket_mode", 0o600)

    def load(self) -> Any:
        # The web pages share the process: /3.0/ and /3.1/ are the API, the rest the web UI;
        # with web.listen, each on its own listener only.  Each gunicorn worker loads the
        # app after the fork, so each has its own world.
        world = build(self.settings)
        TemplateFetcher(world).start()  # a site that runs only the API fetches templates too
        api = create_app(world.settings, world.sessions, world.clock)
        web = create_web_app(world.settings, world.sessions, world.clock)
        if self.settings.web.listen:
            return split(api, web, exposure.port_of(self.settings.web.listen))
        return mount(api, web)


#: the longest path a unix socket may have (sun_path is 108 bytes with its NUL)
_MAX_SOCKET_PATH = 107


def control_socket(settings: Settings) -> str | None:
    """This instance's gunicorn control socket (``gunicornc -s PATH``):
    ``<var_dir>/api-<port>.ctl``, so that two instances never share one; None when that
    path is too long for a unix socket (the control socket is then off)."""
    port = settings.api.listen.rpartition(":")[2]
    path = os.path.join(settings.site.var_dir, f"api-{port}.ctl")
    if len(os.fsencode(path)) > _MAX_SOCKET_PATH:
        log.warning("gunicorn control socket off: %s is too long for a unix socket", path)
        return None
    return path


def run(settings: Settings) -> None:
    exposure.check(settings)
    if not api_is_loopback(settings):
        log.warning("the REST API listens on %s, not on loopback", settings.api.listen)
    _Gunicorn(settings).run()
