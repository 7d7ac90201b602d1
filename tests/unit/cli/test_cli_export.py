"""``mtaplugin export``, ``import json`` and ``lists clone``: a list out as a JSON
document and back in, unchanged; bad documents refused naming the field, nothing changed."""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.enums import Action, DeliveryMode, DeliveryStatus, MemberRole
from mtaplugin.manage import bans, header_matches, lists, members
from tests.helpers import list_template
from tests.unit.cli.conftest import Run


def furnish(db: sessionmaker[Session], name: str) -> None:
    with db.begin() as s:
        mlist = lists.get(s, name)
        mlist.display_name, mlist.max_message_size = "Team Talk", 123
        mlist.accept_these_nonmembers = ["^.*@partner\\.example$"]
        ann = members.add(s, mlist, "ann@example.org", display_name="Ann")
        ann.delivery_mode, ann.moderation_action = DeliveryMode.mime_digests, Action.hold
        ann.delivery_status, ann.hide_address = DeliveryStatus.by_user, True
        members.add(s, mlist, "boss@example.org", MemberRole.owner)
        bans.add(s, mlist, "spam@example.net")
        header_matches.add(s, mlist, "x-spam-flag", "yes", Action.discard)
        s.add(
            list_template(
                mlist, "list:member:regular:footer", language="de", text="-- ${display_name}\n"
            )
        )


def test_export_then_import_under_another_name_gives_the_same_document(
    run: Run, db: sessionmaker[Session], team: str, tmp_path: Path
) -> None:
    furnish(db, team)
    exported = run("export", team)
    assert exported.code == 0, exported.err
    doc = json.loads(exported.out)
    assert doc["format"] == "mtaplugin-list" and doc["list"] == team
    assert doc["settings"]["display_name"] == "Team Talk"
    assert "moderator_password" not in doc["settings"]
    path = tmp_path / "team.json"
    path.write_text(exported.out)
    dry = run("import", "json", str(path), "--list", "copy@lists.test", "--dry-run")
    assert dry.code == 0 and "dry run" in dry.out
    with db() as s:
        assert lists.all_lists(s, "lists.test") and all(
            m.fqdn_listname != "copy@lists.test" for m, _ in lists.all_lists(s)
        )
    done = run("import", "json", str(path), "--list", "copy@lists.test")
    assert done.code == 0, done.err
    again = run("import", "json", str(path), "--list", "copy@lists.test")
    assert "already matches" in again.out
    copy = json.loads(run("export", "copy@lists.test").out)
    assert copy["list"] == "copy@lists.test"
    for key in ("settings", "members", "bans", "header_matches", "templates"):
        assert copy[key] == doc[key], key


def test_a_bad_document_names_the_field_and_changes_nothing(
    run: Run, db: sessionmaker[Session], team: str, tmp_path: Path
) -> None:
    doc = json.loads(run("export", team).out)
    doc["settings"]["max_message_size"] = "huge"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    bad = run("import", "json", str(path))
    assert bad.code == 1 and 'Invalid Parameter "max_message_size"' in bad.err
    doc = json.loads(run("export", team).out)
    doc["members"] = [{"email": "ann@example.org", "role": "boss"}]
    path.write_text(json.dumps(doc))
    bad = run("import", "json", str(path))
    assert bad.code == 1 and "members[0].role" in bad.err
    path.write_text('{"format": "something-else"}')
    assert "not an mtaplugin list document" in run("import", "json", str(path)).err
    path.write_text("{not json")
    assert "not JSON" in run("import", "json", str(path)).err
    with db() as s:
        assert lists.get(s, team).max_message_size == 40
        assert members.roster(s, lists.get(s, team), MemberRole.member) == []


def test_clone_copies_settings_not_members_unless_asked(
    run: Run, db: sessionmaker[Session], team: str
) -> None:
    furnish(db, team)
    done = run("lists", "clone", team, "twin@lists.test")
    assert done.code == 0, done.err
    with db() as s:
        twin = lists.get(s, "twin@lists.test")
        assert twin.display_name == "Team Talk" and twin.max_message_size == 123
        assert bans.is_banned(s, twin, "spam@example.net")
        assert members.roster(s, twin, MemberRole.member) == []
    again = run("lists", "clone", team, "twin@lists.test")
    assert again.code == 1 and "exists" in again.err
    full = run("lists", "clone", team, "full@lists.test", "--with-members")
    assert full.code == 0 and "(2 memberships)" in full.out
