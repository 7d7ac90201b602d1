"""The outbox: copies waiting in SQL for the MTA's re-injection listener, with retry.

:func:`enqueue` puts a copy in the outbox, in the caller's transaction (:func:`enqueue_many`
many at once, :func:`list_notice` a list's notice from its ``-bounces`` address)
(:mod:`~mtaplugin.outbox.store` keeps the rows and the leases on them).  What drains it,
the SMTP passes of the worker, is :mod:`mtaplugin.relay`: a caller of :func:`enqueue`
loads neither SMTP nor the bounce handling.
"""

from mtaplugin.outbox.store import backoff, enqueue, enqueue_many, lease, list_notice

__all__ = ["backoff", "enqueue", "enqueue_many", "lease", "list_notice"]
