"""Test support for mail authentication end to end: a loopback DNS server that serves the
domains' DKIM keys, DMARC and SPF records to an mtaplugin process and to the verifiers.

In a conftest.py::

    from mtaplugin.testing.mailauth import lab_dns  # noqa: F401  (a pytest fixture)

    @pytest.fixture(scope="session")
    def lab(lab_dns, ...):
        lab = Lab(..., env={**lab_dns.environ(), ...})

and in a test::

    publish_domain_key(lab_dns.zone, session, "lists.test")   # after `dkim keygen`
    lab_dns.zone.dmarc("example.org", "v=DMARC1; p=reject")
    cv, sets, _ = dkim.arc_verify(delivered, dnsfunc=lab_dns.resolver().dkim_dnsfunc)
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy.orm import Session

from mtaplugin.mailauth import signing
from mtaplugin.manage import dkim as dkim_keys
from mtaplugin.testing.dns import DnsServer, Zone


def publish_domain_key(zone: Zone, session: Session, mail_host: str) -> str:
    """Publish the stored DKIM key of ``mail_host`` (as ``dkim keygen`` printed it);
    returns the TXT value."""
    key = dkim_keys.get(session, mail_host)
    assert key is not None
    value = signing.txt_value(key.private_key)
    zone.dkim(key.domain.mail_host, key.selector, value)
    return value


@pytest.fixture(scope="session")
def lab_dns() -> Iterator[DnsServer]:
    """A loopback DNS server for the whole session; its zone is changed by the tests."""
    server = DnsServer().start()
    yield server
    server.stop()
