"""The outbox: copies waiting in SQL for the MTA's re-injection listener, with retry.

- :func:`enqueue` puts a copy in the outbox, in the caller's transaction
  (:mod:`~mtaplugin.outbox.store` keeps the rows and the leases on them);
- :class:`Delivery` makes the passes over what is due (:mod:`~mtaplugin.outbox.deliver`:
  the attempt on each row, and what a crash can do), through a :class:`Transport`
  (:mod:`~mtaplugin.outbox.smtp`; :class:`SmtpTransport` submits to the MTA).
"""

from mtaplugin.outbox.deliver import Attempt, Delivery, PassResult, Sealer
from mtaplugin.outbox.smtp import (
    Connection,
    ConnectionLost,
    Replies,
    SmtpTransport,
    Transport,
    Unreachable,
)
from mtaplugin.outbox.store import backoff, enqueue, lease

__all__ = [
    "Attempt",
    "Connection",
    "ConnectionLost",
    "Delivery",
    "PassResult",
    "Replies",
    "Sealer",
    "SmtpTransport",
    "Transport",
    "Unreachable",
    "backoff",
    "enqueue",
    "lease",
]
