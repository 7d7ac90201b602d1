"""A milter connection that does not come from the MTA cannot claim SMTP AUTH: the milter
believes ``{auth_authen}`` only on a socket only the MTA can open."""

from __future__ import annotations

from typing import Any

import pytest

from mtaplugin import config
from mtaplugin.config import InetSocket, UnixSocket
from mtaplugin.config.values import TrustAuth
from mtaplugin.errors import ConfigError
from mtaplugin.frontends.milter.session import milter_class, trusts_auth

UNIX = UnixSocket("/var/spool/postfix/mtaplugin/milter.sock")
LOOPBACK = InetSocket("127.0.0.1", 8891)


@pytest.mark.parametrize(
    ("sock", "trust", "believed"),
    [
        (UNIX, TrustAuth.unix, True),
        (UNIX, TrustAuth.always, True),
        (UNIX, TrustAuth.never, False),
        (LOOPBACK, TrustAuth.unix, False),  # any local user can connect to a TCP port
        (LOOPBACK, TrustAuth.always, True),
        (InetSocket("::1", 8891), TrustAuth.always, True),
        (InetSocket("[::1]", 8891), TrustAuth.always, True),
        (LOOPBACK, TrustAuth.never, False),
        (InetSocket("192.0.2.7", 8891), TrustAuth.unix, False),
    ],
)
def test_whether_the_login_is_believed(sock: Any, trust: TrustAuth, believed: bool) -> None:
    assert trusts_auth(sock, trust) is believed


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.7", "mx.example.org"])
def test_trusting_logins_on_a_socket_off_loopback_is_refused(host: str) -> None:
    with pytest.raises(ConfigError) as bad:
        milter_class(InetSocket(host, 8891), TrustAuth.always)
    assert bad.value.key == "milter.trust_auth"


def _envelope_auth(sock: Any, trust: TrustAuth) -> str:
    base = milter_class(sock, trust)

    class Probe(base):  # type: ignore[valid-type,misc]
        def getsymval(self, sym: str) -> str | None:
            return {"{auth_authen}": "moderator@example.org"}.get(sym)

    m = Probe(None)
    m._protocol = 0  # what libmilter negotiated: nothing (so every callback replies)
    m.envfrom("<moderator@example.org>")
    return str(m.envelope.auth_user)


def test_the_login_reaches_the_envelope_only_where_it_is_believed() -> None:
    assert _envelope_auth(UNIX, TrustAuth.unix) == "moderator@example.org"
    assert _envelope_auth(LOOPBACK, TrustAuth.unix) == ""
    assert _envelope_auth(UNIX, TrustAuth.never) == ""


def test_the_setting_is_read_and_checked() -> None:
    s = config.load(None, environ={"MTAPLUGIN_MILTER_TRUST_AUTH": "never"})
    assert s.milter.trust_auth is TrustAuth.never
    assert config.load(None, environ={}).milter.trust_auth is TrustAuth.unix
    with pytest.raises(ConfigError) as bad:
        config.load(None, environ={"MTAPLUGIN_MILTER_TRUST_AUTH": "yes"})
    assert bad.value.key == "milter.trust_auth"
