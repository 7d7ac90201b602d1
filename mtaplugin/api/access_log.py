"""gunicorn's access log without the tokens that are credentials.

A password-reset link, a sign-up or address verification, a subscription confirmation, a
one-click unsubscribe link and a REST (un)subscription request carry their token in the
path (``/reset/<token>`` ...); whoever can read the journal could use them.  Every value
the access log may show (the request line, the path, the ``Referer`` of a page fetched
from such a link, any header or environment value a custom ``access_log_format`` names)
has the path segment after those prefixes replaced by ``[redacted]``.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import TYPE_CHECKING, Any, cast

from gunicorn.glogging import Logger

if TYPE_CHECKING:
    from gunicorn.glogging import _AtomsDict
    from gunicorn.http import Request
    from gunicorn.http.wsgi import Response

#: the path prefixes whose next segment is a token (``/3.1/lists/L/requests/count`` is not)
TOKEN_PATH = re.compile(
    r"(/(?:reset|confirm|account/verify|unsubscribe|requests)/)(?!count(?:[/?#\s\"]|$))"
    r"[^/?#\s\"]+"
)
REDACTED = "[redacted]"


def redact(text: str) -> str:
    """``text`` with every token of :data:`TOKEN_PATH` replaced."""
    return TOKEN_PATH.sub(rf"\1{REDACTED}", text)


class RedactingLogger(Logger):
    """gunicorn's logger, whose access-log values have the tokens redacted."""

    def atoms(
        self, resp: Response, req: Request, environ: Any, request_time: timedelta
    ) -> _AtomsDict:
        found = super().atoms(resp, req, environ, request_time)
        values = cast(dict[str, Any], found)
        for key, value in list(values.items()):
            if isinstance(value, str):
                values[key] = redact(value)
        return found
