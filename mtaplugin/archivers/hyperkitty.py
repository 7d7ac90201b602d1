"""HyperKitty's archiver API, as the mailman-hyperkitty plugin speaks it:

- ``POST {base_url}api/mailman/archive``, a multipart/form-data body with the field
  ``mlist`` (the list's posting address) and the file ``message`` (the post); 200 with
  ``{"url": ...}`` (the post's page) when archived (also when it had it already), 400 with
  ``{"error": ...}`` when it cannot archive that message;
- ``GET {base_url}api/mailman/urls?mlist=LIST[&msgid=ID]``: ``{"url": ...}``, the list's
  archive or a post's page.

Both carry ``Authorization: Token KEY`` (HyperKitty's ``MAILMAN_ARCHIVER_KEY``; since
mailman-hyperkitty 1.2.0 the key is no longer taken from the query: 401) and are answered
only from the addresses of its ``MAILMAN_ARCHIVER_FROM`` (loopback by default: 403).
HyperKitty's pages of a post and a list are ``{web}list/{list}/message/{hash}/`` and
``{web}list/{list}/`` (:func:`permalink`, :func:`list_url`), ``web`` being its public
address: what ``Archived-At``/``List-Archive`` name, computed without asking HyperKitty in
the SMTP transaction (the ``urls`` call answers the same).
"""

from __future__ import annotations

import json
import secrets
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from mtaplugin.archivers.errors import HandOffError
from mtaplugin.config import ArchiversSettings

#: HTTP answers that a later try may turn into a 200: the key or the address not (yet)
#: accepted, HyperKitty not (yet) serving the API, too busy
_TEMPORARY_HTTP = {401, 403, 404, 408, 425, 429}


def _base(base_url: str) -> str:
    return base_url.strip().rstrip("/") + "/"


def list_url(base_url: str, list_address: str) -> str:
    return f"{_base(base_url)}list/{list_address}/"


def permalink(base_url: str, list_address: str, message_id_hash: str) -> str:
    return f"{_base(base_url)}list/{list_address}/message/{message_id_hash}/"


def multipart(fields: dict[str, str], files: dict[str, tuple[str, bytes]]) -> tuple[bytes, str]:
    """A multipart/form-data body (RFC 7578) and its Content-Type."""
    boundary = "mtaplugin-" + secrets.token_hex(16)
    out = bytearray()
    for name, value in fields.items():
        out += f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'.encode()
        out += value.encode("utf-8") + b"\r\n"
    for name, (filename, data) in files.items():
        out += (
            f"--{boundary}\r\nContent-Disposition: form-data; "
            f'name="{name}"; filename="{filename}"\r\n'
            "Content-Type: message/rfc822\r\n\r\n"
        ).encode()
        out += data + b"\r\n"
    out += f"--{boundary}--\r\n".encode()
    return bytes(out), f"multipart/form-data; boundary={boundary}"


def _headers(site: ArchiversSettings) -> dict[str, str]:
    return {"Authorization": f"Token {site.hyperkitty_api_key}", "Accept": "application/json"}


def web_url(site: ArchiversSettings) -> str:
    """HyperKitty's public address (for the archive fields of a post)."""
    return site.hyperkitty_web_url.strip() or site.hyperkitty_base_url


def _call(request: urllib.request.Request, timeout: float) -> dict[str, Any]:
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            body = resp.read()
    except urllib.error.HTTPError as e:
        raise HandOffError(
            f"HyperKitty answered {e.code} {e.reason}",
            temporary=e.code >= 500 or e.code in _TEMPORARY_HTTP,
        ) from None
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise HandOffError(f"cannot reach HyperKitty: {reason}", temporary=True) from None
    try:
        answer = json.loads(body)
    except ValueError:
        raise HandOffError("HyperKitty answered no JSON", temporary=True) from None
    if not isinstance(answer, dict):
        raise HandOffError("HyperKitty answered no JSON object", temporary=True)
    return answer


def archive(site: ArchiversSettings, list_address: str, raw: bytes) -> str:
    """Hand ``raw`` to HyperKitty for the list ``list_address``: the post's URL there."""
    body, content_type = multipart({"mlist": list_address}, {"message": ("message.txt", raw)})
    request = urllib.request.Request(
        f"{_base(site.hyperkitty_base_url)}api/mailman/archive",
        data=body,
        method="POST",
        headers={"Content-Type": content_type, **_headers(site)},
    )
    return str(_call(request, site.hyperkitty_timeout).get("url") or "")


def urls(site: ArchiversSettings, list_address: str, message_id: str = "") -> str:
    """HyperKitty's URL of the list's archive, or of the post ``message_id`` (without
    angle brackets) in it."""
    params = {"mlist": list_address}
    if message_id:
        params["msgid"] = message_id.strip().strip("<>")
    request = urllib.request.Request(
        f"{_base(site.hyperkitty_base_url)}api/mailman/urls?{urllib.parse.urlencode(params)}",
        headers=_headers(site),
    )
    return str(_call(request, site.hyperkitty_timeout).get("url") or "")
