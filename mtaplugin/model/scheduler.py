"""What the scheduler keeps: one row per periodic job, shared by every mail host on the
database (:mod:`mtaplugin.scheduler.runs`)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from mtaplugin.model.base import Base, UTCDateTime


class JobRun(Base):
    """When a job is due next, who runs it now, and how its last run went.

    A runner takes a job with one atomic ``UPDATE`` that matches only while the job is due
    and nobody's lease is running; a host killed in the middle leaves its lease, which
    runs out (``lease_until``), and the job is run again.
    """

    __tablename__ = "job_runs"

    #: the job's name (:attr:`mtaplugin.vocabulary.job.Job.name`)
    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    #: when it is due next
    due_at: Mapped[datetime] = mapped_column(UTCDateTime)
    #: the runner that holds it (host, pid, a random part), or None
    lease_holder: Mapped[str | None] = mapped_column(String(128), default=None)
    #: when that runner's lease runs out; after that, another runner may take the job
    lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    last_started_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    last_finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    #: what the last run that finished did (held posts discarded, rows removed, ...)
    last_result: Mapped[int | None] = mapped_column(Integer, default=None)
    #: why the last run failed; empty when it succeeded
    last_error: Mapped[str] = mapped_column(Text, default="")
