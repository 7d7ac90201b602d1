"""The message a transform works on: its header fields and its body bytes.

Most transforms touch headers only (cleanse, subject prefix, Reply-To, List-*), and a
10 MB attachment should not be parsed to add ``List-Id``.  A :class:`Draft` therefore keeps
the header block as an ordered list of ``(name, value)`` fields, with the values exactly as
the compat32 parser gives them (folding kept, 8-bit bytes as surrogate escapes), and the
body as the bytes that follow the blank line.  A transform that needs the MIME tree asks
for :meth:`Draft.tree` and hands the changed tree back with :meth:`Draft.set_tree`.

Every value a transform writes (:meth:`Draft.set`, :meth:`Draft.append`,
:meth:`Draft.prepend`) is checked: a CR or LF that does not fold it, which would start a
field of its own, raises :class:`HeaderInjection` and nothing is written.

Because unchanged fields keep their exact value, the milter can turn the original message
into the transformed one with a few header edits (see :func:`header_ops`), and replace
the body only when :attr:`Draft.body_changed`.
"""

from __future__ import annotations

import email
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from email.generator import BytesGenerator
from email.message import Message
from email.policy import Policy, compat32
from io import BytesIO

from mtaplugin.vocabulary.header_block import header_end, parse_header_block

_POLICY = compat32.clone(linesep="\r\n")
_EOL = re.compile(rb"\r*\n")
_BARE_CR = re.compile(r"\r(?!\n)")
#: a line break in a value that does not fold it (a new line that does not start with a
#: blank, or only blanks: a new field, or the end of the header block, to a reader)
_NEW_LINE = re.compile(r"\r(?!\n)|\r?\n(?![ \t])|\r?\n[ \t]*(?=\r?\n|$)")
#: a field name: printable ASCII but the colon (RFC 5322 §2.2)
_NAME = re.compile(r"[\x21-\x39\x3b-\x7e]+")

Field = tuple[str, str]


class HeaderInjection(ValueError):
    """A transform tried to write a header field whose value would end the field (a CR or
    LF that does not fold it) or whose name is not a field name: a bug, or a setting
    that escaped its check (:mod:`mtaplugin.model.one_line`).  Nothing is written."""


def _checked(name: str, value: str) -> Field:
    """The field (``name``, ``value``), or :class:`HeaderInjection` (the last line of
    defence: every value a transform writes passes here)."""
    if not _NAME.fullmatch(name):
        raise HeaderInjection(f"not a header field name: {name!r}")
    if _NEW_LINE.search(value):
        raise HeaderInjection(f"a line break in the value of {name}: {value[:80]!r}")
    return name, value


def flatten(msg: Message, policy: Policy = _POLICY) -> bytes:
    """``msg`` as bytes.  A multipart too broken to parse (no parts, only a preamble) keeps
    its body as text, which the generator writes through ``get_payload()``: 8-bit bytes
    come back from it as U+FFFD and cannot be written.  Such a body's 8-bit bytes become
    ``?`` (it held no part anyway)."""
    out = BytesIO()
    try:
        BytesGenerator(out, mangle_from_=False, policy=policy).flatten(msg)
    except UnicodeEncodeError:
        for part in msg.walk():
            payload = getattr(part, "_payload", None)  # (get_payload() would decode it)
            if part.get_content_maintype() == "multipart" and isinstance(payload, str):
                data = payload.encode("ascii", "surrogateescape")
                part.set_payload(data.decode("ascii", "replace").replace("\ufffd", "?"))
        out = BytesIO()
        BytesGenerator(out, mangle_from_=False, policy=policy).flatten(msg)
    return out.getvalue()


def parse_fields(header_block: bytes) -> list[Field]:
    """The header fields of a header block, in order, as the compat32 parser reads them."""
    return [(k, str(v)) for k, v in parse_header_block(header_block).raw_items()]


