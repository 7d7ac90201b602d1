"""Rosters from a directory: a list's members (or owners, or moderators) read from an
LDAP group or search, or from an SQL query on another database, and synced on a schedule
(the ``roster-sync`` job) and on demand (``mtaplugin lists sync LIST``).

- :mod:`.directory`: what a source answered (:class:`~.directory.DirectoryEntry`), or
  why it could not answer (:class:`~.directory.DirectoryError`); :mod:`.ldap` and
  :mod:`.sql` read the two kinds.
- :mod:`.plan`: the pure decision: who joins, who leaves, whether that is within the
  source's removal bound.
- :mod:`.sync`: one sync, applied through the subscription workflow.
- :mod:`.sources`: a source's settings, checked, and what REST and the web may show.
- :mod:`.jobs`: the scheduler's ``roster-sync`` job.
"""
