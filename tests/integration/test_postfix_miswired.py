"""Each Postfix wiring mistake that ``mtaplugin check`` names (tests/unit/
test_check_postfix_wiring.py) does real harm, shown here on Debian's chrooted Postfix
with contrib/postfix (``debian_lab``), the mistake made with ``postconf -e``:

- an absolute milter socket path in the chrooted smtpd: a post to an unknown list is
  answered 250 and bounced later (backscatter), where the milter says 550 at RCPT;
- ``default_action=tempfail``: while mtaplugin is down, mail for another domain gets 4xx;
- the list-domain restriction left out: while mtaplugin is down, list mail gets 250 and
  waits undecided in the queue.

Each test also runs the check on the mutated files (an error with the service's name),
and puts main.cf back afterwards."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

from mtaplugin import config
from mtaplugin.check import Level, postfix
from mtaplugin.testing.lab import Lab
from tests.helpers import make_post, unique
from tests.integration.conftest import DOMAIN
from tests.integration.labs import PASSTHROUGH, copies, make_list, session_on, waits


@contextmanager
def miswired(lab: Lab, **values: str) -> Iterator[None]:
    """main.cf with these parameters changed (``postconf -e``) and Postfix reloaded; the
    file as it was, and reloaded, afterwards."""
    main = lab.postfix.conf / "main.cf"
    before = main.read_text()
    conf = str(lab.postfix.conf)
    try:
        for name, value in values.items():
            subprocess.run(["postconf", "-c", conf, "-e", f"{name}={value}"], check=True)
        subprocess.run(["postfix", "-c", conf, "reload"], check=True, capture_output=True)
        yield
    finally:
        main.write_text(before)
        subprocess.run(["postfix", "-c", conf, "reload"], check=True, capture_output=True)


def _findings(lab: Lab) -> dict[str, Level]:
    settings = config.load(None, environ=lab.process_env())  # the lab's mtaplugin's
    return {f.check: f.level for f in postfix.check(settings, lab.postfix.conf)}


def _service(lab: Lab) -> str:
    return f"127.0.0.1:{lab.smtp_port}"


def test_the_contrib_wiring_is_what_check_calls_ok(debian_lab: Lab) -> None:
    found = _findings(debian_lab)
    assert found["postfix.wiring"] == Level.ok, found
    assert Level.error not in found.values(), found


def test_an_absolute_socket_in_the_chrooted_smtpd_means_backscatter(debian_lab: Lab) -> None:
    lab = debian_lab
    unknown = f"{unique('nosuchlist')}@{DOMAIN}"
    sender = f"{unique('stranger')}@example.net"
    with miswired(lab, smtpd_milters=f"{{ unix:{lab.socket}, default_action=accept }}"):
        found = _findings(lab)
        assert found[f"postfix.milter_chroot.{_service(lab)}"] == Level.error, found

        # the chrooted smtpd cannot reach the socket: 250 for a list that does not exist
        def answered_250() -> bool:
            post = make_post(sender, unknown, subject=unique("backscatter"))
            return lab.send(sender, [unknown], post) is None

        waits(lab, answered_250, timeout=60)
        # ... and the refusal comes later, as a bounce to whoever the sender claimed to be
        waits(lab, lambda: [m for m in lab.sink.to(sender) if m.mail_from in {"", "<>"}])
    # wired as contrib says, the same post is refused at RCPT, nothing to bounce
    refused = lab.send(sender, [unknown], make_post(sender, unknown))
    assert refused is not None and refused.stage == "rcpt" and refused.code == 550, refused


def test_a_milter_that_does_not_fail_open_defers_other_domains_mail(debian_lab: Lab) -> None:
    lab = debian_lab
    other = unique("other-domain")
    milters = "{ unix:mtaplugin/milter.sock, default_action=tempfail }"
    with miswired(lab, smtpd_milters=milters):
        found = _findings(lab)
        assert found[f"postfix.milter_default_action.{_service(lab)}"] == Level.error, found
        lab.stop_mtaplugin()
        try:
            post = make_post("kim@example.org", f"max@{PASSTHROUGH}", subject=other)

            def deferred() -> bool:
                refused = lab.send("kim@example.org", [f"max@{PASSTHROUGH}"], post)
                return refused is not None and 400 <= refused.code < 500

            waits(lab, deferred, timeout=60)
        finally:
            lab.start_mtaplugin()
    assert not copies(lab, other, f"max@{PASSTHROUGH}")


def test_without_the_list_restriction_list_mail_is_taken_while_mtaplugin_is_down(
    debian_lab: Lab,
) -> None:
    lab = debian_lab
    with session_on(lab) as s:
        posting = make_list(s, "lou@example.org").posting_address
    subject = unique("undecided")
    with miswired(lab, smtpd_recipient_restrictions=""):
        found = _findings(lab)
        assert found[f"postfix.list_restriction.{_service(lab)}"] == Level.error, found
        lab.stop_mtaplugin()
        try:
            post = make_post("lou@example.org", posting, subject=subject)

            def taken() -> bool:
                return lab.send("lou@example.org", [posting], post) is None

            # 250 with nobody to decide it (contrib's restriction would say 451)
            waits(lab, taken, timeout=60)
            assert not copies(lab, subject, "lou@example.org")
        finally:
            lab.start_mtaplugin()
    # it waited in the queue, undecided, and is decided now that mtaplugin is back
    subprocess.run(["postqueue", "-c", str(lab.postfix.conf), "-f"], check=True, timeout=30)
    waits(lab, lambda: copies(lab, subject, "lou@example.org"), timeout=90)
