"""Mailman's REST 3.1 dialect: reading parameters, writing representations, the errors.

Input comes from the query string and from a form-encoded body (body keys win; repeated
keys are lists; Python's ``True``/``False``/``None`` arrive as strings, as mailmanclient
sends them) or from a JSON body.  Output is JSON with Mailman's conventions: enums by name,
naive ISO datetimes, timedeltas as ``7d``, an ``http_etag`` on every resource.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import re
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any, Literal, TypeVar, overload
from urllib.parse import parse_qs

import falcon

from mtaplugin.i18n import _

_TRUE = {"true", "yes", "1", "on", "enable", "enabled", "y", "t"}
_FALSE = {"false", "no", "0", "off", "disable", "disabled", "n", "f"}
_DELTA_RE = re.compile(r"(\d+)\s*([wdhms])", re.IGNORECASE)
_DELTA_UNITS = {"w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1}

_E = TypeVar("_E", bound=StrEnum)


# --- errors -------------------------------------------------------------------------------
def bad_request(description: str) -> falcon.HTTPBadRequest:
    return falcon.HTTPBadRequest(title="400 Bad Request", description=description)


def missing(field: str) -> falcon.HTTPBadRequest:
    return bad_request(_("Missing Parameter: {field}").format(field=field))


def invalid(field: str, problem: str) -> falcon.HTTPBadRequest:
    return bad_request(
        _('Invalid Parameter "{field}": {problem}').format(field=field, problem=problem)
    )


def not_found(description: str = "") -> falcon.HTTPNotFound:
    return falcon.HTTPNotFound(title="404 Not Found", description=description or None)


def conflict(description: str) -> falcon.HTTPConflict:
    return falcon.HTTPConflict(title="409 Conflict", description=description)


def forbidden(description: str) -> falcon.HTTPForbidden:
    return falcon.HTTPForbidden(title="403 Forbidden", description=description)


# --- input --------------------------------------------------------------------------------
#: the largest number a setting takes (Mailman's integer columns)
INT32_MAX = 2**31 - 1
#: the largest page size and page number (Postorius asks for ``count=sys.maxsize``)
INT64_MAX = 2**63 - 1


class Params:
    """The request's parameters, each a list of values (strings, or JSON values)."""

    def __init__(self, values: dict[str, list[object]]) -> None:
        self.values = values

    @classmethod
    def of(cls, req: falcon.Request) -> Params:
        cached = getattr(req.context, "params", None)
        if isinstance(cached, Params):
            return cached
        values: dict[str, list[object]] = {
            k: list(v) for k, v in parse_qs(req.query_string, keep_blank_values=True).items()
        }
        if req.method not in ("GET", "HEAD"):
            raw = req.bounded_stream.read()
            if raw.strip():
                ctype = (req.content_type or "").split(";")[0].strip().lower()
                if ctype == "application/json":
                    try:
                        body = json.loads(raw)
                    except (ValueError, UnicodeDecodeError):
                        raise bad_request(_("the JSON body cannot be parsed")) from None
                    if not isinstance(body, dict):
                        raise bad_request(_("the JSON body must be an object"))
                    for key, value in body.items():
                        values[str(key)] = value if isinstance(value, list) else [value]
                else:
                    try:
                        text = raw.decode("utf-8")
                    except UnicodeDecodeError:
                        raise bad_request(_("the body is not UTF-8")) from None
                    for key, vals in parse_qs(text, keep_blank_values=True).items():
                        values[key] = list(vals)
        params = cls(values)
        req.context.params = params
        return params

    def __contains__(self, name: str) -> bool:
        return name in self.values

    def keys(self) -> list[str]:
        return list(self.values)

    def only(self, allowed: Iterable[str]) -> None:
        extra = sorted(set(self.values) - set(allowed))
        if extra:
            raise bad_request(_("Unexpected parameters: {names}").format(names=", ".join(extra)))

    def raw(self, name: builtins.str) -> object:
        """The one value given for ``name`` as it came (a string, or a JSON value), or None;
        the typed getters below read it."""
        vals = self.values.get(name)
        if not vals:
            return None
        if len(vals) > 1:
            raise invalid(name, _("give it once"))
        value: object = vals[0]
        return value

    @overload
    def str(
        self, name: builtins.str, default: builtins.str, *, required: bool = ...
    ) -> builtins.str: ...
    @overload
    def str(
        self, name: builtins.str, default: None = ..., *, required: Literal[True]
    ) -> builtins.str: ...
    @overload
    def str(
        self, name: builtins.str, default: None = ..., *, required: bool = ...
    ) -> builtins.str | None: ...
    def str(
        self, name: builtins.str, default: builtins.str | None = None, *, required: bool = False
    ) -> builtins.str | None:
        value = self.raw(name)
        if value is None:
            if required:
                raise missing(name)
            return default
        if isinstance(value, (dict, list)):
            raise invalid(name, _("expected a text value"))
        return str(value)

    def text(self, name: builtins.str, default: builtins.str | None = None) -> builtins.str | None:
        """A text that may be Python's ``None`` sent as a string (mailmanclient does)."""
        value = self.str(name, default)
        return None if value in ("None", None) else value

    @overload
    def bool(self, name: builtins.str, default: builtins.bool) -> builtins.bool: ...
    @overload
    def bool(self, name: builtins.str, default: None = ...) -> builtins.bool | None: ...
    def bool(
        self, name: builtins.str, default: builtins.bool | None = None
    ) -> builtins.bool | None:
        value = self.raw(name)
        if value is None:
            return default
        return as_bool(name, value)

    @overload
    def int(
        self,
        name: builtins.str,
        default: builtins.int,
        *,
        minimum: builtins.int | None = ...,
        maximum: builtins.int = ...,
    ) -> builtins.int: ...
    @overload
    def int(
        self,
        name: builtins.str,
        default: None = ...,
        *,
        minimum: builtins.int | None = ...,
        maximum: builtins.int = ...,
    ) -> builtins.int | None: ...
    def int(
        self,
        name: builtins.str,
        default: builtins.int | None = None,
        *,
        minimum: builtins.int | None = None,
        maximum: builtins.int = INT32_MAX,
    ) -> builtins.int | None:
        value = self.raw(name)
        if value is None:
            return default
        return as_int(name, value, minimum, maximum)

    @overload
    def enum(self, name: builtins.str, kind: type[_E], default: _E) -> _E: ...
    @overload
    def enum(self, name: builtins.str, kind: type[_E], default: None = ...) -> _E | None: ...
    def enum(self, name: builtins.str, kind: type[_E], default: _E | None = None) -> _E | None:
        value = self.raw(name)
        if value is None:
            return default
        return as_enum(name, value, kind)

    def list(self, name: builtins.str) -> list[builtins.str]:
        return [str(v) for v in self.values.get(name, []) if v is not None]