@dataclass
class Draft:
    fields: list[Field]
    body: bytes
    #: the body differs from the one the draft was made from
    body_changed: bool = False
    #: the header fields of the original, for :func:`header_ops`
    original: list[Field] = field(default_factory=list)

    @classmethod
    def from_bytes(cls, raw: bytes, parsed: Message | None = None, end: int = -1) -> Draft:
        """The draft of ``raw``; ``parsed``: its header block as the compat32 header parser
        read it already, and ``end`` where that block ends (``envelope.Post`` has both), to
        save a second parse."""
        if end < 0:
            end = header_end(raw)
        if parsed is None:
            fields = parse_fields(raw[:end])
        else:
            fields = [(k, str(v)) for k, v in parsed.raw_items()]
        draft = cls(fields, raw[end:], original=list(fields))
        if any("\r" in k or "\r" in v for k, v in fields):
            # A bare CR is part of a line to the MTA (and to the rules), but ends it for
            # many readers, who would see other fields, or the end of the header block:
            # the copies get a space (a dash in a name), so every reader sees what the
            # rules saw.
            draft.fields = [
                (_BARE_CR.sub("-", k), _BARE_CR.sub(" ", v).lstrip(" \t")) for k, v in draft.fields
            ]
        return draft

    # --- header fields --------------------------------------------------------------------
    # (On the milter's path these run a few times per post over every field: a name of
    # another length is passed over without lower-casing it.)
    def get(self, name: str, default: str = "") -> str:
        wanted = name.lower()
        size = len(wanted)
        for k, v in self.fields:
            if len(k) == size and k.lower() == wanted:
                return v
        return default

    def get_all(self, name: str) -> list[str]:
        wanted = name.lower()
        size = len(wanted)
        return [v for k, v in self.fields if len(k) == size and k.lower() == wanted]

    def has(self, name: str) -> bool:
        wanted = name.lower()
        size = len(wanted)
        return any(len(k) == size and k.lower() == wanted for k, _v in self.fields)

    def remove(self, *names: str) -> None:
        self.remove_keys({n.lower() for n in names})

    def remove_keys(self, keys: frozenset[str] | set[str]) -> None:
        """Remove every field whose lower-cased name is in ``keys`` (a set made once by
        a caller that removes the same names from every post)."""
        if any(k.lower() in keys for k, _v in self.fields):
            self.fields = [f for f in self.fields if f[0].lower() not in keys]

    def remove_matching(self, pattern: re.Pattern[str]) -> None:
        """Remove every field whose name matches ``pattern`` (case-insensitive names)."""
        self.fields = [f for f in self.fields if not pattern.match(f[0].lower())]

    def set(self, name: str, value: str) -> None:
        """Give ``name`` this one value: the first occurrence keeps its place, the others go;
        a new field goes at the end."""
        _checked(name, value)
        wanted = name.lower()
        out: list[Field] = []
        done = False
        for f in self.fields:
            if f[0].lower() != wanted:
                out.append(f)
            elif not done:
                out.append((f[0], value))
                done = True
        if not done:
            out.append((name, value))
        self.fields = out

    def append(self, name: str, value: str) -> None:
        self.fields.append(_checked(name, value))

    def prepend(self, name: str, value: str) -> None:
        self.fields.insert(0, _checked(name, value))

    # --- body -----------------------------------------------------------------------------
    def set_body(self, body: bytes) -> None:
        if body != self.body:
            self.body = body
            self.body_changed = True

    def tree(self) -> Message:
        """The whole message parsed (compat32), for a transform that edits MIME parts."""
        return email.message_from_bytes(self.header_bytes() + self.body, policy=compat32)

    def set_tree(self, msg: Message) -> None:
        """Take the header fields and the body of ``msg``, as a generator writes them."""
        raw = flatten(msg)
        end = header_end(raw)
        new_fields = parse_fields(raw[:end])
        # A field the tree did not change keeps its original form (the generator refolds).
        old = {(k.lower(), _unfold(v)): (k, v) for k, v in self.fields}
        self.fields = [old.get((k.lower(), _unfold(v)), (k, v)) for k, v in new_fields]
        self.set_body(raw[end:])

    # --- output ---------------------------------------------------------------------------
    def header_bytes(self) -> bytes:
        lines = [f"{k}: {v}".encode("ascii", "surrogateescape") for k, v in self.fields]
        # Every line ends in CRLF; a bare CR before it goes (``text/plain<CR><CR><LF>``
        # would end the header block early for many parsers, the List-* fields unseen).
        block = _EOL.sub(b"\r\n", b"\n".join(lines) + b"\n") if lines else b""
        return block + b"\r\n"

    def to_bytes(self) -> bytes:
        return self.header_bytes() + self.body


def _same_lines(value: str) -> str:
    return value.replace("\r\n", "\n")


def _unfold(value: str) -> str:
    return " ".join(value.split())


