"""What Postfix's own configuration says, asked with ``postconf -c DIR``: where it is
(:func:`config_dir`) and its parameters and master.cf services (:class:`Postfix`).  Read by
``mtaplugin check`` (:mod:`mtaplugin.check.postfix`) and by the alias domains'
check of Postfix's own domains (:mod:`mtaplugin.manage.alias_domains`)."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

DEFAULT_DIR = "/etc/postfix"


def config_dir(given: str | None) -> Path | None:
    """``--postfix DIR``, else ``$MAIL_CONFIG`` (Postfix's own), else /etc/postfix when it
    holds a main.cf; None: no Postfix here."""
    if given:
        return Path(given)
    for candidate in (os.environ.get("MAIL_CONFIG"), DEFAULT_DIR):
        if candidate and (Path(candidate) / "main.cf").is_file():
            return Path(candidate)
    return None


class PostconfError(RuntimeError):
    pass


@dataclass(frozen=True)
class Postfix:
    conf: Path

    def postconf(self, *args: str) -> str:
        if shutil.which("postconf") is None:
            raise PostconfError("postconf is not installed")
        done = subprocess.run(
            ["postconf", "-c", str(self.conf), *args],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        if done.returncode != 0:
            raise PostconfError(done.stderr.strip() or f"postconf exited {done.returncode}")
        return done.stdout

    def value(self, name: str) -> str:
        return self.postconf("-h", name).strip()

    def services(self) -> dict[tuple[str, str], dict[str, str]]:
        """master.cf's ``-o name=value`` overrides, by (service, type)."""
        found: dict[tuple[str, str], dict[str, str]] = {}
        for line in self.postconf("-P").splitlines():
            key, eq, value = line.partition(" = ")
            if not eq:
                key, value = line.rstrip(" ="), ""
            service, _s, rest = key.rpartition("/")
            service, _s, kind = service.rpartition("/")
            if service and kind:
                found.setdefault((service, kind), {})[rest.strip()] = value.strip()
        return found

    def inet_services(self) -> list[str]:
        """The names of master.cf's inet services (``127.0.0.1:10026``, ``smtp``)."""
        return [
            line.split()[0]
            for line in self.postconf("-M").splitlines()
            if len(line.split()) > 2 and line.split()[1] == "inet"
        ]
