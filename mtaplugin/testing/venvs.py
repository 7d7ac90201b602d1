"""Throw-away virtualenvs for the peers the tests compare with or drive (Mailman,
HyperKitty, Postorius): never dependencies of mtaplugin, never imported by it.  Each is
made once under :data:`mtaplugin.testing.debpkg.CACHE`, by one process at a time (a file
lock), and reused; ``.installed`` marks a finished one, so an install cut short is redone."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from mtaplugin.testing.debpkg import CACHE


def clean_env() -> dict[str, str]:
    """This environment without PYTHONPATH (the venv must not see mtaplugin's tree)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def made_once(root: Path, make: Callable[[], object]) -> Path:
    """``root``, made by ``make`` the first time only: one process at a time (a file lock
    beside it), ``root/.installed`` marking a finished one (one cut short is redone)."""
    done = root / ".installed"
    if done.exists():
        return root
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / f"{root.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            make()
            done.touch()
    return root


def throwaway_venv(name: str, requirements: Sequence[str], timeout: float = 900) -> Path:
    """The virtualenv ``CACHE/<name>-venv`` with ``requirements`` installed by pip."""
    root = CACHE / f"{name}-venv"

    def make() -> None:
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(root)], check=True)
        subprocess.run(
            [str(root / "bin/pip"), "install", "--quiet", *requirements],
            check=True,
            env=clean_env(),
            timeout=timeout,
        )

    return made_once(root, make)
