"""The signing half of the no-op pymilter (``noop_milter --sign KEY``): the floor under
issue 34's goal (c) for any pymilter that signs (bench/vs_opendkim.py).

At end of message the no-op milter rebuilds the decorated copy it is about to make (the
Subject: changed, the List-* header fields appended, the body with its footer) and signs
it with mtaplugin's own signer, as mtaplugin's milter signs a list's copy: the ARC set and
the DKIM-Signature in one pass (``signing.seal_and_sign``: three RSA signatures), or with
``--dkim-only`` the DKIM-Signature alone (``signing.dkim_sign``: one, as OpenDKIM makes).
The fields the signer prepends go to the MTA as ``insheader`` at the top of the header
block, where mtaplugin's milter puts them.  Nothing is looked up, decided or stored.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from mtaplugin.frontends.milter.session import _milter_value
from mtaplugin.mailauth import sealer, signing
from mtaplugin.mailauth.signing import SigningKey
from mtaplugin.model.dkim import DEFAULT_SIGNED_HEADERS

#: the authserv-id of the no-op signer's ARC-Authentication-Results (the list host's)
AUTHSERV_ID = "lists.bench"


def load_key(path: Path, domain: str, selector: str) -> SigningKey:
    """The RSA key in the PEM file ``path``, signing for ``domain`` with the header fields
    a list domain's key signs by default."""
    headers = tuple(h.strip().lower() for h in DEFAULT_SIGNED_HEADERS.split(":") if h.strip())
    return SigningKey(domain, selector, path.read_bytes(), headers)


def decorated_copy(
    raw: bytes, subject: str, fields: Sequence[tuple[str, str]], footer: bytes
) -> bytes:
    """``raw`` (CRLF header block, blank line, body) as the no-op milter's edits leave it:
    its Subject: replaced by ``subject``, ``fields`` appended to the header block, ``footer``
    appended to the body."""
    end = raw.find(b"\r\n\r\n")
    head, body = (raw[: end + 2], raw[end + 4 :]) if end >= 0 else (raw, b"")
    lines: list[bytes] = []
    for line in head.splitlines(keepends=True):
        if line[:1] in (b" ", b"\t") and lines and lines[-1].lower().startswith(b"subject:"):
            continue  # a folded Subject: goes with the one it continues
        lines.append(b"Subject: %s\r\n" % subject.encode() if _is_subject(line) else line)
    lines += [f"{name}: {value}\r\n".encode() for name, value in fields]
    return b"".join(lines) + b"\r\n" + body + footer


def _is_subject(line: bytes) -> bool:
    return line.split(b":", 1)[0].strip().lower() == b"subject"


def signature_fields(copy: bytes, key: SigningKey, seal: bool) -> list[tuple[str, str]]:
    """The header fields the signer prepends to ``copy``, top first, as a milter hands
    them to the MTA (the value without its leading space, folded lines ending in LF):
    the ARC set, its Authentication-Results and the DKIM-Signature when ``seal``, else
    the DKIM-Signature alone."""
    if seal:
        signed = signing.seal_and_sign(copy, key, AUTHSERV_ID, f"{AUTHSERV_ID}; none")
    else:
        signed = signing.dkim_sign(copy, key)
    if not signed.endswith(copy):
        raise AssertionError("the signer changed the copy it signed")
    added, _body = sealer.parse(signed[: len(signed) - len(copy)] + b"\r\n")
    out = []
    for name, value in added:
        text = _milter_value(value.decode("ascii").strip(" \t").removesuffix("\r\n"))
        out.append((name.decode("ascii"), text or ""))
    return out
