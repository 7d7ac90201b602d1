"""Preferences of a member, an address or a user (``.../preferences``), and a member's
resolved ones (``/members/{id}/all/preferences``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import falcon

from mtaplugin.api.dialect import (
    Params,
    as_bool,
    as_enum,
    invalid,
    no_content,
    plain,
    resource,
)
from mtaplugin.enums import DeliveryMode, DeliveryStatus
from mtaplugin.errors import InvalidInput
from mtaplugin.i18n import check_language
from mtaplugin.manage.members import check_delivery_mode
from mtaplugin.model.preferences import PREFERENCE_KEYS, SYSTEM_PREFERENCES, PreferencesMixin

_ENUMS: dict[str, type[DeliveryMode] | type[DeliveryStatus]] = {
    "delivery_mode": DeliveryMode,
    "delivery_status": DeliveryStatus,
}


def _parse(key: str, value: Any) -> Any:
    if key == "delivery_mode":
        return check_delivery_mode(as_enum(key, value, DeliveryMode), key)
    if key in _ENUMS:
        return as_enum(key, value, _ENUMS[key])
    if key == "preferred_language":
        try:
            return check_language(value, key)
        except InvalidInput as e:
            raise invalid(key, e.problem) from None
    return as_bool(key, value)


def body_of(target: PreferencesMixin, self_link: str) -> dict[str, Any]:
    body: dict[str, Any] = {}
    for key in PREFERENCE_KEYS:
        value = getattr(target, key)
        if value is not None:
            body[key] = plain(value)
    body["self_link"] = self_link
    return resource(body)


class Preferences:
    """``find(req, **params)`` returns the object whose preferences these are and its URL."""

    def __init__(self, find: Callable[..., tuple[PreferencesMixin, str]]) -> None:
        self.find = find

    def on_get(self, req: falcon.Request, resp: falcon.Response, **params: str) -> None:
        target, link = self.find(req, **params)
        resp.media = body_of(target, link)

    def _write(self, req: falcon.Request, resp: falcon.Response, full: bool, **params: str) -> None:
        target, _link = self.find(req, **params)
        p = Params.of(req)
        p.only(PREFERENCE_KEYS)
        values = {key: _parse(key, p.raw(key)) for key in PREFERENCE_KEYS if p.raw(key) is not None}
        for key in PREFERENCE_KEYS:
            if key in values:
                setattr(target, key, values[key])
            elif full:
                setattr(target, key, None)
        no_content(resp)

    def on_patch(self, req: falcon.Request, resp: falcon.Response, **params: str) -> None:
        self._write(req, resp, False, **params)

    def on_put(self, req: falcon.Request, resp: falcon.Response, **params: str) -> None:
        self._write(req, resp, True, **params)

    def on_delete(self, req: falcon.Request, resp: falcon.Response, **params: str) -> None:
        target, _link = self.find(req, **params)
        for key in PREFERENCE_KEYS:
            setattr(target, key, None)
        no_content(resp)


def resolved(chain: Sequence[PreferencesMixin | None], self_link: str) -> dict[str, Any]:
    """Member → address → user → system default, key by key."""
    body: dict[str, Any] = {}
    for key in PREFERENCE_KEYS:
        value = next(
            (getattr(t, key) for t in chain if t is not None and getattr(t, key) is not None),
            SYSTEM_PREFERENCES[key],
        )
        body[key] = plain(value)
    body["self_link"] = self_link
    return resource(body)
