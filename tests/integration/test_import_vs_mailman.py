"""mtaplugin's ``import mailman2`` against GNU Mailman 3.3.10's own ``mailman import21``,
on the three real 2.1 pickles Mailman ships: every setting both import, and every
membership, must come out the same, except the differences the docs list
(docs/import.md, ``mtaplugin.importers.mailman2.DIFFERENCES``).

Mailman runs from a throw-away virtualenv (:mod:`mtaplugin.testing.mailman_venv`), in a
private instance with its own SQLite database.
"""

from __future__ import annotations

import json
import subprocess
from datetime import datetime, timedelta
from enum import Enum
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.orm import Session

from mtaplugin.db import make_engine, sessionmaker_for
from mtaplugin.enums import MemberRole
from mtaplugin.importers import apply, mailman2, mm2pickle
from mtaplugin.manage import lists
from mtaplugin.model import Address, Member
from mtaplugin.testing.mailman_files import PICKLES, mailman_testing_file
from mtaplugin.testing.mailman_venv import configure, mailman_venv
from tests.conftest import fresh_database

LIST = "test@example.com"

#: settings where mtaplugin knowingly may differ from import21 (docs/import.md), and why
DOCUMENTED = {
    "unsubscription_policy": "import21 keeps Mailman 3's default; mtaplugin maps 2.1's",
    "digests_enabled": "import21 keeps digests offered; mtaplugin follows digestable",
}

#: Runs under Mailman's Python: the list's settings named in argv[3] and its rosters.
DUMP = """
import json, sys
from datetime import datetime, timedelta
from enum import Enum
from mailman.core.initialize import initialize
initialize(sys.argv[1])
from mailman.interfaces.listmanager import IListManager
from mailman.interfaces.member import MemberRole
from zope.component import getUtility
mlist = getUtility(IListManager).get(sys.argv[2])
def plain(v):
    if isinstance(v, Enum): return v.name
    if isinstance(v, timedelta): return v.total_seconds()
    if isinstance(v, datetime): return v.replace(tzinfo=None).isoformat(timespec="seconds")
    if isinstance(v, bytes): return v.decode("utf-8", "replace")
    if isinstance(v, (list, tuple)): return [plain(x) for x in v]
    if v is None or isinstance(v, (str, int, float, bool)): return v
    if hasattr(v, "code"): return v.code
    if hasattr(v, "__iter__"): return [plain(x) for x in v]
    return repr(v)
settings = {}
for k in json.loads(sys.argv[3]):
    try:
        settings[k] = plain(getattr(mlist, k))
    except Exception:
        pass
members = []
for role in MemberRole:
    for m in mlist.get_roster(role).members:
        members.append({"email": m.address.email, "role": role.name,
            "display_name": m.address.display_name or "",
            "delivery_mode": plain(m.delivery_mode),
            "delivery_status": plain(m.delivery_status),
            "moderation_action": plain(m.moderation_action),
            "language": m.preferred_language.code})
print(json.dumps({"settings": settings, "members": members}))
"""


def plain(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.name
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, datetime):
        return value.replace(tzinfo=None).isoformat(timespec="seconds")
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def mailman_import(pickle: Path, var: Path, keys: list[str]) -> dict[str, Any]:
    venv = mailman_venv()
    cfg = configure(var)
    mailman = [str(venv / "bin/mailman"), "--run-as-root", "-C", str(cfg)]
    subprocess.run([*mailman, "create", LIST], check=True, capture_output=True)
    subprocess.run([*mailman, "import21", LIST, str(pickle)], check=True, capture_output=True)
    done = subprocess.run(
        [str(venv / "bin/python"), "-c", DUMP, str(cfg), LIST, json.dumps(keys)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def ours(session: Session, pickle: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    plan = mailman2.plan(mm2pickle.load(pickle), LIST)
    apply.apply(session, plan)
    mlist = lists.get(session, LIST)
    settings = {k: plain(getattr(mlist, k)) for k in plan.settings}
    rows = (
        session.query(Member, Address.email)
        .join(Address)
        .filter(Member.mailing_list_id == mlist.id)
    )
    members = []
    for member, email in rows:
        action = member.moderation_action
        if action is None and member.role is MemberRole.member:
            action = mlist.default_member_action  # what applies to them
        members.append(
            {
                "email": email,
                "role": member.role.name,
                "display_name": member.display_name,
                "delivery_mode": plain(member.delivery_mode or "regular"),
                "delivery_status": plain(member.delivery_status or "enabled"),
                "moderation_action": plain(action),
                "language": member.preferred_language or mlist.preferred_language,
            }
        )
    return settings, members


@pytest.mark.parametrize("name", PICKLES)
def test_the_import_matches_mailman_3s_import21(
    name: str, request: pytest.FixtureRequest, lab_root: Path, tmp_path: Path
) -> None:
    pickle = mailman_testing_file(name)
    engine = make_engine(fresh_database(request, "sqlite", lab_root))
    try:
        with sessionmaker_for(engine).begin() as session:
            settings, members = ours(session, pickle)
    finally:
        engine.dispose()
    theirs = mailman_import(pickle, tmp_path / "mailman", sorted(settings))
    compared = sorted(set(settings) & set(theirs["settings"]))
    assert len(compared) > 50  # nearly every setting exists on both sides
    differing = {k for k in compared if settings[k] != theirs["settings"][k]}
    # Text that was not UTF-8 in 2.1: mtaplugin reads it in the charset of the list's
    # language, import21 loses it (docs/import.md).
    recoded = {k for k in differing if isinstance(settings[k], str) and not settings[k].isascii()}
    differing -= recoded
    if name == "config-greek.pck":
        assert recoded == {"info"} and settings["info"] == "Αυτή είναι μια λίστα."
    assert differing <= DOCUMENTED.keys(), {
        k: (settings[k], theirs["settings"][k]) for k in differing - DOCUMENTED.keys()
    }

    # Rosters: the same people in the same roles; for members, the same delivery, name,
    # status, moderation and language (owners' and moderators' own options aside).
    def key(m: dict[str, Any]) -> tuple[str, str]:
        return (m["email"], m["role"])

    assert sorted(map(key, members)) == sorted(map(key, theirs["members"]))
    mine = {key(m): m for m in members if m["role"] == "member"}
    for their in theirs["members"]:
        if their["role"] == "member":
            assert mine[key(their)] == their
