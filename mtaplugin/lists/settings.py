"""A list's settings as plain values, copied once per list version from its row.

A post's decision reads the list's settings some fifty times (the rules, the header
edits, the decorations, the copy's path).  On the row itself, each read goes through
SQLAlchemy's instrumented attribute (a descriptor call, the instance's state looked up);
on :class:`ListSettings` it is an ordinary attribute.  The snapshot cache
(:mod:`mtaplugin.lists.cache`) makes one per list and generation, so a change of a
setting, which moves the generation, gives the next decision new values.

A :class:`ListSettings` has every column of :class:`~mtaplugin.model.MailingList` (the same
values, the same objects), its derived addresses (``posting_address``, ``-request`` ...,
``fqdn_listname``, ``no_reply_address``), and nothing of the ORM: no relationships
(``domain``, ``members``), no session.  It is read-only.  :func:`plain` gives it the row's
type, so that the posting core keeps its signatures; ``tests/unit/test_list_settings.py``
checks that it has every attribute of the row the posting core may read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn, cast

from sqlalchemy import inspect

from mtaplugin.list_addresses import ListAddresses
from mtaplugin.model import MailingList

#: the row's columns, each copied
COLUMNS: tuple[str, ...] = tuple(attr.key for attr in inspect(MailingList).column_attrs)


class ListSettings(ListAddresses):
    """The values of one version of a list's row (read-only)."""

    if TYPE_CHECKING:
        list_name: str
        mail_host: str

    def __init__(self, row: MailingList) -> None:
        values = self.__dict__
        for key in COLUMNS:
            values[key] = getattr(row, key)

    def __setattr__(self, name: str, value: Any) -> NoReturn:
        raise AttributeError(f"a list's snapshot is read-only ({name})")

    def __repr__(self) -> str:
        return f"<ListSettings {self.fqdn_listname}>"


def plain(row: MailingList) -> MailingList:
    """``row``'s settings as plain values (:class:`ListSettings`), typed as the row: the
    posting core reads them as it reads a row, but must not use the row's relationships
    or session (a snapshot's row never had a session)."""
    return cast(MailingList, ListSettings(row))
