"""The limit of the Postfix benches: bare Postfix fanning a post out from one queue file,
its recipients added where mtaplugin's milter adds them (the cleanup server).

The limit's listener has no milter and hands its mail to a cleanup service of its own
(``cleanup_service_name``) whose ``virtual_alias_maps`` is a ``hash:`` table the bench
writes: one list address expanding to the members.  The client sends one ``RCPT TO`` of
that address, as a poster does to a list, and Postfix's cleanup writes the members into
the message's one queue file.  So the members never pass smtpd's RCPT checks (nor
trivial-rewrite's resolving for them), just as mtaplugin's recipients, which the milter
adds at end of message, reach the cleanup server after those checks.  Receiving the
members as ``RCPT TO`` commands instead costs Postfix about 55 ms more per post at
1 000 members (docs/benchmarks.md, "The limit at 1 000 members"), which is not a floor
under mtaplugin's path.

``recipients_per_queue_file`` reads the maillog: the recipients of each queue file the
limit's cleanup wrote (qmgr's ``nrcpt=``), which ``check_one_queue_file`` compares with
what the bench sent before its rounds begin.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

#: the limit's cleanup service (master.cf), and its syslog name under the instance's
CLEANUP = "limitcleanup"
#: the alias table's file under the instance's configuration directory
TABLE = "limit_aliases"
#: qmgr's line for a queue file it took: ``QID: from=<...>, size=N, nrcpt=N (queue active)``
_QMGR = re.compile(rb"/qmgr\[\d+\]: ([0-9A-Za-z]+): from=<[^>]*>, size=\d+, nrcpt=(\d+) ")


def write_table(conf: Path, aliases: Mapping[str, Sequence[str]]) -> str:
    """Write the alias table under ``conf`` and ``postmap`` it; the lookup to give to
    ``virtual_alias_maps``."""
    table = conf / TABLE
    table.write_text("".join(f"{alias} {', '.join(rcpts)}\n" for alias, rcpts in aliases.items()))
    subprocess.run(["postmap", "-c", str(conf), str(table)], check=True, timeout=120)
    return f"hash:{table}"


def master_cf(name: str, port: int, lookup: str, largest: int, options: str = "") -> str:
    """master.cf's lines for the limit's listener on ``port`` (no milter; ``options``: more
    ``-o`` lines, the restrictions of the listener it is a twin of) and its cleanup
    service expanding ``lookup``'s aliases (up to ``largest`` members each)."""
    return f"""
# --- bench: the limit (no milter; one RCPT of a list address, expanded by cleanup) ---
127.0.0.1:{port} inet n - n - - smtpd
  -o syslog_name={name}/limit
  -o smtpd_milters=
  -o cleanup_service_name={CLEANUP}{options}
{CLEANUP} unix n - n - 0 cleanup
  -o syslog_name={name}/{CLEANUP}
  -o virtual_alias_maps={lookup}
  -o virtual_alias_expansion_limit={max(largest, 1000)}
"""


def recipients_per_queue_file(maillog: bytes, name: str) -> list[int | None]:
    """For each queue file the limit's cleanup of instance ``name`` wrote, in the order of
    the maillog, the recipients qmgr found in it (None until qmgr has taken it).  A queue
    id names a queue file only until it is removed (Postfix reuses short ids), so each
    cleanup line takes the qmgr line that next names its id."""
    # (Postfix logs a service whose syslog_name is overridden as NAME/limitcleanup/cleanup)
    # (not its warnings: ``warning: file system clock is 1 seconds ahead`` on a busy host)
    marker = re.compile(
        rb"/" + CLEANUP.encode() + rb"(?:/cleanup)?\[\d+\]: (?!warning:|error:|fatal:|panic:)"
        rb"([0-9A-Za-z]+): "
    )
    prefix = f" {name}/".encode()
    found: list[int | None] = []
    waiting: dict[bytes, int] = {}
    for line in maillog.splitlines():
        if prefix not in line:
            continue
        if m := marker.search(line):
            if m.group(1) not in waiting:
                waiting[m.group(1)] = len(found)
                found.append(None)
        elif (m := _QMGR.search(line)) and m.group(1) in waiting:
            found[waiting.pop(m.group(1))] = int(m.group(2))
    return found


def check_one_queue_file(maillog: Path, name: str, expected: Sequence[int]) -> None:
    """Check that the limit's posts so far made one queue file each, with ``expected``
    recipients (in order): Postfix expanded each list address in cleanup.  Waits up to a
    minute for qmgr's lines (the maillog is written by postlogd, a little later)."""
    seen: list[int | None] = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        seen = recipients_per_queue_file(maillog.read_bytes(), name)
        if seen == list(expected):
            return
        if len(seen) > len(expected) or (len(seen) == len(expected) and None not in seen):
            break
        time.sleep(0.2)

    def counts(values: Sequence[int | None]) -> str:
        return ", ".join(f"{n} x {v}" for v, n in Counter(values).items())

    raise RuntimeError(
        f"the limit: expected {len(expected)} queue files ({counts(expected)} recipients), "
        f"the maillog shows {len(seen)} ({counts(seen)})"
    )
