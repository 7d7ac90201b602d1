"""DNS fails under a flow of posts through a real Postfix and milter: a server that never
answers (the lookups time out), one that answers SERVFAIL, one that answers garbage (the
query's ID, then random bytes) and one that answers half a packet.

mtaplugin checks DKIM, SPF, DMARC and ARC of every post here (``verify_incoming``) and
looks up the From: domain's DMARC policy for a list that mitigates.  The guarantee:

- a list that mitigates DMARC answers 4xx while the policy cannot be looked up
  (``dns.on_failure = "tempfail"``, the default): nothing leaves unmitigated, the sender
  retries and the post is delivered once DNS answers again;
- a list that does not mitigate fails open: the checks say ``temperror`` and the post is
  accepted at once (250), delivered once to every member;
- never a 5xx, never an exception in the milter, which keeps serving.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mtaplugin.db import make_engine, sessionmaker_for, upgrade
from mtaplugin.enums import DMARCMitigateAction
from mtaplugin.manage import domains, lists, members
from mtaplugin.testing.dns import DnsServer, Zone
from mtaplugin.testing.lab import Lab
from tests.faults.ledger import RUNS, FaultRow, record
from tests.faults.mailflow import Flow

DOMAIN = "dnsfaults.test"
MITIGATED = f"mitigated@{DOMAIN}"
PLAIN = f"plain@{DOMAIN}"
POSTER = "ann@example.org"
MEMBERS = [POSTER, "bob@example.net", "cat@example.com"]

#: the fault, and how to make the zone show it
FAULTS: dict[str, Callable[[Zone], None]] = {
    "DNS times out": Zone.drop,
    "DNS answers SERVFAIL": Zone.servfail,
    "DNS answers garbage": Zone.garbage,
    "DNS answers half a packet": Zone.truncate,
}


@pytest.fixture(scope="module")
def dns_lab(lab_root: Path) -> Iterator[tuple[DnsServer, Lab]]:
    url = f"sqlite:///{lab_root / 'dnsfaults' / 'lists.db'}"
    upgrade(url)
    engine = make_engine(url)
    with sessionmaker_for(engine).begin() as s:
        domains.create(s, DOMAIN)
        for address in (MITIGATED, PLAIN):
            mlist = lists.create(s, address)
            if address == MITIGATED:
                mlist.dmarc_mitigate_action = DMARCMitigateAction.munge_from
            for member in MEMBERS:
                members.add(s, mlist, member)
    engine.dispose()
    server = DnsServer().start()
    server.zone.dmarc("example.org", "v=DMARC1; p=reject")
    server.zone.spf("example.org", "v=spf1 ip4:127.0.0.1 -all")
    lab = Lab(
        root=lab_root / "lab-dns-faults",
        database_url=url,
        name="lab-dns-faults",
        env={
            **server.environ(),
            "MTAPLUGIN_DNS_TIMEOUT": "0.5",
            # every post asks DNS (a cached answer would hide the fault)
            "MTAPLUGIN_DNS_CACHE_SIZE": "0",
            "MTAPLUGIN_AUTHENTICATION_VERIFY_INCOMING": "true",
        },
    )
    lab.start()
    yield server, lab
    lab.stop()
    server.stop()


@pytest.mark.parametrize("fault", list(FAULTS))
def test_dns_fault(dns_lab: tuple[DnsServer, Lab], fault: str) -> None:
    server, lab = dns_lab
    lab.sink.clear()
    log_before = len(lab.log())
    mitigated = Flow(
        lab, MITIGATED, POSTER, MEMBERS, record(FaultRow(f"{fault}, DMARC mitigation", "sqlite"))
    )
    plain = Flow(lab, PLAIN, POSTER, MEMBERS, record(FaultRow(f"{fault}, no mitigation", "sqlite")))
    # DNS answers: both lists take the post at once
    mitigated.offer_new()
    plain.offer_new()
    asked = len(server.zone.queries)
    FAULTS[fault](server.zone)
    try:
        for _run in range(RUNS):
            mitigated.offer_new()
            plain.offer_new()
    finally:
        server.zone.heal()
    assert [a.code for a in mitigated.attempts] == [250] + [451] * RUNS, mitigated.attempts
    assert all(a.code == 250 for a in plain.attempts), plain.attempts
    # the checks did ask DNS during the fault (SPF of the MAIL FROM domain), and failed open
    assert ("example.org.", "TXT") in server.zone.queries[asked:], server.zone.queries[asked:]
    mitigated.drain()
    for flow in (mitigated, plain):
        row = flow.settle()
        assert row.refused == 0 and row.lost == 0 and row.duplicates == 0, row
        assert row.delivered == len(MEMBERS) * (1 + RUNS), row
    log = lab.log()[log_before:]
    assert "Traceback" not in log and "internal error" not in log, log[-3000:]
