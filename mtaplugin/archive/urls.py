"""The archive's web addresses, agreed with the archive's pages (docs/archive.md):

==================================================  ====================================
``{base}/archive/{list_id}/``                       the list's archive (``List-Archive``)
``{base}/archive/{list_id}/{YYYY}/{MM}/``           one month
``{base}/archive/{list_id}/thread/{thread_id}/``    one thread
``{base}/archive/{list_id}/message/{HASH}/``        one post (``Archived-At``; 410 removed)
``{base}/archive/{list_id}/search?q=``              search
``{base}/archive/{list_id}/{YYYY}-{MM}.mbox``       a month as mboxrd
``{base}/archive/{list_id}/thread/{thread_id}.mbox`` a thread as mboxrd
==================================================  ====================================

``base`` is the list domain's ``base_url`` -- the one the list's page
(``listinfo_url``, ``{base}/lists/{list_id}/``) is made from; no base URL, no link.
"""

from __future__ import annotations


def web_base(listinfo_url: str, list_id: str) -> str:
    """The domain's base URL, from the list's page address ("" when there is none)."""
    if not listinfo_url:
        return ""
    suffix = f"/lists/{list_id}/"
    if listinfo_url.endswith(suffix):
        return listinfo_url[: -len(suffix)]
    return listinfo_url.rstrip("/").rsplit("/lists/", 1)[0]


def list_archive(base: str, list_id: str) -> str:
    return f"{base.rstrip('/')}/archive/{list_id}/"


def permalink(base: str, list_id: str, message_id_hash: str) -> str:
    return f"{list_archive(base, list_id)}message/{message_id_hash}/"


def month(base: str, list_id: str, year: int, month: int) -> str:
    return f"{list_archive(base, list_id)}{year:04d}/{month:02d}/"


def thread(base: str, list_id: str, thread_id: int) -> str:
    return f"{list_archive(base, list_id)}thread/{thread_id}/"


def month_mbox(base: str, list_id: str, year: int, month: int) -> str:
    return f"{list_archive(base, list_id)}{year:04d}-{month:02d}.mbox"


def thread_mbox(base: str, list_id: str, thread_id: int) -> str:
    return f"{list_archive(base, list_id)}thread/{thread_id}.mbox"
