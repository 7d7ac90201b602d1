"""A MIME body's transfer encoding, undone and done again (decoration, the approval line)."""

from __future__ import annotations

import base64
import quopri

#: transfer encodings that leave the bytes as they are
PLAIN_CTE = frozenset({"", "7bit", "8bit", "binary"})


def decode_body(body: bytes, cte: str) -> bytes | None:
    """The bytes ``body`` stands for in the transfer encoding ``cte`` (lower case); None
    when the encoding is unknown or the body broken."""
    if cte in PLAIN_CTE:
        return body
    if cte == "quoted-printable":
        return quopri.decodestring(body)
    if cte == "base64":
        try:
            return base64.b64decode(body)
        except ValueError:
            return None
    return None


def encode_body(data: bytes, cte: str) -> tuple[bytes, str]:
    """(body, transfer encoding) for ``data`` in the post's transfer encoding."""
    if cte == "base64":
        encoded = base64.encodebytes(data).replace(b"\n", b"\r\n")
        return encoded, cte
    if cte == "quoted-printable":
        lf = data.replace(b"\r\n", b"\n")
        return quopri.encodestring(lf).replace(b"\n", b"\r\n"), cte
    if cte in {"", "7bit"} and not data.isascii():
        return data, "8bit"
    return data, cte
