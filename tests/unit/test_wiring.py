"""mtaplugin.wiring: the one composition root."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine

from mtaplugin import config, i18n, wiring
from mtaplugin.clock import ManualClock
from mtaplugin.db import make_engine


def settings(tmp_path: Path, **env: str) -> config.Settings:
    return config.load(
        None, environ={"MTAPLUGIN_DATABASE_URL": f"sqlite:///{tmp_path / 'w.db'}", **env}
    )


def test_build_gives_every_part_once(tmp_path: Path):
    s = settings(
        tmp_path,
        MTAPLUGIN_DNS_NAMESERVERS="192.0.2.53",
        MTAPLUGIN_DNS_ON_FAILURE="mitigate",
        MTAPLUGIN_AUTHENTICATION_AUTHSERV_ID="mx.lists.test",
        MTAPLUGIN_AUTHENTICATION_TRUSTED_AUTHSERV_IDS="MX1.test, mx2.test",
    )
    world = wiring.build(s)
    try:
        assert world.settings is s
        assert isinstance(world.db, Engine)
        assert str(world.db.url) == s.database.url
        assert world.sessions.kw["bind"] is world.db
        assert world.resolver.nameservers == ("192.0.2.53",)
        # the mail authentication asks the world's resolver (one cache per process)
        assert world.mailauth.resolver is world.resolver
        assert world.mailauth.authserv_id == "mx.lists.test"
        assert world.mailauth.trusted == {"mx1.test", "mx2.test"}
        assert world.mailauth.on_failure == "mitigate"
    finally:
        world.close()


def test_build_sets_the_process_language(tmp_path: Path):
    try:
        wiring.build(settings(tmp_path, MTAPLUGIN_SITE_DEFAULT_LANGUAGE="de")).close()
        assert i18n.current_language() == "de"
    finally:
        i18n.set_default_language("en")


def test_a_test_passes_its_engine_and_its_clock(tmp_path: Path):
    engine = make_engine(f"sqlite:///{tmp_path / 'own.db'}")
    clock = ManualClock()
    world = wiring.build(settings(tmp_path), db=engine, clock=clock)
    assert world.db is engine
    assert world.clock is clock
    engine.dispose()


def test_the_workflow_reads_the_tokens_section(tmp_path: Path):
    s = settings(
        tmp_path,
        MTAPLUGIN_TOKENS_PENDING_REQUEST_LIFE="60",
        MTAPLUGIN_TOKENS_MODERATOR_REQUEST_LIFE="120",
        MTAPLUGIN_SITE_SITE_OWNER="owner@site.test",
    )
    flow = wiring.workflow(s)
    assert (flow.pending_life.total_seconds(), flow.moderator_life.total_seconds()) == (60, 120)
    assert flow.site_owner == "owner@site.test"
