"""A member notice (the welcome, the goodbye) for many members at once: what a mass
subscription sends, made once per language instead of once per member.

For each language the batch meets, :class:`MemberNotices` plans the text
(:mod:`mtaplugin.notices.member_text`) and builds the message's headers with the email
package once (:class:`Letter`); each member's notice is then that text with their
address in it, after the headers with their own ``To:``, ``Date:`` and ``Message-ID:``.
The bytes are those :func:`mtaplugin.notices.build` makes for the member (the same
headers, the same body encoding), which the first member of each language checks: a plan
that does not give them is dropped (logged) and every member's notice is made on its own,
as it is for an address :func:`plain` does not allow and for a body the email package
would encode (a line longer than 78 octets).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from email.utils import formatdate, make_msgid

from sqlalchemy.orm import Session

from mtaplugin.i18n import using
from mtaplugin.model import MailingList
from mtaplugin.notices import build
from mtaplugin.notices.member_text import plan
from mtaplugin.notices.membership import MemberNotice

log = logging.getLogger(__name__)

#: the longest line the email package leaves unencoded (``email.policy.default``)
MAX_LINE = 78
#: an address written in a ``To:`` header as it is: a dot-atom of ASCII letters, digits
#: and the specials that need no quoting and start no encoded word (no ``=``, ``?``)
_PLAIN = re.compile(r"[A-Za-z0-9!#$%&'*+/^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/^_`{|}~-]+)*@"
                    r"[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*")  # fmt: skip
_STAND_IN = "member@stand-in.invalid"
_SLOTS = {b"To": 0, b"Date": 1, b"Message-ID": 2}


def plain(email: str) -> bool:
    """``email`` goes into a header line and a template's text unchanged."""
    return len(email) <= MAX_LINE - len("To: ") and _PLAIN.fullmatch(email) is not None


class Letter:
    """The headers of a notice from ``mail_from`` with ``subject``, as
    :func:`~mtaplugin.notices.build` writes them, with a slot for ``To:``, ``Date:`` and
    ``Message-ID:``; one set for a 7bit body, one for an 8bit body."""

    def __init__(self, mail_from: str, subject: str) -> None:
        self.mail_from = mail_from
        self.subject = subject
        self.domain = mail_from.rpartition("@")[2] or None
        self._heads: dict[bool, list[bytes | int]] = {}

    def _head(self, ascii_body: bool) -> list[bytes | int]:
        if ascii_body not in self._heads:
            sample = "x\n" if ascii_body else "\xe9\n"
            raw = build(self.mail_from, _STAND_IN, self.subject, sample)
            head = raw[: raw.index(b"\n\n") + 1]
            parts: list[bytes | int] = []
            slot: int | None = None
            for line in head.splitlines(keepends=True):
                if line[:1] in (b" ", b"\t") and slot is not None:
                    continue  # the rest of a folded slot
                slot = _SLOTS.get(line.partition(b":")[0])
                parts.append(line if slot is None else slot)
            self._heads[ascii_body] = parts
        return self._heads[ascii_body]

    def raw(self, to: str, body: str) -> bytes | None:
        """The notice to ``to`` (:func:`plain`), or None when the email package would do
        more than this does (fold a header, encode the body)."""
        lines = body.encode().splitlines()
        if any(len(line) > MAX_LINE for line in lines):
            return None
        message_id = make_msgid(domain=self.domain)
        if len(message_id) > MAX_LINE - len("Message-ID: "):
            return None
        values = (
            b"To: " + to.encode() + b"\n",
            b"Date: " + formatdate(localtime=False).encode() + b"\n",
            b"Message-ID: " + message_id.encode() + b"\n",
        )
        head = self._head(body.isascii())
        return (
            b"".join(values[part] if isinstance(part, int) else part for part in head)
            + b"\n"
            + b"\n".join(lines)
            + b"\n"
        )


class MemberNotices:
    """``notice`` to members of ``mlist``, each in their language (see the module)."""

    def __init__(self, session: Session | None, mlist: MailingList, notice: MemberNotice):
        self.session = session
        self.mlist = mlist
        self.notice = notice
        #: per language: what makes a member's notice (None: nothing but the notice
        #: itself), and whether it was checked against the notice itself
        self._ready: dict[str, tuple[Callable[[str], bytes | None] | None, bool]] = {}

    def raw(self, email: str, language: str) -> bytes:
        """The notice ``email`` gets in ``language``, as ``notice`` makes it."""
        if not plain(email):
            return self.notice(self.session, self.mlist, email, language)
        if language not in self._ready:
            self._ready[language] = (self._prepare(language), False)
        made, checked = self._ready[language]
        if made is None:
            return self.notice(self.session, self.mlist, email, language)
        if checked:
            return made(email) or self.notice(self.session, self.mlist, email, language)
        own = self.notice(self.session, self.mlist, email, language)
        planned = made(email)
        if planned is None:
            return own  # checked with the next member
        same = _without_stamps(planned) == _without_stamps(own)
        if not same:
            log.warning(
                "notice %s of %s in %s: the planned text differs from the rendered one; "
                "each member's is rendered on its own",
                self.notice.template, self.mlist.fqdn_listname, language,
            )  # fmt: skip
        self._ready[language] = (made if same else None, True)
        return own

    def _prepare(self, language: str) -> Callable[[str], bytes | None] | None:
        text = plan(self.notice.template, language, session=self.session, mlist=self.mlist)
        if text is None:
            return None
        with using(language):
            letter = Letter(self.mlist.request_address, self.notice.subject(self.mlist))

        def made(email: str) -> bytes | None:
            return letter.raw(email, text.fill(email))

        return made


def _without_stamps(raw: bytes) -> bytes:
    """``raw`` without its ``Date:`` and ``Message-ID:`` (each notice has its own)."""
    return re.sub(rb"(?m)^(Date|Message-ID): .*\n", b"", raw)
