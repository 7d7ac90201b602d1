"""The ``mhonarc`` archiver: a command (MHonArc, or any other) run for each archived post
with the post on its standard input, as Mailman's MHonArc archiver runs it.  The command
line is split like a shell would (no shell runs it); ``$listname`` (or ``${listname}``)
becomes the list's posting address and ``$list_id`` its List-Id.  Exit code 0: archived;
any other, a timeout or a command that cannot start: tried again later."""

from __future__ import annotations

import shlex
import subprocess
from string import Template

from mtaplugin.archivers.errors import HandOffError
from mtaplugin.model import MailingList


def command_line(command: str, mlist: MailingList) -> list[str]:
    words = shlex.split(command)
    values = {"listname": mlist.posting_address, "list_id": mlist.list_id}
    return [Template(word).safe_substitute(values) for word in words]


def run(command: str, mlist: MailingList, raw: bytes, timeout: float) -> None:
    argv = command_line(command, mlist)
    if not argv:
        raise HandOffError("no command is set ([archivers] mhonarc_command)", temporary=True)
    try:
        done = subprocess.run(
            argv,
            input=raw,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise HandOffError(f"{argv[0]}: still running after {timeout:g}s", temporary=True) from None
    except OSError as e:
        raise HandOffError(f"{argv[0]}: cannot run: {e.strerror or e}", temporary=True) from None
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        tail = f": {said[-1][:300]}" if said else ""
        raise HandOffError(f"{argv[0]} exited with {done.returncode}{tail}", temporary=True)
