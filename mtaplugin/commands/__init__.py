"""The email interface: mail to ``list-request@``, ``-join``, ``-leave`` (``-subscribe``,
``-unsubscribe``) and ``-confirm+TOKEN@`` (the sub-addresses whose
:attr:`~mtaplugin.vocabulary.addresses.Subaddress.is_command` is true), handled inline by the
milter.

The engine removes these recipients from the transaction (nothing is ever re-delivered, so
nothing loops) and calls :func:`mtaplugin.commands.dispatch.handle` at end of message, in
the decision's database transaction: what a command changes (a pending request, a member,
a moderated post) and the replies it sends (through the outbox) commit together before the
250.  See :mod:`~mtaplugin.commands.parse` (what is read), :mod:`~mtaplugin.commands.builtin`
(the commands), :mod:`~mtaplugin.commands.moderation` (moderation by reply).
"""
