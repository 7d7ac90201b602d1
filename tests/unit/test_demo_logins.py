"""``make demo`` gives both log-ins it prints: the moderator's (held posts) and the owner's
(settings and members), so that no page the demo points at answers 403."""

from __future__ import annotations

from pathlib import Path

import pytest

from mtaplugin import config, demo, passwords, wiring
from mtaplugin.manage import users
from mtaplugin.web.app import create_web_app
from tests.unit.webclient import CHEAP_PASSWORDS, Client


def test_the_demo_owner_and_moderator_can_log_in_to_their_pages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(passwords, "PASSWORDS", CHEAP_PASSWORDS)
    (tmp_path / "demo").mkdir()
    settings = config.load(demo.write_settings(tmp_path, "127.0.0.1:8001"), environ={})
    got = demo.populate(wiring.build(settings), "http://127.0.0.1:8001")
    assert got.owner != got.moderator
    world = wiring.build(settings)
    try:
        with world.sessions() as s:
            for email, password in ((demo.OWNER, got.owner), (demo.MODERATOR, got.moderator)):
                user = users.user_by_email(s, email)
                assert user is not None and users.check_password(user, password)
        site = create_web_app(world.settings, world.sessions)
        list_id = demo.LIST.replace("@", ".")
        owner = Client(site)
        assert owner.login(demo.OWNER, got.owner).status_code == 303
        assert owner.get(f"/lists/{list_id}/settings").status_code == 200
        assert owner.get(f"/lists/{list_id}/members").status_code == 200
        moderator = Client(site)
        assert moderator.login(demo.MODERATOR, got.moderator).status_code == 303
        assert moderator.get(f"/lists/{list_id}/held").status_code == 200
        assert moderator.get(f"/lists/{list_id}/settings").status_code == 403
    finally:
        world.close()
