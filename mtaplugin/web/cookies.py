"""The session cookie: signed (HMAC-SHA256), HttpOnly, SameSite=Lax, Secure over https.

It holds who is logged in (a user_id and a fingerprint of the password hash, so that a new
password ends every old session), the CSRF token of the session, and when it was issued.
Nothing is kept on the server but the log-outs: a log-out writes the session's name
(:func:`session_id`) into the audit log, and a cookie of a logged-out session is refused
from then on, even by a copy of it kept elsewhere.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass
from datetime import datetime

COOKIE = "mtaplugin_session"
#: a session lasts this many seconds after the log in
MAX_AGE = 12 * 3600
#: the audit log's action of a log-out
LOGOUT = "web.logout"


@dataclass(frozen=True)
class WebSession:
    csrf: str
    user_id: str | None = None
    #: fingerprint of the user's password hash when the session began
    pw: str = ""
    issued: int = 0
    #: what the last action did, shown once by the page it redirects to (POST-redirect-GET)
    flash: tuple[str, ...] = ()

    @classmethod
    def anonymous(cls, now: datetime) -> WebSession:
        """A session of no one, issued ``now`` (the web app's clock)."""
        return cls(csrf=secrets.token_urlsafe(24), issued=int(now.timestamp()))

    @classmethod
    def logged_in(cls, user_id: str, password_hash: str | None, now: datetime) -> WebSession:
        """A new session for a user who logs in ``now``, with a new CSRF token (so no
        session fixation)."""
        return cls(
            csrf=secrets.token_urlsafe(24),
            user_id=user_id,
            pw=password_fingerprint(password_hash),
            issued=int(now.timestamp()),
        )


def session_id(session: WebSession) -> str:
    """A name for one log-in session (its CSRF token is new at every log in), as written
    into the audit log at log-out; the token itself is never written anywhere."""
    return "session:" + hashlib.sha256(session.csrf.encode()).hexdigest()[:32]


def password_fingerprint(password_hash: str | None) -> str:
    return hashlib.sha256((password_hash or "").encode()).hexdigest()[:16]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def dump(key: bytes, session: WebSession) -> str:
    payload = _b64(
        json.dumps(
            {
                "c": session.csrf,
                "u": session.user_id,
                "p": session.pw,
                "t": session.issued,
                "f": list(session.flash),
            },
            separators=(",", ":"),
        ).encode()
    )
    mac = _b64(hmac.new(key, payload.encode(), hashlib.sha256).digest())
    return f"{payload}.{mac}"


def load(key: bytes, value: str, now: datetime) -> WebSession | None:
    """The session of a genuine cookie that has not expired by ``now`` (the web app's
    clock), else None."""
    payload, dot, mac = value.partition(".")
    if not dot:
        return None
    expected = _b64(hmac.new(key, payload.encode(), hashlib.sha256).digest())
    if not hmac.compare_digest(mac, expected):
        return None
    try:
        data = json.loads(_unb64(payload))
        session = WebSession(
            csrf=str(data["c"]),
            user_id=data["u"] if isinstance(data["u"], str) else None,
            pw=str(data["p"]),
            issued=int(data["t"]),
            flash=tuple(str(m) for m in data.get("f") or ()),
        )
    except (binascii.Error, ValueError, KeyError, TypeError):
        return None
    if now.timestamp() - session.issued > MAX_AGE:
        return None
    return session