def as_bool(name: str, value: object) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise invalid(name, _("expected a boolean, got {value!r}").format(value=value))


def as_int(name: str, value: object, minimum: int | None = None, maximum: int = INT32_MAX) -> int:
    if isinstance(value, bool):
        raise invalid(name, _("expected a whole number, got {value!r}").format(value=value))
    try:
        number = int(float(value)) if isinstance(value, float) else int(str(value).strip())
    except ValueError:
        try:
            as_float = float(str(value).strip())
        except ValueError:
            raise invalid(
                name, _("expected a whole number, got {value!r}").format(value=value)
            ) from None
        if not as_float.is_integer():
            raise invalid(
                name, _("expected a whole number, got {value!r}").format(value=value)
            ) from None
        number = int(as_float)
    if minimum is not None and number < minimum:
        raise invalid(name, _("must be at least {n}").format(n=minimum))
    if abs(number) > maximum:
        raise invalid(name, _("the number is too large"))
    return number


def as_enum(name: str, value: object, kind: type[_E]) -> _E:
    try:
        return kind(str(value).strip().lower())
    except ValueError:
        raise invalid(
            name,
            _("unknown value {value!r}; choose one of: {choices}").format(
                value=value, choices=", ".join(m.value for m in kind)
            ),
        ) from None


def as_timedelta(name: str, value: object) -> timedelta:
    text = str(value).strip().replace(" ", "")
    if text.isdigit():
        return timedelta(days=int(text))
    parts = _DELTA_RE.findall(text)
    if not parts or "".join(n + u for n, u in parts).lower() != text.lower():
        raise invalid(
            name, _("expected a duration like 7d, 12h or 1w2d, got {v!r}").format(v=value)
        )
    seconds = sum(int(n) * _DELTA_UNITS[u.lower()] for n, u in parts)
    if seconds > 3650 * 86400:
        raise invalid(name, _("the duration is too long"))
    return timedelta(seconds=seconds)


# --- output -------------------------------------------------------------------------------
def iso(value: datetime | None) -> str | None:
    """Mailman's naive ISO 8601 (UTC)."""
    if value is None:
        return None
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value.isoformat(timespec="seconds")


def delta(value: timedelta) -> str:
    seconds = int(value.total_seconds())
    days, rest = divmod(seconds, 86400)
    if not rest:
        return f"{days}d"
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    text = f"{days}d" if days else ""
    for n, unit in ((hours, "h"), (minutes, "m"), (secs, "s")):
        if n:
            text += f"{n}{unit}"
    return text


def plain(value: Any) -> Any:
    """A JSON-ready value in Mailman's representation."""
    if isinstance(value, StrEnum):
        return value.value
    if isinstance(value, datetime):
        return iso(value)
    if isinstance(value, timedelta):
        return delta(value)
    return value


def etag(body: dict[str, Any]) -> str:
    """A digest of the representation (bodies are built in a fixed key order)."""
    data = repr(body).encode()
    return f'"{hashlib.sha1(data, usedforsecurity=False).hexdigest()}"'


def resource(body: dict[str, Any], *, drop_none: bool = False) -> dict[str, Any]:
    """A representation with its ``http_etag``; ``drop_none`` omits keys without a value,
    as Mailman does for members, addresses and users."""
    if drop_none:
        body = {k: v for k, v in body.items() if v is not None}
    body["http_etag"] = etag(body)
    return body


def created(resp: falcon.Response, location: str) -> None:
    resp.status = falcon.HTTP_201
    resp.location = location
    resp.text = ""


def no_content(resp: falcon.Response) -> None:
    resp.status = falcon.HTTP_204
