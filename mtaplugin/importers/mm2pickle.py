"""Reading a Mailman 2.1 ``config.pck`` safely.

A list's ``config.pck`` is a Python 2 pickle of a dictionary (protocol 0 to 2).  Unpickling
can call any importable callable, so the loader refuses every class but the one a 2.1
configuration holds (``Mailman.Bouncer._BounceInfo``, a member's bounce record), which it
reads as plain data.  Python 2 ``str`` values arrive as bytes and are decoded here: UTF-8
when they are valid UTF-8, else the charset Mailman 2.1 used for the list's language.
"""

from __future__ import annotations

import io
import pickle
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mtaplugin.errors import InvalidInput
from mtaplugin.i18n import _

#: the charsets of Mailman 2.1's languages (Defaults.py's LC_DESCRIPTIONS) that are not
#: UTF-8; a language not named here was UTF-8 (or ASCII) in 2.1
CHARSETS: dict[str, str] = {
    "en": "us-ascii",
    "ca": "iso-8859-1",
    "cs": "iso-8859-2",
    "da": "iso-8859-1",
    "de": "iso-8859-1",
    "el": "iso-8859-7",
    "es": "iso-8859-1",
    "et": "iso-8859-15",
    "eu": "iso-8859-15",
    "fi": "iso-8859-1",
    "fr": "iso-8859-1",
    "hr": "iso-8859-2",
    "hu": "iso-8859-2",
    "it": "iso-8859-1",
    "ja": "euc-jp",
    "ko": "euc-kr",
    "lt": "iso-8859-13",
    "nl": "iso-8859-1",
    "no": "iso-8859-1",
    "pl": "iso-8859-2",
    "pt": "iso-8859-1",
    "pt_BR": "iso-8859-1",
    "ro": "iso-8859-2",
    # Russian lists of 2.1 kept their texts in KOI8-R (UTF-8 is tried first, as for all)
    "ru": "koi8-r",
    "sk": "iso-8859-2",
    "sl": "iso-8859-2",
    "sr": "utf-8",
    "sv": "iso-8859-1",
    "tr": "iso-8859-9",
    "uk": "koi8-u",
    "zh_CN": "gb2312",
    "zh_TW": "big5",
}

#: what tells a 2.1 list configuration from any other pickled dictionary
_MARKERS = ("real_name", "members", "data_version")


@dataclass
class BounceRecord:
    """A member's ``_BounceInfo``: the score, the date of the last bounce (a 2.1 date
    tuple), the warnings still to send and the cookie of the last probe."""

    state: dict[str, Any] = field(default_factory=dict)

    def __setstate__(self, state: Any) -> None:
        if not isinstance(state, dict):
            raise pickle.UnpicklingError("a _BounceInfo whose state is not a dictionary")
        self.state = {_text(k, "ascii"): v for k, v in state.items()}

    @property
    def score(self) -> float:
        value = self.state.get("score", 0)
        return float(value) if isinstance(value, (int, float)) else 0.0

    @property
    def date(self) -> tuple[int, int, int] | None:
        value = self.state.get("date")
        if (
            isinstance(value, tuple)
            and len(value) >= 3
            and all(isinstance(v, int) for v in value[:3])
        ):
            return (value[0], value[1], value[2])
        return None


class _Restricted(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == ("Mailman.Bouncer", "_BounceInfo"):
            return BounceRecord
        raise pickle.UnpicklingError(f"{module}.{name}")


def _text(value: bytes | str, charset: str) -> str:
    if isinstance(value, str):
        return value
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        pass
    try:
        return value.decode(charset)
    except (UnicodeDecodeError, LookupError):
        return value.decode("latin-1")


def _decode(value: Any, charset: str) -> Any:
    if isinstance(value, (bytes, str)):
        return _text(value, charset)
    if isinstance(value, list):
        return [_decode(v, charset) for v in value]
    if isinstance(value, tuple):
        return tuple(_decode(v, charset) for v in value)
    if isinstance(value, Mapping):
        return {_decode(k, charset): _decode(v, charset) for k, v in value.items()}
    return value


def loads(data: bytes, source: str = "config.pck") -> dict[str, Any]:
    """The list configuration in ``data``; :class:`InvalidInput` (field ``config``) when
    it is not a Mailman 2.1 list's pickle, names a class no 2.1 configuration holds, or
    is cut short."""
    try:
        raw = _Restricted(io.BytesIO(data), encoding="bytes").load()
    except pickle.UnpicklingError as e:
        what = str(e)
        if "." in what and " " not in what:
            raise InvalidInput(
                "config",
                _(
                    "{source}: refused: the pickle names {what}, which no Mailman 2.1 "
                    "list configuration holds (nothing was run from it)"
                ).format(source=source, what=what),
            ) from None
        raise InvalidInput(
            "config",
            _("{source}: not a readable pickle ({error})").format(source=source, error=what),
        ) from None
    except (EOFError, ValueError, TypeError, IndexError, KeyError, AttributeError) as e:
        raise InvalidInput(
            "config",
            _("{source}: not a readable pickle, cut short or damaged ({error})").format(
                source=source, error=f"{type(e).__name__}: {e}"
            ),
        ) from None
    if not isinstance(raw, dict) or not all((m.encode() in raw or m in raw) for m in _MARKERS):
        raise InvalidInput(
            "config",
            _("{source}: this pickle is not a Mailman 2.1 list configuration (config.pck)").format(
                source=source
            ),
        )
    language = raw.get(b"preferred_language", raw.get("preferred_language", b"en"))
    language = _text(language, "ascii") if isinstance(language, (bytes, str)) else "en"
    decoded = _decode(raw, CHARSETS.get(language, "utf-8"))
    assert isinstance(decoded, dict)
    return decoded


def load(path: Path) -> dict[str, Any]:
    try:
        data = path.read_bytes()
    except OSError as e:
        raise InvalidInput(
            "config", _("cannot read {path}: {error}").format(path=path, error=e.strerror)
        ) from None
    return loads(data, str(path))
