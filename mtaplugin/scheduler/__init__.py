"""The scheduler that replaces cron: periodic jobs run inside ``mtaplugin worker`` (and so
inside ``mtaplugin serve``), each at most once per period across every mail host that
shares the database.

A job is a :class:`~mtaplugin.scheduler.job.Job`: a name, a period and a function of the
world and the time.  :data:`mtaplugin.scheduler.registry.JOBS` lists them all.
"""

from mtaplugin.scheduler.job import Job, JobContext

__all__ = ["Job", "JobContext"]
