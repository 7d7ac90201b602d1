"""Hypothesis strategies for hostile mail: MIME trees, header soups, encodings and SMTP
envelopes, rendered to the raw bytes an MTA would hand mtaplugin.

The profiles: ``default`` (``make test``: a modest number of examples per property, so
that every property together stays well under two minutes on a busy machine) and ``long``
(``HYPOTHESIS_PROFILE=long``: many more, for a fuzzing run).  Importing this module loads
the one ``HYPOTHESIS_PROFILE`` names.
"""

from __future__ import annotations

import base64
import os
import quopri
from dataclasses import dataclass, field

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

settings.register_profile(
    "default",
    max_examples=40,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "long",
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

LIST = "team@lists.example.org"

# --- bits ---------------------------------------------------------------------------------
#: charsets a post may declare: common ones, odd ones Python knows, and unknown ones
CHARSETS = st.sampled_from(
    [
        "us-ascii",
        "utf-8",
        "UTF-8",
        "iso-8859-1",
        "windows-1252",
        "iso-2022-jp",
        "shift_jis",
        "koi8-r",
        "utf-16",
        "utf-7",
        "gb2312",
        "x-unknown",
        "unknown-8bit",
        "",
        '"utf-8"',
        "utf-8; format=flowed",
    ]
)
CTES = st.sampled_from(
    ["", "7bit", "8bit", "binary", "base64", "quoted-printable", "BASE64", "x-uuencode", "bogus"]
)
#: text with what mail really carries: non-ASCII, controls, NUL, lone CR/LF
TEXT = st.text(
    alphabet=st.one_of(
        st.characters(codec="utf-8", exclude_categories=("Cs",)),
        st.sampled_from(["\r", "\n", "\x00", "\t", " ", "=", "?", "-", "é", "日"]),
    ),
    max_size=80,
)
ASCII_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-._", min_size=1, max_size=12)


@st.composite
def encoded_words(draw: st.DrawFn) -> str:
    """RFC 2047 encoded words, valid and broken."""
    text = draw(TEXT)
    charset = draw(
        st.sampled_from(["utf-8", "iso-8859-1", "utf-7", "utf-16", "x-nope", "", "koi8-r"])
    )
    kind = draw(st.sampled_from(["B", "Q", "b", "q", "X"]))
    try:
        data = text.encode(charset or "utf-8", "replace")
    except LookupError:
        data = text.encode("utf-8")
    if kind.upper() == "B":
        payload = base64.b64encode(data).decode()
        if draw(st.booleans()):
            payload = payload[: draw(st.integers(0, len(payload)))]  # broken padding
    else:
        payload = quopri.encodestring(data, header=True).decode()
        if draw(st.booleans()):
            payload += "=" + draw(st.sampled_from(["", "Z", "4", "ZZ"]))  # broken escape
    close = draw(st.sampled_from(["?=", "?=", "", "?"]))
    return f"=?{charset}?{kind}?{payload}{close}"


def _raw_text(draw: st.DrawFn) -> bytes:
    """A header value's bytes: ASCII, UTF-8 (RFC 6532), Latin-1, or random 8-bit."""
    how = draw(st.sampled_from(["ascii", "utf-8", "latin-1", "bytes", "words"]))
    if how == "bytes":
        return draw(st.binary(max_size=60))
    if how == "words":
        words = draw(st.lists(st.one_of(encoded_words(), ASCII_WORD), max_size=4))
        return " ".join(words).encode()
    return draw(TEXT).encode(how, "replace")


# --- addresses and envelopes --------------------------------------------------------------
@st.composite
def addresses(draw: st.DrawFn) -> str:
    """Envelope and header addresses, ordinary and odd: quoted local parts, IDN, empty,
    source routes, no domain, comments."""
    local = draw(
        st.one_of(
            ASCII_WORD,
            st.sampled_from(
                [
                    '"john smith"',
                    '"a@b"',
                    '"\\"quoted\\""',
                    "jürgen",
                    "用户",
                    "a+tag",
                    "..dots..",
                    "",
                    "%percent",
                    "o'neil",
                    "x" * 70,
                ]
            ),
        )
    )
    domain = draw(
        st.one_of(
            st.sampled_from(
                [
                    "example.com",
                    "bücher.example",
                    "xn--bcher-kva.example",
                    "例え.jp",
                    "[127.0.0.1]",
                    "[IPv6:::1]",
                    "lists.example.org",
                    "",
                    "EXAMPLE.COM",
                    "a." * 40 + "com",
                ]
            ),
            ASCII_WORD.map(lambda w: w + ".example"),
        )
    )
    return f"{local}@{domain}" if domain or draw(st.booleans()) else local


@st.composite
def envelopes(draw: st.DrawFn) -> tuple[str, list[str]]:
    """(mail_from, recipients as Postfix gives them): an empty sender and odd recipients
    included; the list's address is always among them."""
    mail_from = draw(st.one_of(st.just(""), st.just("<>"), addresses()))
    others = draw(st.lists(addresses(), max_size=3))
    rcpts = [f"<{LIST}>", *(f"<{a}>" for a in others)]
    return mail_from, draw(st.permutations(rcpts))


# --- header soups -------------------------------------------------------------------------
HEADER_NAMES = st.sampled_from(
    [
        "From",
        "To",
        "Cc",
        "Subject",
        "Reply-To",
        "Sender",
        "Message-ID",
        "Date",
        "In-Reply-To",
        "References",
        "MIME-Version",
        "Content-Type",
        "Content-Transfer-Encoding",
        "Received",
        "List-Post",
        "List-Id",
        "Precedence",
        "Approved",
        "Urgent",
        "X-Spam-Flag",
        "Return-Receipt-To",
        "Disposition-Notification-To",
        "DKIM-Signature",
        "Authentication-Results",
        "Archived-At",
        "X-Topics",
        "Keywords",
        "subject",
        "FROM",
    ]
)


@st.composite
def header_fields(draw: st.DrawFn) -> bytes:
    """One header field's lines: any name, any value; folded, very long, with NULs,
    8-bit bytes, broken encoded words; sometimes without a colon at all."""
    name = draw(st.one_of(HEADER_NAMES, ASCII_WORD.map(lambda w: "X-" + w)))
    value = _raw_text(draw)
    if name.lower() in {"from", "to", "cc", "reply-to", "sender"} and draw(st.booleans()):
        shown = draw(
            st.sampled_from(["", "Ann Example ", '"Smith, John" ', "=?utf-8?q?J=C3=BCrgen?= "])
        )
        value = f"{shown}<{draw(addresses())}>".encode("utf-8", "surrogateescape")
    if draw(st.integers(0, 9)) == 0:
        value = value * draw(st.integers(10, 200))  # very long (unfolded, over 998)
    if draw(st.booleans()):
        pieces = value.split(b" ")
        value = b"\r\n\t".join(pieces) if len(pieces) > 1 else value  # folded
    sep = draw(st.sampled_from([b": ", b":", b" : ", b":\t"]))
    if draw(st.integers(0, 14)) == 0:
        sep = b" "  # no colon: not a header at all
    return name.encode() + sep + value


@st.composite
def header_soups(draw: st.DrawFn, sender: str | None = None) -> list[bytes]:
    """A header block's fields (duplicates allowed); ``sender``: the first From: is this."""
    fields = draw(st.lists(header_fields(), max_size=12))
    if sender is not None:
        fields.insert(0, f"From: {sender}".encode())
    return fields


# --- MIME trees ---------------------------------------------------------------------------
@dataclass
class Part:
    """A MIME part to render: a leaf (``payload``) or a multipart (``children``)."""

    ctype: str
    params: str = ""
    cte: str = ""
    payload: bytes = b""
    children: list[Part] = field(default_factory=list)
    boundary: str = ""
    #: how the multipart is broken: "" (not), "no-close", "no-param", "wrong"
    broken: str = ""
    extra: list[bytes] = field(default_factory=list)


LEAF_TYPES = st.sampled_from(
    [
        "text/plain",
        "text/plain",
        "text/html",
        "text/calendar",
        "application/octet-stream",
        "application/ms-tnef",
        "application/pgp-signature",
        "application/pkcs7-signature",
        "image/png",
        "message/delivery-status",
        "text/rfc822-headers",
        "TEXT/PLAIN",
        "text",
        "bogus",
        "",
    ]
)
MULTI_TYPES = st.sampled_from(
    [
        "multipart/mixed",
        "multipart/alternative",
        "multipart/related",
        "multipart/signed",
        "multipart/report",
        "multipart/appledouble",
        "multipart/digest",
        "multipart/x-unknown",
    ]
)
BOUNDARIES = st.one_of(
    ASCII_WORD,
    st.sampled_from(["", " ", "==", "a b c", "--", "x" * 75, "'quoted'", "=_Part_0_1.2", "é"]),
)


@st.composite
def leaves(draw: st.DrawFn) -> Part:
    ctype = draw(LEAF_TYPES)
    charset = draw(CHARSETS)
    cte = draw(CTES)
    text = draw(TEXT)
    try:
        data = text.encode(charset.split(";")[0].strip('"') or "utf-8", "replace")
    except LookupError:
        data = text.encode("utf-8")
    if draw(st.booleans()):
        data = draw(st.binary(max_size=200))
    low = cte.lower()
    if low == "base64":
        data = base64.encodebytes(data)
        if draw(st.booleans()):
            data = data[: draw(st.integers(0, len(data)))] + draw(
                st.sampled_from([b"", b"!!", b"="])
            )
    elif low == "quoted-printable":
        data = quopri.encodestring(data)
        if draw(st.booleans()):
            data += draw(st.sampled_from([b"=", b"=Z", b"=\r", b"=4"]))
    if draw(st.integers(0, 9)) == 0:
        data += b"y" * draw(st.integers(999, 3000))  # a line over 998 octets
    params = f"; charset={charset}" if charset and draw(st.booleans()) else ""
    if draw(st.booleans()):
        params += (
            f'; name="{draw(st.sampled_from(["a.txt", "winmail.dat", "x.exe", "é.pdf", ""]))}"'
        )
    return Part(ctype, params, cte, data)


def _multipart(children: st.SearchStrategy[list[Part]]) -> st.SearchStrategy[Part]:
    @st.composite
    def make(draw: st.DrawFn) -> Part:
        return Part(
            draw(MULTI_TYPES),
            children=draw(children),
            boundary=draw(BOUNDARIES),
            broken=draw(st.sampled_from(["", "", "", "no-close", "no-param", "wrong"])),
            extra=[draw(st.binary(max_size=20))] if draw(st.booleans()) else [],
        )

    return make()


def mime_trees() -> st.SearchStrategy[Part]:
    """A MIME tree: leaves, multiparts nested a few deep, message/rfc822 forwards."""
    return st.recursive(
        leaves(),
        lambda children: st.one_of(
            _multipart(st.lists(children, max_size=4)),
            children.map(lambda inner: Part("message/rfc822", children=[inner])),
        ),
        max_leaves=8,
    )


def render(part: Part, eol: bytes = b"\r\n") -> tuple[list[bytes], bytes]:
    """(the part's own header fields, its body)."""
    if part.ctype == "message/rfc822":
        (inner,) = part.children
        fields, body = render(inner, eol)
        inner_bytes = eol.join([b"From: someone@example.com", *fields]) + eol + eol + body
        return [b"Content-Type: message/rfc822"], inner_bytes
    if not part.children and not part.ctype.startswith("multipart/"):
        fields = []
        if part.ctype or part.params:
            fields.append(f"Content-Type: {part.ctype}{part.params}".encode())
        if part.cte:
            fields.append(f"Content-Transfer-Encoding: {part.cte}".encode())
        return fields, part.payload
    boundary = part.boundary
    param = "" if part.broken == "no-param" else f'; boundary="{boundary}"'
    used = boundary + "x" if part.broken == "wrong" else boundary
    out: list[bytes] = [b"This is a multi-part message in MIME format.", *part.extra]
    for child in part.children:
        fields, body = render(child, eol)
        out.append(f"--{used}".encode())
        out.append(eol.join(fields) + eol + eol + body if fields else eol + body)
    if part.broken != "no-close":
        out.append(f"--{used}--".encode())
    return [f"Content-Type: {part.ctype}{param}".encode()], eol.join(out) + eol


@st.composite
def messages(draw: st.DrawFn, sender: str | None = None, extra: list[bytes] | None = None) -> bytes:
    """A whole message: a header soup, a MIME tree, line ends CRLF, LF, or mixed."""
    soup = draw(header_soups(sender))
    fields, body = render(draw(mime_trees()))
    if draw(st.booleans()):
        fields = [b"MIME-Version: 1.0", *fields]
    eol = draw(st.sampled_from([b"\r\n", b"\r\n", b"\n"]))
    # the sender's From: and the ``extra`` fields first, each a line of its own
    prefix = [*(soup[:1] if sender is not None else []), *(extra or [])]
    head = [*prefix, *(soup[1:] if sender is not None else soup), *fields]
    raw = eol.join(head) + eol + eol + body
    if draw(st.integers(0, 9)) == 0:
        at = raw.find(b"\r\n", len(eol.join(prefix)) + 1)
        if at >= 0:
            raw = raw[:at] + b"\r" + raw[at + 2 :]  # a bare CR
    return raw
