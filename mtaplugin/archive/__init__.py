"""The list archive (Mailman 3's HyperKitty, kept in the list database).

- :mod:`~mtaplugin.archive.hashing` -- a post's Message-ID and its hash (Mailman's).
- :mod:`~mtaplugin.archive.reading` -- what the archive reads from a post (text, attachments,
  sender, date, threading fields); never raises on broken mail.
- :mod:`~mtaplugin.archive.urls` -- the archive's web addresses (the ones in ``Archived-At``).
- :mod:`~mtaplugin.archive.threads` -- threading, incremental at archive time.
- :mod:`~mtaplugin.archive.store` -- archiving a post in the decision's transaction.
- :mod:`~mtaplugin.archive.mbox` -- mboxrd export; :mod:`~mtaplugin.archive.importing` import.
- :mod:`~mtaplugin.archive.removal` -- removing posts (the permalink then answers 410).
- :mod:`~mtaplugin.archive.search` -- full-text search (SQLite FTS5, PostgreSQL tsvector),
  kept by database triggers; :mod:`~mtaplugin.archive.browse` -- what the web pages show.
"""
