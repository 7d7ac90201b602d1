"""The one job the REST API runs itself: ``template-fetch``.

A site that keeps Postorius may run only ``mtaplugin api`` beside its MTA for a while (no
``mtaplugin worker``, so no scheduler): the templates saved in Postorius must still be
fetched when they expire.  Each API process runs the job through the scheduler's own
runner, so that it runs at most once per period across every process and host on the
database (its lease in ``job_runs``), whoever else runs it too."""

from __future__ import annotations

import logging
import threading

from mtaplugin.wiring import World
from mtaplugin.worker.registry import TEMPLATE_FETCH
from mtaplugin.worker.runner import Runner

log = logging.getLogger(__name__)

#: seconds between two looks at whether the job is due (it is due every minute)
INTERVAL = 30.0


class TemplateFetcher(threading.Thread):
    """Runs ``template-fetch`` when it is due, until :meth:`stop`."""

    def __init__(self, world: World, interval: float = INTERVAL) -> None:
        super().__init__(name="template-fetch", daemon=True)
        self.runner = Runner(world, [TEMPLATE_FETCH])
        self.interval = interval
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.wait(self.interval):
            try:
                self.runner.run_due(self.halt.is_set)
            except Exception:  # never the end of the API process
                log.exception("template-fetch in the API process failed; trying again later")

    def stop(self) -> None:
        self.halt.set()
