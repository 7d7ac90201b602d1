"""docs/exim.md followed as written on Debian's own default Exim configuration.

exim4-config's ``exim4.conf.template`` with contrib/exim pasted where docs/exim.md's "On
Debian" steps put them, rendered as update-exim4.conf renders it for a loopback-only
machine that sends everything else to a smarthost (the sink), run the recommended way (the
ACLs and the LMTP transport, the list-domains file), Exim keeping root as an installed one
(mtaplugin.testing.exim_debian says what only the lab changes).  Then:

- a member's post reaches the members; a nonmember's is refused during the SMTP dialogue,
  from a relay client (127.0.0.1, Debian's ``relay_from_hosts``) and from any other host;
- mail for other domains flows through Debian's smarthost router;
- while mtaplugin is stopped, only list mail waits (451 at RCPT), other mail is delivered;
  list mail flows again once mtaplugin is back;
- ``mtaplugin check --exim`` on the rendered file reports no error.

SQLite only: what is tested is Debian's Exim around mtaplugin, not the database."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from mtaplugin.enums import Action
from mtaplugin.testing import wait_for
from mtaplugin.testing.exim_debian import DebianEximLab
from tests.helpers import make_post, run_mtaplugin, unique
from tests.integration.conftest import sqlite_lab_home
from tests.integration.labs import DOMAIN, as_installed, copies, make_list, session_on, waits

#: a client that is not in Debian's relay_from_hosts (127.0.0.1 and ::1 only)
STRANGER_HOST = "127.0.0.3"


@pytest.fixture(scope="module")
def debian_exim(request: pytest.FixtureRequest, lab_root: Path) -> Iterator[DebianEximLab]:
    home, url = sqlite_lab_home(request, lab_root, "exim-debian")
    lab = DebianEximLab(root=home, database_url=url, name="exim-debian")
    lab.start()
    try:
        wait_for(lambda: DOMAIN in lab.list_domains_file.read_text().split(), timeout=30)
        yield lab
    finally:
        lab.stop()


def test_contrib_sits_where_the_docs_say_in_debians_configuration(
    debian_exim: DebianEximLab,
) -> None:
    conf = debian_exim.exim.conf.read_text()
    rcpt = conf.index("\nacl_check_rcpt:\n")
    # acl_rcpt.conf first: before Debian's accepts for relay and authenticated clients
    snippet = conf.index("set acl_m_mtaplugin_rcpt = PASS", rcpt)
    assert snippet < conf.index("hosts = +relay_from_hosts", rcpt)
    assert snippet < conf.index("authenticated = *", rcpt)
    assert conf.index("\nmtaplugin_decided:\n") < conf.index("\nsmarthost:\n")
    assert "DCconfig_smarthost=1" in conf


def test_mtaplugin_check_finds_no_error(debian_exim: DebianEximLab) -> None:
    lab = debian_exim
    with as_installed(lab):
        done = run_mtaplugin(
            "--config", str(lab.config_file), "check", "--json",
            "--exim", str(lab.exim.conf), "--mta-user", "Debian-exim",
            env={},
        )  # fmt: skip
    out = done.stdout + done.stderr
    found = {f["check"]: f for f in json.loads(done.stdout)}
    assert {"exim.router", "exim.acl_rcpt"} <= set(found), out
    assert found["exim.router"]["level"] == "ok", out
    assert found["exim.acl_rcpt"]["level"] == "ok", out
    assert not [f for f in found.values() if f["level"] == "error"], out
    assert done.returncode == 0, out


def test_members_get_the_post_and_nonmembers_are_refused_inline(
    debian_exim: DebianEximLab,
) -> None:
    lab = debian_exim
    with session_on(lab) as db:
        posting = make_list(
            db, "member@example.net", default_nonmember_action=Action.reject
        ).posting_address
    subject = unique("debian-member")
    assert lab.send("member@example.net", [posting], make_post(
        "member@example.net", posting, subject=subject)) is None  # fmt: skip
    waits(lab, lambda: copies(lab, subject, "member@example.net"))

    for host in ("", STRANGER_HOST):  # a relay client, then any other host
        lab.source_host = host
        try:
            stranger = f"{unique('stranger')}@example.net"
            post = make_post(stranger, posting, subject=unique("debian-nonmember"))
            refused = lab.send(stranger, [posting], post)
        finally:
            lab.source_host = ""
        assert refused is not None and refused.code == 550, (host, refused)
    lab.exim.wait_queue_empty()
    assert not [m for m in lab.sink.messages if m.mail_from in {"", "<>"}]  # no bounce


def test_an_outage_of_mtaplugin_holds_up_list_mail_only(debian_exim: DebianEximLab) -> None:
    lab = debian_exim
    with session_on(lab) as db:
        posting = make_list(db, "member@example.net").posting_address
    lab.runner.stop()
    try:
        other = unique("debian-other")
        refused = lab.send("someone@example.net", ["friend@elsewhere.example"], make_post(
            "someone@example.net", "friend@elsewhere.example", subject=other))  # fmt: skip
        assert refused is None, refused
        waits(lab, lambda: copies(lab, other, "friend@elsewhere.example"))
        during = unique("debian-down")
        refused = lab.send("member@example.net", [posting], make_post(
            "member@example.net", posting, subject=during))  # fmt: skip
        assert refused is not None and refused.code == 451, refused
    finally:
        lab.start_mtaplugin()
    after = unique("debian-back")
    assert lab.send("member@example.net", [posting], make_post(
        "member@example.net", posting, subject=after)) is None  # fmt: skip
    waits(lab, lambda: copies(lab, after, "member@example.net"))
