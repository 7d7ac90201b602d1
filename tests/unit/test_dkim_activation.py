"""A new DKIM key signs only once DNS publishes it: the hourly ``dkim-check`` job looks up
every waiting key on a real loopback DNS server and activates the published ones, on
SQLite and PostgreSQL, on a ManualClock."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin import config, wiring
from mtaplugin.clock import ManualClock, system_clock
from mtaplugin.db import engine_of
from mtaplugin.mailauth import signing
from mtaplugin.manage import dkim, domains
from mtaplugin.model import DkimKey
from mtaplugin.testing.dns import DnsServer
from mtaplugin.worker.registry import DKIM_CHECK, JOBS
from mtaplugin.worker.runner import Runner
from tests.helpers import unique


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(system_clock().replace(microsecond=0))


@pytest.fixture
def world(
    module_sessions: sessionmaker[Session], clock: ManualClock, dns_server: DnsServer
) -> Iterator[wiring.World]:
    env = {**dns_server.environ(), "MTAPLUGIN_DNS_TIMEOUT": "3", "MTAPLUGIN_DNS_CACHE_SIZE": "0"}
    settings = config.load(None, environ=env)
    yield wiring.build(settings, db=engine_of(module_sessions), clock=clock)


def run(world: wiring.World) -> int:
    outcome = Runner(world, [DKIM_CHECK]).run_now(DKIM_CHECK.name)
    assert not outcome.error, outcome.error
    assert outcome.result is not None
    return outcome.result


def new_key(sessions: sessionmaker[Session]) -> tuple[str, int]:
    host = f"{unique('d')}.test"
    with sessions.begin() as s:
        domains.create(s, host)
        return host, dkim.create(s, host, "sel", bits=1024).id


def signs(sessions: sessionmaker[Session], host: str) -> bool:
    with sessions() as s:
        return signing.key_for(s, host) is not None


def publish(dns_server: DnsServer, sessions: sessionmaker[Session], key_id: int) -> None:
    with sessions() as s:
        key = s.get(DkimKey, key_id)
        assert key is not None
        dns_server.zone.dkim(key.domain.mail_host, key.selector, signing.txt_value(key.private_key))


def test_the_job_is_registered_hourly() -> None:
    assert DKIM_CHECK in JOBS
    assert DKIM_CHECK.every == timedelta(hours=1)


def test_a_waiting_key_signs_once_dns_publishes_it(
    world: wiring.World,
    module_sessions: sessionmaker[Session],
    dns_server: DnsServer,
    clock: ManualClock,
) -> None:
    host, key_id = new_key(module_sessions)
    other, other_id = new_key(module_sessions)
    assert not signs(module_sessions, host)
    run(world)  # nothing published yet: nothing activated
    assert not signs(module_sessions, host) and not signs(module_sessions, other)
    publish(dns_server, module_sessions, key_id)
    clock.advance(timedelta(hours=1))
    assert run(world) >= 1
    assert signs(module_sessions, host)
    assert not signs(module_sessions, other)  # its record is still missing
    with module_sessions() as s:
        key = s.get(DkimKey, key_id)
        assert key is not None and key.activated_at == clock()
    activated_at = clock()
    clock.advance(timedelta(hours=1))
    run(world)  # an active key is left as it is
    with module_sessions() as s:
        key = s.get(DkimKey, key_id)
        assert key is not None and key.activated_at == activated_at
    publish(dns_server, module_sessions, other_id)
    run(world)
    assert signs(module_sessions, other)


def test_dns_down_activates_nothing_and_the_next_run_does(
    world: wiring.World, module_sessions: sessionmaker[Session], dns_server: DnsServer
) -> None:
    host, key_id = new_key(module_sessions)
    publish(dns_server, module_sessions, key_id)
    dns_server.zone.servfail()
    try:
        run(world)  # a DNS failure is no error of the job: the key waits for the next run
        assert not signs(module_sessions, host)
    finally:
        dns_server.zone.heal()
    run(world)
    assert signs(module_sessions, host)
