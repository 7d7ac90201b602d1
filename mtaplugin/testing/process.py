"""The mtaplugin process a lab runs (``mtaplugin serve`` or one of its parts): started in a
session of its own with its output in ``ROOT/mtaplugin.log``, stopped with its children."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from mtaplugin.testing import wait_for


class MtapluginProcess:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def log_file(self) -> Path:
        return self.root / "mtaplugin.log"

    def start(
        self,
        args: Sequence[str],
        env: dict[str, str],
        ready: Callable[[], bool],
        error: type[Exception] = RuntimeError,
        timeout: float = 120.0,
    ) -> None:
        """Run ``python -m mtaplugin.cli ARGS`` and wait until ``ready()``; raise ``error``
        with the end of the log if the process exits first.  The wait is long because a
        busy 2-core machine (a CI runner, or several suites at once) starts ``serve``'s six
        processes in tens of seconds; a healthy start is not slowed by it."""
        log = open(self.log_file, "ab")  # noqa: SIM115 - owned by the child
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mtaplugin.cli", *args],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()

        def _ready() -> bool:
            if self.process is not None and self.process.poll() is not None:
                raise error(f"mtaplugin {' '.join(args)} exited: {self.log()[-2000:]}")
            return ready()

        wait_for(_ready, timeout=timeout)

    def stop(self, wait: float = 15.0) -> None:
        stop_group(self.process, wait)

    def log(self) -> str:
        try:
            return self.log_file.read_text(errors="replace")
        except FileNotFoundError:
            return ""


def stop_group(process: subprocess.Popen[bytes] | None, wait: float) -> None:
    """SIGTERM to the process group of ``process`` (started with ``start_new_session``);
    SIGKILL if it is not gone in ``wait`` s."""
    if process is None or process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(wait)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)
