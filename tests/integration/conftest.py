"""The lab: a real private Postfix on 127.0.0.1, wired by contrib/postfix/ to the real
mtaplugin milter over a unix socket, delivering to an aiosmtpd sink.  One lab per database
backend, shared by the tests of this directory; each test makes its own lists."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.db import make_engine, sessionmaker_for
from mtaplugin.manage import domains, lists, members
from mtaplugin.model import MailingList
from mtaplugin.testing.dns import DnsServer
from mtaplugin.testing.lab import Lab
from mtaplugin.testing.mailauth import lab_dns  # noqa: F401  (a pytest fixture)
from tests.conftest import BACKENDS, fresh_database
from tests.helpers import unique

DOMAIN = "lists.test"
PASSTHROUGH = "passthrough.test"
#: the authserv-id of "our" verifier, whose Authentication-Results the lab trusts
TRUSTED_VERIFIER = "mx.lab.test"
#: the authserv-id mtaplugin records in the ARC sets it adds
LAB_AUTHSERV_ID = "lists.lab.test"
#: signs one-click unsubscribe links (only lists whose domain has a base_url use it)
SECRET_KEY = "lab-secret-key-0123456789abcdef0123456789"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if os.geteuid() != 0:
        raise pytest.UsageError("the integration tests start a private Postfix: run them as root")


@pytest.fixture(scope="session", params=BACKENDS)
def lab(
    request: pytest.FixtureRequest,
    lab_root: Path,
    lab_dns: DnsServer,  # noqa: F811
) -> Iterator[Lab]:
    url = fresh_database(request, request.param, lab_root)
    engine = make_engine(url)
    with sessionmaker_for(engine).begin() as s:
        domains.create(s, DOMAIN, "integration tests")
    engine.dispose()
    lab = Lab(
        root=lab_root / f"lab-{request.param}",
        database_url=url,
        extra_relay_domains=(PASSTHROUGH,),
        name=f"lab-{request.param}",
        env={
            "MTAPLUGIN_AUTHENTICATION_TRUSTED_AUTHSERV_IDS": TRUSTED_VERIFIER,
            "MTAPLUGIN_AUTHENTICATION_AUTHSERV_ID": LAB_AUTHSERV_ID,
            "MTAPLUGIN_SITE_SECRET_KEY": SECRET_KEY,
            # every DMARC, DKIM and SPF lookup goes to the loopback DNS server
            **lab_dns.environ(),
        },
    )
    lab.start()
    yield lab
    lab.stop()


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


def make_list(db: Session, *regular: str, **settings: object) -> MailingList:
    """A new list in the lab's domain with these regular members and settings, committed."""
    mlist = lists.create(db, f"{unique('list')}@{DOMAIN}")
    for key, value in settings.items():
        setattr(mlist, key, value)
    for email in regular:
        members.add(db, mlist, email)
    db.commit()
    return mlist
