"""``docs/reference/jobs.md``: the scheduler's periodic jobs, from
:data:`~mtaplugin.worker.registry.JOBS`."""

from __future__ import annotations

from datetime import timedelta

from mtaplugin.docs.markdown import header, row


def _period(every: timedelta) -> str:
    seconds = int(every.total_seconds())
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds % size == 0:
            count = seconds // size
            return f"{count} {unit}" + ("s" if count != 1 else "")
    return f"{seconds} seconds"


def jobs_page() -> str:
    from mtaplugin.worker.registry import JOBS

    out = [
        header("Periodic jobs", "`JOBS` in `mtaplugin/worker/registry.py`"),
        "`mtaplugin worker` (part of `mtaplugin serve`) runs each job once per period "
        "across every host that shares the database; `mtaplugin jobs list` shows their "
        "state, `mtaplugin jobs run NAME` runs one now. How the scheduler works: "
        "[../jobs.md](../jobs.md).\n",
        row("Job", "Every", "What it does", "Defined in"),
        "|---|---|---|---|",
    ]
    for job in JOBS:
        module = job.run.__module__.replace(".", "/") + ".py"
        out.append(
            row(f"`{job.name}`", _period(job.every), job.doc, f"[`{module}`](../../{module})")
        )
    return "\n".join(out) + "\n"
