"""GNU Mailman 3's REST server with the same data, for ``bench/rest.py --mailman VENV``.

Mailman itself is not a dependency: install it into a separate virtualenv, e.g.
``python3 -m venv /tmp/mm-venv && /tmp/mm-venv/bin/pip install mailman==3.3.10``.

Subscribing 100 000 addresses through Mailman's own code takes hours on a small machine
(about 0.1 s each), so the big list gets one member the Mailman way and the rest as
copies of its rows in Mailman's SQLite tables (address, member, preferences), and the
other lists are copies of the first list's row: exactly what Mailman's REST server reads.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

CONFIG = """\
[mailman]
layout: here
site_owner: postmaster@{domain}

[paths.here]
var_dir: {var}

[webservice]
hostname: 127.0.0.1
port: {port}
workers: {workers}
show_tracebacks: no

[mta]
incoming: mailman.mta.null.NullMTA
"""

# Runs under Mailman's Python: create the domain and the big list with its first member.
_SEED = """
import sys
from mailman.core.initialize import initialize
initialize(sys.argv[1])
from mailman.app.lifecycle import create_list
from mailman.config import config
from mailman.interfaces.domain import IDomainManager
from mailman.interfaces.usermanager import IUserManager
from mailman.utilities.datetime import now
from zope.component import getUtility
getUtility(IDomainManager).add(sys.argv[2])
mlist = create_list(sys.argv[3])
address = getUtility(IUserManager).create_address("member000000@example.net", "Member 0")
address.verified_on = now()
mlist.subscribe(address)
config.db.commit()
"""

_SERVE = """
import sys
from mailman.core.initialize import initialize
initialize(sys.argv[1])
from mailman.rest.gunicorn import make_gunicorn_server
make_gunicorn_server().run()
"""


def _copy_rows(
    db: Path,
    big_list_id: str,
    members: int,
    lists: int,
    domain: str,
    email: Callable[[int], str] | None = None,
) -> None:
    """Members 1 .. ``members``-1 of ``big_list_id`` (``email(i)``, by default
    memberNNNNNN@example.net) as copies of the first member's rows, and ``lists`` copies of
    the first list."""
    import sqlite3
    import uuid

    conn = sqlite3.connect(db)
    cur = conn.cursor()
    (addr_row,) = cur.execute("SELECT * FROM address ORDER BY id LIMIT 1").fetchall()
    (member_row,) = cur.execute("SELECT * FROM member ORDER BY id LIMIT 1").fetchall()
    next_pref = cur.execute("SELECT max(id) FROM preferences").fetchone()[0] + 1
    next_addr = cur.execute("SELECT max(id) FROM address").fetchone()[0] + 1
    next_member = cur.execute("SELECT max(id) FROM member").fetchone()[0] + 1
    prefs, addresses, rows = [], [], []
    for i in range(1, members):
        prefs += [(next_pref,), (next_pref + 1,)]
        address = email(i) if email is not None else f"member{i:06d}@example.net"
        addresses.append((next_addr, address, None, f"Member {i}", *addr_row[4:6], None, next_pref))
        member_id = uuid.uuid4().hex
        rows.append(
            (next_member, member_id, member_row[2], big_list_id, None, next_addr, next_pref + 1)
        )
        rows[-1] += tuple(member_row[7:])
        next_pref += 2
        next_addr += 1
        next_member += 1
    cur.executemany("INSERT INTO preferences (id) VALUES (?)", prefs)
    cur.executemany(f"INSERT INTO address VALUES ({','.join('?' * len(addr_row))})", addresses)
    cur.executemany(f"INSERT INTO member VALUES ({','.join('?' * len(member_row))})", rows)
    columns = [c[1] for c in cur.execute("PRAGMA table_info(mailinglist)")]
    source = cur.execute("SELECT * FROM mailinglist ORDER BY id LIMIT 1").fetchone()
    first_id = cur.execute("SELECT max(id) FROM mailinglist").fetchone()[0] + 1
    copies = []
    for i in range(lists):
        row = dict(zip(columns, source, strict=True))
        row.update(id=first_id + i, list_name=f"list{i:04d}", list_id=f"list{i:04d}.{domain}")
        copies.append(tuple(row[c] for c in columns))
    cur.executemany(f"INSERT INTO mailinglist VALUES ({','.join('?' * len(columns))})", copies)
    conn.commit()
    conn.close()


def prepare(
    venv: Path, root: Path, port: int, workers: int, domain: str, big: str, members: int, lists: int
) -> Path:
    """Write Mailman's configuration under ``root`` and fill its database."""
    var = root / "mailman"
    var.mkdir(parents=True, exist_ok=True)
    cfg = var / "mailman.cfg"
    cfg.write_text(CONFIG.format(domain=domain, var=var / "var", port=port, workers=workers))
    python = str(venv / "bin" / "python")
    subprocess.run([python, "-c", _SEED, str(cfg), domain, big], check=True, timeout=600)
    list_name, _at, host = big.partition("@")
    _copy_rows(var / "var" / "data" / "mailman.db", f"{list_name}.{host}", members, lists, domain)
    return cfg


def serve(venv: Path, cfg: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [str(venv / "bin" / "python"), "-c", textwrap.dedent(_SERVE), str(cfg)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


if __name__ == "__main__":  # pragma: no cover - a helper, run by bench/rest.py
    sys.exit("run bench/rest.py --mailman VENV")
