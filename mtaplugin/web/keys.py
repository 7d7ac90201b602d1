"""The web's signing key: ``site.secret_key``, or one generated once per ``var_dir``.

Sessions and CSRF tokens are signed with keys derived from it (one per purpose), so a
cookie can never be replayed as a one-click unsubscribe token or the other way round.
One-click unsubscribe links themselves are verified with ``site.secret_key`` only: the
mail hosts that sign them share the settings, not the var directory.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path

from mtaplugin.config import Settings

SECRET_FILE = "web-secret.key"


def site_secret(settings: Settings) -> bytes:
    if settings.site.secret_key:
        return settings.site.secret_key.encode()
    path = Path(settings.site.var_dir) / SECRET_FILE
    try:
        return path.read_bytes().strip()
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    value = secrets.token_urlsafe(32).encode()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another worker wrote it first
        return path.read_bytes().strip()
    with os.fdopen(fd, "wb") as fh:
        fh.write(value + b"\n")
    return value


def derive(secret: bytes, purpose: str) -> bytes:
    return hmac.new(secret, b"mtaplugin-web\0" + purpose.encode(), hashlib.sha256).digest()