# --- the milter's view: edits that turn the original header block into the new one -------
@dataclass(frozen=True)
class ChangeHeader:
    """``chgheader(name, index, value)``: the ``index``-th (1-based) ``name`` field of the
    original message gets ``value``."""

    name: str
    index: int
    value: str


@dataclass(frozen=True)
class DeleteHeader:
    """``chgheader(name, index, None)``: the ``index``-th ``name`` field of the original
    message goes (the last ones first, so that the indexes stay valid)."""

    name: str
    index: int
    #: (as the other edits read: nothing)
    value: None = None


@dataclass(frozen=True)
class InsertHeader:
    """``insheader(position, name, value)``: a new field at ``position`` of the header
    block as it is after the edits before it (0 = first)."""

    name: str
    value: str
    position: int


@dataclass(frozen=True)
class AddHeader:
    """``addheader(name, value)``: a new field at the end of the header block (after the
    last field kept from the original: an MTA may count fields the milter never saw)."""

    name: str
    value: str


#: one milter header edit (a variant per milter operation), in the order they must be
#: applied
HeaderOp = ChangeHeader | DeleteHeader | InsertHeader | AddHeader


def header_ops(original: Iterable[Field], new: Iterable[Field]) -> tuple[HeaderOp, ...]:
    """The edits that make ``original`` into ``new``.

    Fields are matched by name and occurrence: the i-th ``Subject`` of the original is the
    i-th ``Subject`` of the new list.  Changed values are changed in place, missing
    occurrences deleted (from the last, so that indexes stay valid), and new occurrences
    inserted at their position in ``new``.  Transforms never reorder the fields they keep,
    so this reproduces ``new`` exactly."""
    target = list(new)
    by_name: dict[str, list[str]] = {}
    first_name: dict[str, str] = {}  # each name as the original first writes it
    for k, v in original:
        key = k.lower()
        olds = by_name.get(key)
        if olds is None:
            by_name[key] = [v]
            first_name[key] = k
        else:
            olds.append(v)
    seen: dict[str, int] = {}
    changes: list[HeaderOp] = []
    inserts: list[tuple[int, Field]] = []
    last_kept = -1
    for position, (k, v) in enumerate(target):
        key = k.lower()
        n = seen.get(key, 0)
        seen[key] = n + 1
        olds = by_name.get(key, [])
        if n < len(olds):
            last_kept = position
            old = olds[n]
            if old != v and _same_lines(old) != _same_lines(v):
                changes.append(ChangeHeader(k, n + 1, v))
        else:
            inserts.append((position, (k, v)))
    deletes: list[HeaderOp] = []
    for key, olds in by_name.items():
        kept = seen.get(key, 0)
        for index in range(len(olds), kept, -1):
            deletes.append(DeleteHeader(first_name[key], index))
    # After the last field kept from the original: appended (``addheader``), which needs no
    # position (an MTA may count fields the milter never saw, like its own Received:).
    inserted: list[HeaderOp] = [
        _appended(f) if position > last_kept else InsertHeader(*f, position)
        for position, f in inserts
    ]
    return (*changes, *deletes, *inserted)


#: the ``addheader`` edit of each field appended lately: the List-* fields of a list
#: version are appended to every post (an edit is read-only, so it is shared)
_APPENDED: dict[Field, AddHeader] = {}
_APPENDED_KEPT = 1024


def _appended(f: Field) -> AddHeader:
    op = _APPENDED.get(f)
    if op is None:
        if len(_APPENDED) >= _APPENDED_KEPT:
            _APPENDED.clear()  # (posts' own values: the next ones fill it again)
        op = _APPENDED[f] = AddHeader(*f)
    return op


def apply_ops(fields: list[Field], ops: Iterable[HeaderOp]) -> list[Field]:
    """What an MTA does with ``ops`` (the reference for :func:`header_ops`, used by tests)."""
    out = list(fields)
    for op in ops:
        match op:
            case ChangeHeader() | DeleteHeader():
                hits = [i for i, (k, _v) in enumerate(out) if k.lower() == op.name.lower()]
                if op.index > len(hits):
                    continue
                i = hits[op.index - 1]
                if isinstance(op, DeleteHeader):
                    del out[i]
                else:
                    out[i] = (out[i][0], op.value)
            case InsertHeader(name, value, position):
                out.insert(position, (name, value))
            case AddHeader(name, value):
                out.append((name, value))
    return out
