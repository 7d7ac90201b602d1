"""How contrib/exim is wired, tried on a real private Exim.

On Exim, an outage of mtaplugin touches list mail only, as on Postfix: contrib/exim's
ACL and router ask mtaplugin only about the domains in the file it keeps
(``exim.domains_file``, read with ``lsearch``).  Each way (the ACLs, the LMTP transport
alone, the pipe alone) is wired as contrib installs it, mtaplugin is stopped, and:

- mail for another domain is delivered while mtaplugin is down (before the domain list,
  the ACL and the router asked mtaplugin about every address, and Exim deferred it);
- list mail waits: 451 at RCPT in the ACL way, in Exim's queue in the other two, and is
  delivered to the members once mtaplugin is back.

And acl_rcpt.conf pasted after ``accept hosts = +relay_from_hosts`` (where Debian's
default configuration would put it if pasted at the end) lets those clients' posts in
undecided: a nonmember's post to a list that refuses nonmembers is answered 250 and
refused later by a bounce, which ``mtaplugin check --exim`` names.

SQLite only: what is tested is Exim's routing around mtaplugin, not the database."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mtaplugin.check import Level
from mtaplugin.check import exim as exim_check
from mtaplugin.enums import Action
from mtaplugin.testing import wait_for
from mtaplugin.testing.exim import EximLab
from tests.helpers import make_post, unique
from tests.integration.conftest import DOMAIN, sqlite_lab_home
from tests.integration.labs import PASSTHROUGH, copies, make_list, session_on, waits

VARIANTS = {
    "acl": {"transport": "mtaplugin_lmtp", "inline": True},
    "lmtp": {"transport": "mtaplugin_lmtp", "inline": False},
    "pipe": {"transport": "mtaplugin_pipe", "inline": False},
}


@pytest.fixture(params=sorted(VARIANTS), scope="module")
def outage_lab(request: pytest.FixtureRequest, lab_root: Path) -> Iterator[EximLab]:
    home, url = sqlite_lab_home(request, lab_root, f"exim-outage-{request.param}")
    lab = EximLab(
        root=home,
        database_url=url,
        passthrough_domains=(PASSTHROUGH,),
        name=f"exim-outage-{request.param}",
        domains_file=True,
        **VARIANTS[request.param],  # type: ignore[arg-type]
    )
    lab.start()
    try:
        yield lab
    finally:
        lab.stop()


def _lists_domain(lab: EximLab) -> bool:
    try:
        return DOMAIN in lab.list_domains_file.read_text().split()
    except FileNotFoundError:
        return False


def test_only_list_mail_waits_while_mtaplugin_is_down(outage_lab: EximLab) -> None:
    lab = outage_lab
    # the wiring that makes it so is what `mtaplugin check --exim` calls ok
    findings = {f.check: f.level for f in exim_check.check(lab.exim.conf)}
    assert findings["exim.router"] == Level.ok
    assert findings["exim.acl_rcpt"] == (Level.ok if lab.exim.inline else Level.warning)
    with session_on(lab) as db:
        mlist = make_list(db, "member@example.net")
        posting = mlist.posting_address
    wait_for(lambda: _lists_domain(lab), timeout=30)
    before = unique("exim-up")
    post = make_post("member@example.net", posting, subject=before)
    assert lab.send("member@example.net", [posting], post) is None
    waits(lab, lambda: copies(lab, before, "member@example.net"))
    lab.runner.stop()
    try:
        other = unique("exim-other")
        refused = lab.send(
            "someone@example.net",
            [f"friend@{PASSTHROUGH}"],
            make_post("someone@example.net", f"friend@{PASSTHROUGH}", subject=other),
        )
        assert refused is None, refused
        waits(lab, lambda: copies(lab, other, f"friend@{PASSTHROUGH}"))

        during = unique("exim-down")
        post = make_post("member@example.net", posting, subject=during)
        refused = lab.send("member@example.net", [posting], post)
        if lab.exim.inline:
            assert refused is not None and refused.code == 451, refused
        else:
            assert refused is None, refused  # queued by Exim: the router defers it
            lab.exim.exim("-qff", check=False)  # a whole queue run, here and now
            assert not lab.exim.queue_empty()
            assert not copies(lab, during, "member@example.net")
    finally:
        lab.start_mtaplugin()
    if not lab.exim.inline:
        lab.exim.exim("-qff", check=False)  # a queue run now, not at the next -q5s
        waits(lab, lambda: copies(lab, during, "member@example.net"), timeout=120)


def test_the_rcpt_snippet_after_an_accept_means_backscatter(
    request: pytest.FixtureRequest, lab_root: Path
) -> None:
    home, url = sqlite_lab_home(request, lab_root, "exim-misplaced")
    lab = EximLab(
        root=home,
        database_url=url,
        passthrough_domains=(PASSTHROUGH,),
        name="exim-misplaced",
        rcpt_acl_after_accept=True,
    )
    lab.start()
    try:
        [acl] = [f for f in exim_check.check(lab.exim.conf) if f.check == "exim.acl_rcpt"]
        assert acl.level == Level.error and "relay_from_hosts" in acl.found
        with session_on(lab) as db:
            posting = make_list(
                db, "member@example.net", default_nonmember_action=Action.reject
            ).posting_address
        stranger = f"{unique('stranger')}@example.net"
        post = make_post(stranger, posting, subject=unique("misplaced"))
        # from 127.0.0.1 (relay_from_hosts): accepted before mtaplugin is asked
        assert lab.send(stranger, [posting], post) is None
        # the LMTP transport refuses it at delivery: a bounce to the claimed sender
        waits(lab, lambda: [m for m in lab.sink.to(stranger) if m.mail_from in {"", "<>"}])
    finally:
        lab.stop()
