"""The accepted post: the one stage every accepted post of a list goes through besides its
members' copy, whichever way it was accepted -- in place by the milter, through the outbox,
over LMTP, the pipe or Exim, by the LMTP safety net, released from a hold, or gated in from
the list's newsgroup.

::

    engine.persist (a decision) ─┐                             ┌─> the built-in archive
                                 ├─> journal.enter            ├─> the archivers' queue
    manage.held (a release) ─────┘    │ accepted_posts        ├─> the digest (sent when
                                      ▼ (committed with       │   the store is full)
                                   drain (the worker,         └─> the news queue
                                   one transaction per batch) ──> fanout.fan_out

- :func:`~mtaplugin.accepted.journal.enter` writes one row of the journal
  (``accepted_posts``) in the transaction that accepts the post: committed before the 250
  (or with the release), so a post answered 250 reaches the archive and the digest even if
  every process is killed right after.  It is the only write the stage adds to the
  decision: no compression, no full-text index, no digest built there.
- :func:`~mtaplugin.accepted.drain.drain_batch` (the worker, about every quarter of a
  second) takes the rows in order and, in one transaction per batch, removes each row and
  does what it asks (:func:`~mtaplugin.accepted.fanout.fan_out`): a crash in the middle of
  a batch leaves every row of it in the journal and none of its effects, so nothing is
  done twice.
- The stage knows where a post came from (:class:`~mtaplugin.accepted.journal.Origin`):
  an article gated in from the newsgroup is not queued back to it.  Whether the site has
  a news server, and which external archivers it enables, is said once, by the worker's
  settings (:class:`~mtaplugin.accepted.fanout.Outlets`).
"""
