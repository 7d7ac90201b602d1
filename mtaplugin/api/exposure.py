"""What the HTTP listeners expose, checked before gunicorn starts: the REST admin with its
default password only on a loopback address, and the web UI's own listener (``web.listen``)
on a port of its own.  Pure: the settings in, a :class:`ConfigError` naming the key out."""

from __future__ import annotations

from mtaplugin.config import Settings, is_loopback
from mtaplugin.config.listeners import DEFAULT_ADMIN_PASSWORD
from mtaplugin.errors import ConfigError
from mtaplugin.i18n import _


def check(settings: Settings) -> None:
    """Refuse settings that would publish the REST admin with its default password."""
    api, web = settings.api, settings.web
    if api.admin_password == DEFAULT_ADMIN_PASSWORD and not is_loopback(api.listen):
        raise ConfigError(
            "api.admin_password",
            _(
                "is still the default ({default!r}) while the REST API listens on {listen}, "
                "which is not a loopback address: set a password of your own "
                "(python3 -c 'import secrets; print(secrets.token_urlsafe(24))'), or "
                "listen on 127.0.0.1 (api.listen) and give the web UI a listener of its "
                "own (web.listen)"
            ).format(default=DEFAULT_ADMIN_PASSWORD, listen=api.listen),
        )
    if web.listen and port_of(web.listen) == port_of(api.listen):
        raise ConfigError(
            "web.listen",
            _("{listen} uses the port of api.listen; the web UI needs a port of its own").format(
                listen=web.listen
            ),
        )


def port_of(listen: str) -> int:
    return int(listen.rpartition(":")[2])
