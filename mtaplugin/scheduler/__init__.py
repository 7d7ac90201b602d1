"""The scheduler that replaces cron: periodic jobs run inside ``mtaplugin worker`` (and so
inside ``mtaplugin serve``), each at most once per period across every mail host that
shares the database.  Here: the ``job_runs`` claims (:mod:`.runs`) and what the scheduler's
own jobs run (expiry, reminders, retention); the runner is :mod:`mtaplugin.worker.runner`.

A job is a :class:`~mtaplugin.vocabulary.job.Job`: a name, a period and a function of the
world and the time.  :mod:`mtaplugin.worker.registry` declares them all, in one table.
"""
