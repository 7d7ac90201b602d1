"""The REST API refuses writes a browser sends from another site.

HTTP Basic credentials that a browser cached (someone once opened ``/3.1/`` and typed the
admin's password into its prompt) go with every request to that origin, also with a
form that another site posts there: REST writes (form-encoded bodies, as Mailman's API
takes them) could be forged cross-site.  Browsers say where a request comes from
(``Sec-Fetch-Site``, ``Origin``); programs (mailmanclient, Postorius, scripts) send
neither, so they are not concerned:

- a write (``POST``, ``PUT``, ``PATCH``, ``DELETE``) whose ``Sec-Fetch-Site`` is neither
  ``same-origin`` nor ``none``, or whose ``Origin`` is not this server's, is refused with
  403 before its credentials are looked at;
- a browser (any ``Sec-Fetch-*`` header) that sends no valid credentials gets the 401
  without the ``WWW-Authenticate`` challenge, so that it shows no password prompt and
  caches no credentials.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import falcon

from mtaplugin.api.dialect import forbidden
from mtaplugin.i18n import _

WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
#: what ``Sec-Fetch-Site`` says of a request the user made on this site, or typed
_OWN = frozenset({"same-origin", "none"})


def is_browser(req: falcon.Request) -> bool:
    """Whether a browser sent the request (every current one sends ``Sec-Fetch-*``)."""
    return any(req.get_header(h) for h in ("Sec-Fetch-Site", "Sec-Fetch-Mode", "Sec-Fetch-Dest"))


def _foreign_origin(req: falcon.Request) -> bool:
    origin = req.get_header("Origin")
    if origin is None:
        return False
    parts = urlsplit(origin.strip())
    if not parts.scheme or not parts.hostname:
        return True  # "null" (a sandboxed frame, a redirect) or nonsense
    # the host names only: a proxy's Host: may leave out the port the browser saw
    host = urlsplit("//" + (req.get_header("Host") or "").strip()).hostname or ""
    return parts.hostname != host.lower()


def cross_site(req: falcon.Request) -> bool:
    site = (req.get_header("Sec-Fetch-Site") or "").strip().lower()
    return bool(site and site not in _OWN) or _foreign_origin(req)


class CrossSiteWrites:
    """Falcon middleware (before the credentials are checked): refuses a browser's write
    from another site."""

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        if req.method in WRITES and cross_site(req):
            raise forbidden(
                _(
                    "a browser may not change anything through the REST API from another "
                    "site (Sec-Fetch-Site or Origin)"
                )
            )
