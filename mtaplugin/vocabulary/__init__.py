"""The words every layer speaks, at the ground of the package graph (docs/architecture.md).

Value types and pure helpers only: the post and its envelope (:mod:`.envelope`), mail
addresses (:mod:`.addresses`), topics (:mod:`.topics`), the editable message (:mod:`.draft`),
the row-free parts of a list's snapshot (:mod:`.snapshot`, with its bans :mod:`.bans`) and
of what the transforms read (:mod:`.context`), what a periodic job is (:mod:`.job`) and the
one retry policy of the queues (:mod:`.retry`).  Nothing here imports a service package, not
even under ``TYPE_CHECKING`` (what carries a list's row lives in :mod:`mtaplugin.posting`);
the import contract (``.importlinter``, tests/unit/test_import_contract.py) holds it there.
"""
