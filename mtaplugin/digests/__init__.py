"""Digests, as Mailman sends them: the store of posts waiting for a list's next digest
(:mod:`~mtaplugin.digests.store`), building a MIME, plain (RFC 1153) or summary digest
(:mod:`~mtaplugin.digests.build`), and sending it through the outbox, by size, on demand
or periodically (:mod:`~mtaplugin.digests.send`, its job ``digests``)."""
