"""``make demo`` gives both log-ins it prints: the moderator's (held posts) and the owner's
(settings and members), so that no page the demo points at answers 403."""

from __future__ import annotations

from email import message_from_bytes, policy
from pathlib import Path

import pytest
from sqlalchemy import select

from mtaplugin import config, passwords, wiring
from mtaplugin.demo import site as demo
from mtaplugin.manage import users
from mtaplugin.model import OutboxMessage
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


def test_the_demo_mails_reset_links_to_its_own_web_ui(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The demo names its web UI as ``[web] base_url``: a password reset asked on it (even
    with a forged ``Host:``) mails a link to the demo's address."""
    monkeypatch.setattr(passwords, "PASSWORDS", CHEAP_PASSWORDS)
    (tmp_path / "demo").mkdir()
    settings = config.load(demo.write_settings(tmp_path, "127.0.0.1:8001"), environ={})
    assert settings.web.base_url == "http://127.0.0.1:8001"
    demo.populate(wiring.build(settings), "http://127.0.0.1:8001")
    world = wiring.build(settings)
    try:
        client = Client(create_web_app(world.settings, world.sessions))
        asked = client.post("/reset", {"email": demo.OWNER}, headers={"Host": "evil.example"})
        assert asked.status_code == 200
        with world.sessions() as s:
            raw = s.scalars(select(OutboxMessage.raw).order_by(OutboxMessage.id.desc())).first()
        assert raw is not None
        text = message_from_bytes(raw, policy=policy.default).get_body(("plain",)).get_content()
        assert "http://127.0.0.1:8001/reset/" in text and "evil.example" not in text
    finally:
        world.close()
