"""The scheduler that replaces cron: periodic jobs run inside ``mtaplugin worker`` (and so
inside ``mtaplugin serve``), each at most once per period across every mail host that
shares the database.

A job is a :class:`~mtaplugin.vocabulary.job.Job`: a name, a period and a function of the
world and the time.  :data:`mtaplugin.worker.registry.JOBS` lists them all.
"""
