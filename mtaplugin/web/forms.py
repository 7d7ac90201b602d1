"""Reading form posts: ``application/x-www-form-urlencoded`` bodies, parsed once."""

from __future__ import annotations

from urllib.parse import parse_qs

import falcon

from mtaplugin.errors import InvalidInput
from mtaplugin.i18n import _

#: the largest form accepted (a mass subscription of ~20 000 addresses)
MAX_FORM = 1_048_576


class Form:
    def __init__(self, values: dict[str, list[str]]) -> None:
        self.values = values

    def get(self, name: str, default: str = "") -> str:
        got = self.values.get(name)
        return got[0] if got else default

    def all(self, name: str) -> list[str]:
        return list(self.values.get(name, []))

    def __contains__(self, name: str) -> bool:
        return name in self.values

    def new_password(self) -> str:
        """The new ``password``, typed again as ``password_again``: :class:`InvalidInput`
        naming ``password`` when the two differ."""
        password = self.get("password")
        if password != self.get("password_again"):
            raise InvalidInput("password", _("the two passwords differ"))
        return password


def raw_body(req: falcon.Request) -> bytes:
    cached = getattr(req.context, "raw_body", None)
    if cached is None:
        length = req.content_length or 0
        if length > MAX_FORM:
            raise falcon.HTTPContentTooLarge(
                title=_("Too large"), description=_("the form is too large")
            )
        cached = req.bounded_stream.read(length) if length else b""
        req.context.raw_body = cached
    return cached


def form(req: falcon.Request) -> Form:
    cached = getattr(req.context, "form", None)
    if cached is None:
        body = raw_body(req) if req.method == "POST" else b""
        text = body.decode("utf-8", errors="replace")
        cached = Form(parse_qs(text, keep_blank_values=True, max_num_fields=20_000))
        req.context.form = cached
    return cached
