"""The labs: a real private Postfix, Exim or Sendmail on 127.0.0.1, wired by contrib/ to a
real ``mtaplugin serve``, delivering to an aiosmtpd sink.  Each lab starts once per database
backend, the first time a test asks for it, and serves every test after (``lab_pool``);
each test makes its own lists.

``lab`` is the Postfix lab, ``exim`` the recommended Exim setup (decided in the ACLs),
``sendmail`` the milter behind Sendmail; ``front_end`` is each of the five front ends
(tests/integration/frontends.py) with its lab, for the scenarios every front end shares."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.db import make_engine, sessionmaker_for
from mtaplugin.manage import domains
from mtaplugin.testing import free_port
from mtaplugin.testing.dns import DnsServer
from mtaplugin.testing.exim import EximLab
from mtaplugin.testing.inn import PrivateInn
from mtaplugin.testing.lab import Lab
from mtaplugin.testing.mailauth import lab_dns  # noqa: F401  (a pytest fixture)
from mtaplugin.testing.mta import LabBase
from mtaplugin.testing.sendmail import SendmailLab
from tests.conftest import BACKENDS, fresh_database
from tests.integration.frontends import INLINE, RELAY_DENIED, FrontEnd
from tests.integration.labs import DOMAIN, PASSTHROUGH, make_list

__all__ = ["DOMAIN", "PASSTHROUGH", "make_list"]  # (imported from here by older tests)

L = TypeVar("L", bound=LabBase)

#: the authserv-id of "our" verifier, whose Authentication-Results the lab trusts
TRUSTED_VERIFIER = "mx.lab.test"
#: the authserv-id mtaplugin records in the ARC sets it adds
LAB_AUTHSERV_ID = "lists.lab.test"
#: signs one-click unsubscribe links (only lists whose domain has a base_url use it)
SECRET_KEY = "lab-secret-key-0123456789abcdef0123456789"
#: the private INN's port (the ``inn`` fixture), known to the Postfix labs' [nntp] settings
NEWS_PORT = free_port()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if os.geteuid() != 0:
        raise pytest.UsageError("the integration tests start a private Postfix: run them as root")


def lab_database(request: pytest.FixtureRequest, lab_root: Path, backend: str) -> str:
    """A fresh, migrated database on ``backend`` with the list domain in it; its URL.
    Open to every user on SQLite: Exim's pipe runs ``mtaplugin inject`` as Debian-exim,
    which writes the file and its journal."""
    url = fresh_database(request, backend, lab_root)
    engine = make_engine(url)
    with sessionmaker_for(engine).begin() as s:
        domains.create(s, DOMAIN, "integration tests")
    engine.dispose()
    if url.startswith("sqlite:///"):
        path = Path(url[len("sqlite:///") :])
        os.chmod(path.parent, 0o777)
        os.chmod(path, 0o666)
    return url


def sqlite_lab_home(request: pytest.FixtureRequest, lab_root: Path, name: str) -> tuple[Path, str]:
    """A directory of its own for the lab ``name`` under the run's lab root (the MTA's users
    may search it) with a fresh SQLite :func:`lab_database` in it: the lab's own
    directory (to give the lab as its root) and the database's URL."""
    root = lab_root / name
    root.mkdir()
    os.chmod(root, 0o755)
    return root / "lab", lab_database(request, root, "sqlite")


