"""Files from GNU Mailman 3.3.10's wheel for the tests: the real Mailman 2.1 list
configurations it ships in ``mailman/testing/`` (``config.pck``,
``config-with-instances.pck``, ``config-greek.pck``).

The wheel is fetched once with pip (never installed, never imported) and the files are
kept under :data:`CACHE`, beside the MTA packages of :mod:`mtaplugin.testing.debpkg`.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from mtaplugin.testing.debpkg import CACHE

VERSION = "3.3.10"
PICKLES = ("config.pck", "config-with-instances.pck", "config-greek.pck")


def mailman_testing_file(name: str) -> Path:
    """The path of ``mailman/testing/NAME`` from Mailman's wheel, fetched when missing."""
    root = CACHE / f"mailman-{VERSION}-testing"
    path = root / name
    if path.exists():
        return path
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=CACHE) as work:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
             "--only-binary", ":all:", "-d", work, f"mailman=={VERSION}"],
            check=True,
        )  # fmt: skip
        wheel = next(Path(work).glob("mailman-*.whl"))
        with zipfile.ZipFile(wheel) as z:
            for member in z.namelist():
                if member.startswith("mailman/testing/") and member.endswith(".pck"):
                    (root / Path(member).name).write_bytes(z.read(member))
    if not path.exists():
        raise FileNotFoundError(f"Mailman {VERSION}'s wheel has no mailman/testing/{name}")
    return path
