"""The ``mail-archive`` archiver (mail-archive.com): each archived post of a public list
goes by mail to the archive's address (``[archivers] mail_archive_recipient``), through
the outbox like any list copy (sent from the list's bounces address, sealed for the
list's domain: :func:`mtaplugin.archivers.queue.mail_archive_send`).  Its addresses, as
Mailman's archiver makes them (public lists only): ``List-Archive`` = base URL + the list's
posting address (percent-quoted), ``Archived-At`` = base URL + the post's
X-Message-ID-Hash (base32 of the SHA-1 of its Message-ID)."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote, urljoin

from mtaplugin.enums import ArchivePolicy

if TYPE_CHECKING:  # read by the posting core (the copies' headers): no SQL here
    from mtaplugin.config import ArchiversSettings
    from mtaplugin.model import MailingList


def list_url(site: ArchiversSettings, mlist: MailingList) -> str | None:
    if mlist.archive_policy is not ArchivePolicy.public:
        return None
    return urljoin(site.mail_archive_base_url, quote(mlist.posting_address))


def permalink(site: ArchiversSettings, mlist: MailingList, message_id_hash: str) -> str | None:
    if mlist.archive_policy is not ArchivePolicy.public:
        return None
    return urljoin(site.mail_archive_base_url, message_id_hash)