def postfix_lab(
    root: Path,
    url: str,
    dns: DnsServer,
    extra_relay_domains: tuple[str, ...] = (),
    command: tuple[str, ...] = ("serve",),
    debian: bool = False,
    sink_port: int = 0,
    env: dict[str, str] | None = None,
) -> Lab:
    """The Postfix lab on ``url`` (started by ``with``), trusting the lab's verifier;
    ``command``: ``("milter",)`` for the milter alone (no worker, no API); ``sink_port``:
    deliver to a sink the caller runs (several labs sharing one); ``env``: more settings."""
    return Lab(
        root=root,
        database_url=url,
        command=command,
        name=root.name,
        env={
            "MTAPLUGIN_AUTHENTICATION_TRUSTED_AUTHSERV_IDS": TRUSTED_VERIFIER,
            "MTAPLUGIN_AUTHENTICATION_AUTHSERV_ID": LAB_AUTHSERV_ID,
            "MTAPLUGIN_SITE_SECRET_KEY": SECRET_KEY,
            # the Usenet gateway: lists linked to a group queue their posts for the INN lab
            "MTAPLUGIN_NNTP_HOST": "127.0.0.1",
            "MTAPLUGIN_NNTP_PORT": str(NEWS_PORT),
            # every DMARC, DKIM and SPF lookup goes to the loopback DNS server
            **dns.environ(),
            # one line per milter connection: what the MTA sent it (milter_connection)
            "MTAPLUGIN_MILTER_LOG_CONNECTIONS": "true",
            **(env or {}),
        },
        extra_relay_domains=extra_relay_domains,
        debian=debian,
        external_sink_port=sink_port,
    )


def _exim(
    pool: LabPool,
    backend: str,
    variant: str,
    transport: str = "mtaplugin_lmtp",
    inline: bool = True,
) -> EximLab:
    name = f"exim-{variant}-{backend}"
    dns = pool.dns
    return EximLab(
        root=pool.root / name,
        database_url=lab_database(pool.request, pool.root, backend),
        transport=transport,
        inline=inline,
        passthrough_domains=(PASSTHROUGH,),
        name=name,
        # (the pipe's environment is cleared by Exim: the settings file says it)
        extra_settings=f'[dns]\nnameservers = "{dns.host}"\nport = {dns.port}\n',
    )


def _sendmail(pool: LabPool, backend: str) -> SendmailLab:
    name = f"sendmail-{backend}"
    url = lab_database(pool.request, pool.root, backend)
    env = {**pool.dns.environ(), "MTAPLUGIN_MILTER_LOG_CONNECTIONS": "true"}
    return SendmailLab(root=pool.root / name, database_url=url, name=name, env=env)


def _postfix(pool: LabPool, backend: str) -> Lab:
    url = lab_database(pool.request, pool.root, backend)
    return postfix_lab(
        pool.root / f"lab-{backend}", url, pool.dns, extra_relay_domains=(PASSTHROUGH,)
    )


def _postfix_debian(pool: LabPool, backend: str) -> Lab:
    url = lab_database(pool.request, pool.root, backend)
    return postfix_lab(
        pool.root / f"lab-debian-{backend}",
        url,
        pool.dns,
        extra_relay_domains=(PASSTHROUGH,),
        debian=True,
    )


#: each kind of lab, by the front end it runs (tests/integration/frontends.py)
_LABS: dict[str, Callable[[LabPool, str], LabBase]] = {
    "postfix-milter": _postfix,
    # Debian's stock main.cf/master.cf (chroot on) with contrib/postfix added as it is
    "postfix-debian": _postfix_debian,
    # the recommended setup: the ACLs, the routers and the LMTP transport
    "exim-acl": lambda pool, backend: _exim(pool, backend, "acl"),
    # without the ACLs: every post decided at delivery
    "exim-lmtp": lambda pool, backend: _exim(pool, backend, "lmtp", inline=False),
    "exim-pipe": lambda pool, backend: _exim(
        pool, backend, "pipe", transport="mtaplugin_pipe", inline=False
    ),
    "sendmail-milter": _sendmail,
}


class LabPool:
    """Every lab the session asked for, each started the first time and stopped at the end
    of the session (a lab takes seconds to start; an idle one costs nothing)."""

    def __init__(self, request: pytest.FixtureRequest, root: Path, dns: DnsServer) -> None:
        self.request, self.root, self.dns = request, root, dns
        self.started: dict[tuple[str, str], LabBase] = {}

    def get(self, front_end: str, backend: str) -> LabBase:
        key = (front_end, backend)
        if key not in self.started:
            lab = _LABS[front_end](self, backend)
            try:
                lab.start()
            except BaseException:
                lab.stop()
                raise
            self.started[key] = lab
        return self.started[key]

    def of(self, front_end: str, backend: str, kind: type[L]) -> L:
        """:meth:`get`, checked to be a lab of ``kind``."""
        started = self.get(front_end, backend)
        assert isinstance(started, kind), started
        return started

    def stop(self) -> None:
        for lab in reversed(self.started.values()):
            lab.stop()


