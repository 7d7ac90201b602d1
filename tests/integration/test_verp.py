"""VERP through a real MTA: ``[bounces] verp_delivery_interval = 2`` VERPs every other post
of a list.  Postfix gets the post once from the outbox with ``XVERP`` (``outbox.xverp``,
set by the Postfix lab) and writes each member's sender from one queue file; Sendmail gets
one copy per member from the outbox.  The post in between is fanned out in place by the
milter, from the list's plain -bounces address.

These labs are their own (the shared labs VERP nothing)."""

from __future__ import annotations

import os
import smtplib
import subprocess
import sys
from collections.abc import Iterator

import pytest

from mtaplugin.bounces import verp
from mtaplugin.testing import free_port, wait_for
from mtaplugin.testing.mta import LabBase
from mtaplugin.testing.postfix import PrivatePostfix
from mtaplugin.testing.sendmail import SendmailLab
from mtaplugin.testing.sink import Sink
from tests.conftest import BACKENDS
from tests.helpers import make_post, unique
from tests.integration.conftest import LabPool, lab_database, postfix_lab
from tests.integration.labs import copies, make_list, posts, session_on, waits

PEOPLE = ("ann@example.org", "bob@example.org", "cy@example.net")
EVERY_OTHER_POST = {"MTAPLUGIN_BOUNCES_VERP_DELIVERY_INTERVAL": "2"}


@pytest.fixture(
    scope="module",
    params=[(mta, b) for mta in ("postfix", "sendmail") for b in BACKENDS],
    ids=lambda p: "-".join(p),
)
def verp_lab(request: pytest.FixtureRequest, lab_pool: LabPool) -> Iterator[LabBase]:
    mta, backend = request.param
    name = f"verp-{mta}-{backend}"
    url = lab_database(request, lab_pool.root, backend)
    lab: LabBase
    if mta == "postfix":
        lab = postfix_lab(lab_pool.root / name, url, lab_pool.dns)
        lab.env.update(EVERY_OTHER_POST)  # type: ignore[attr-defined]
    else:
        lab = SendmailLab(
            root=lab_pool.root / name,
            database_url=url,
            name=name,
            env={**lab_pool.dns.environ(), **EVERY_OTHER_POST},
        )
    with lab:
        yield lab


def senders(lab: LabBase, marker: str) -> dict[str, str]:
    got: dict[str, str] = {}
    for m in lab.sink.messages:
        if marker.encode() in m.data:
            for r in m.recipients:
                assert r not in got, f"{r} got two copies"
                got[r] = m.mail_from.strip("<>")
    return got


def test_every_other_post_goes_verped_to_each_member(verp_lab: LabBase) -> None:
    lab = verp_lab
    with session_on(lab) as s:
        mlist = make_list(s, *PEOPLE)
        s.expunge(mlist)
    bounces = mlist.bounces_address

    # The list's first post brings post_id to 2: VERPed.
    first = unique("verped")
    posts(lab, mlist, "ann@example.org", subject=first)
    waits(lab, lambda: all(copies(lab, first, p) for p in PEOPLE))
    assert senders(lab, first) == {p: verp.encode(bounces, p) for p in PEOPLE}

    # The second is not: one copy for all, from the list's -bounces address.
    second = unique("plain")
    posts(lab, mlist, "ann@example.org", subject=second)
    waits(lab, lambda: all(copies(lab, second, p) for p in PEOPLE))
    assert senders(lab, second) == dict.fromkeys(PEOPLE, bounces)

    if not isinstance(lab, SendmailLab):
        # Postfix took the VERPed post in one submission (one queue file for the three
        # members) and wrote each member's sender itself.
        log = lab.mta_log()
        assert any(
            f"from=<{bounces}>" in line and "nrcpt=3" in line for line in log.splitlines()
        ), log[-3000:]


#: a milter that only changes the envelope sender, asking for XVERP as an ESMTP argument
XVERP_MILTER = """\
import sys
import Milter

class M(Milter.Base):
    def eom(self):
        self.chgfrom("<probe-bounces@lists.test>", "XVERP=+=")
        return Milter.ACCEPT

Milter.factory = M
Milter.set_flags(Milter.CHGFROM)
Milter.runmilter("xverp-probe", sys.argv[1], 30)
"""


def test_postfix_ignores_xverp_asked_by_a_milter(
    request: pytest.FixtureRequest, lab_pool: LabPool
) -> None:
    """Why a VERPed post is never done in place: Postfix takes the milter's new sender
    (CHGFROM) but not its ESMTP arguments: XVERP asked that way is dropped without a
    word, and every member would get the plain sender."""
    root = lab_pool.root / "xverp-milter"
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o755)
    script = root / "xverp_probe.py"
    script.write_text(XVERP_MILTER)
    sock = root / "milter.sock"
    sink = Sink(free_port()).start()
    milter = subprocess.Popen([sys.executable, str(script), f"unix:{sock}"])
    postfix = PrivatePostfix(
        root=root / "postfix",
        smtp_port=free_port(),
        reinject_port=free_port(),
        relay_port=sink.port,
        milter_socket=f"unix:{sock}",
        database_url=lab_database(request, lab_pool.root, "sqlite"),
        name="xverp-milter",
        extra_relay_domains=("example.org",),
    )
    try:
        wait_for(sock.exists)
        os.chmod(sock, 0o666)
        postfix.start()
        people = ["ann@example.org", "bob@example.org"]
        post = make_post("poster@example.net", "ann@example.org", subject=unique("probe"))
        with smtplib.SMTP("127.0.0.1", postfix.smtp_port, timeout=30) as smtp:
            smtp.ehlo("client.test")
            smtp.sendmail("poster@example.net", people, post)
        wait_for(lambda: {r for m in sink.messages for r in m.recipients} >= set(people), 30)
        # the new sender arrived, not VERPed
        assert {m.mail_from for m in sink.messages} == {"probe-bounces@lists.test"}
    finally:
        postfix.stop()
        milter.terminate()
        milter.wait(10)
        sink.stop()
