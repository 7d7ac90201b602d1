"""The import layers at run time: the pure posting core (:mod:`mtaplugin.posting`) and the
vocabulary under it (:mod:`mtaplugin.vocabulary`) reach no SQL, SMTP or DNS.  Every module
of them is imported in a fresh interpreter, and none of the modules that talk to a
database, an MTA or a name server may have been loaded on the way.  (The package-level
contract, every layer and no cycles, is tests/unit/test_import_contract.py.)"""

from __future__ import annotations

import json
import subprocess
import sys

#: what the posting core must not load: the SQL layer (SQLAlchemy, the drivers, the model,
#: the sessions, the list loader), SMTP (smtplib, aiosmtpd, the outbox), DNS (dnspython, the
#: resolver) and the parts built on them (mail authentication's service and signing, the
#: engine, the people-facing managers)
FORBIDDEN = (
    "sqlalchemy",
    "psycopg",
    "sqlite3",
    "smtplib",
    "aiosmtpd",
    "dns",
    "dkim",
    "mtaplugin.db",
    "mtaplugin.model",
    "mtaplugin.lists.cache",
    "mtaplugin.lists.roster",
    "mtaplugin.lists.counters",
    "mtaplugin.outbox",
    "mtaplugin.mailauth.resolver",
    "mtaplugin.mailauth.service",
    "mtaplugin.mailauth.signing",
    "mtaplugin.mailauth.verify",
    "mtaplugin.engine",
    "mtaplugin.manage",
    "mtaplugin.notices",
    "mtaplugin.commands",
    "mtaplugin.frontends",
)

_PROBE = """
import importlib, json, pkgutil, sys
import mtaplugin.posting, mtaplugin.vocabulary
names = sorted(
    m.name
    for core in (mtaplugin.posting, mtaplugin.vocabulary)
    for m in pkgutil.walk_packages(core.__path__, core.__name__ + ".")
)
for name in names:
    importlib.import_module(name)
print(json.dumps({"imported": names, "loaded": sorted(sys.modules)}))
"""


def _loaded_by_the_posting_core() -> tuple[list[str], list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True, timeout=120
    )
    found = json.loads(done.stdout)
    return found["imported"], found["loaded"]


def test_the_posting_core_reaches_no_sql_smtp_or_dns():
    imported, loaded = _loaded_by_the_posting_core()
    # The probe really imported the core: the pipeline, the verdict and every rule.
    assert {"mtaplugin.posting.pipeline", "mtaplugin.posting.verdict"} <= set(imported)
    assert sum(n.startswith("mtaplugin.posting.rules.") for n in imported) >= 15
    assert {"mtaplugin.vocabulary.envelope", "mtaplugin.vocabulary.draft"} <= set(imported)
    reached = [m for m in loaded if any(m == bad or m.startswith(bad + ".") for bad in FORBIDDEN)]
    assert reached == []


def test_the_probe_would_see_a_forbidden_import():
    # The check above cannot pass by accident: the engine does reach SQL.
    done = subprocess.run(
        [sys.executable, "-c", "import sys, mtaplugin.engine; print('sqlalchemy' in sys.modules)"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert done.stdout.strip() == "True"


def test_a_caller_of_enqueue_loads_no_smtp_worker():
    """The outbox's face is enqueue: importing it loads neither SMTP, the relay that
    drains the outbox, nor bounce handling (it used to load all three)."""
    probe = "import json, sys, mtaplugin.outbox; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    loaded = json.loads(done.stdout)
    heavy = ("smtplib", "mtaplugin.relay", "mtaplugin.bounces", "mtaplugin.copies")
    assert [m for m in loaded if m.startswith(heavy)] == []