@pytest.fixture(scope="session")
def lab_pool(
    request: pytest.FixtureRequest,
    lab_root: Path,
    lab_dns: DnsServer,  # noqa: F811
) -> Iterator[LabPool]:
    pool = LabPool(request, lab_root, lab_dns)
    yield pool
    pool.stop()


@pytest.fixture(scope="session", params=BACKENDS)
def lab(request: pytest.FixtureRequest, lab_pool: LabPool) -> Lab:
    """The Postfix lab."""
    return lab_pool.of("postfix-milter", request.param, Lab)


@pytest.fixture(scope="session", params=BACKENDS)
def debian_lab(request: pytest.FixtureRequest, lab_pool: LabPool) -> Lab:
    """Postfix from Debian's stock configuration, chrooted, with contrib/postfix."""
    return lab_pool.of("postfix-debian", request.param, Lab)


@pytest.fixture(scope="session", params=BACKENDS)
def exim(request: pytest.FixtureRequest, lab_pool: LabPool) -> EximLab:
    """The recommended Exim setup: the ACLs, the routers and the LMTP transport."""
    return lab_pool.of("exim-acl", request.param, EximLab)


@pytest.fixture(scope="session", params=BACKENDS)
def sendmail(request: pytest.FixtureRequest, lab_pool: LabPool) -> SendmailLab:
    """The milter behind Sendmail, the list domains from the access map."""
    return lab_pool.of("sendmail-milter", request.param, SendmailLab)


def _front_end(request: pytest.FixtureRequest, lab_pool: LabPool) -> Iterator[FrontEnd]:
    name, backend = request.param
    front = FrontEnd(name, lab_pool.get(name, backend))
    yield front
    front.close()


def _each(*front_ends: str) -> list[tuple[str, str]]:
    """These front ends, each on each backend."""
    return [(f, b) for f in front_ends for b in BACKENDS]


def _id(pair: tuple[str, str]) -> str:
    return "-".join(pair)


@pytest.fixture(scope="session", params=_each(*_LABS), ids=_id)
def front_end(request: pytest.FixtureRequest, lab_pool: LabPool) -> Iterator[FrontEnd]:
    """Each of the five front ends (its lab shared with the other tests)."""
    yield from _front_end(request, lab_pool)


@pytest.fixture(scope="session", params=_each(*INLINE), ids=_id)
def inline_front_end(request: pytest.FixtureRequest, lab_pool: LabPool) -> Iterator[FrontEnd]:
    """Each front end that decides during the SMTP dialogue."""
    yield from _front_end(request, lab_pool)


#: (the Debian lab's list domains come from a table mtaplugin rewrites within a second:
#: tests/integration/test_postfix_debian.py)
_ASKING = tuple(f for f in RELAY_DENIED if f != "postfix-debian")


@pytest.fixture(scope="session", params=_each(*_ASKING), ids=_id)
def relaying_front_end(request: pytest.FixtureRequest, lab_pool: LabPool) -> Iterator[FrontEnd]:
    """Each front end whose MTA asks mtaplugin which domains it relays (Postfix's
    relay_domains, Sendmail's access map)."""
    yield from _front_end(request, lab_pool)


@pytest.fixture(scope="session")
def inn(lab_root: Path) -> Iterator[PrivateInn]:
    """A private INN on loopback with the groups of :data:`mtaplugin.testing.inn.GROUPS`."""
    server = PrivateInn(lab_root / "inn", port=NEWS_PORT).start()
    yield server
    server.stop()


@pytest.fixture
def lab_sessions(lab: Lab) -> Iterator[sessionmaker[Session]]:
    engine = make_engine(lab.database_url)
    yield sessionmaker_for(engine)
    engine.dispose()


@pytest.fixture
def db(lab_sessions: sessionmaker[Session]) -> Iterator[Session]:
    """A session on the lab's database; commit what the milter must see."""
    with lab_sessions() as s:
        yield s
