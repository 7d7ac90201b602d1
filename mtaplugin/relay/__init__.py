"""The relay: what drains the outbox (:mod:`mtaplugin.outbox`) into the MTA's re-injection
listener, run by ``mtaplugin worker``.

- :class:`~mtaplugin.relay.deliver.Delivery` makes the passes over what is due (the
  attempt on each row, each member's own copy made just before it goes, and what a crash
  can do);
- :mod:`~mtaplugin.relay.smtp`: the :class:`~mtaplugin.relay.smtp.Transport` it goes
  through; :class:`~mtaplugin.relay.smtp.SmtpTransport` submits to the MTA.

A caller that only puts a copy in the outbox (:func:`mtaplugin.outbox.store.enqueue`)
loads none of this.
"""
