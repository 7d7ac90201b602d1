"""``mtaplugin check`` reads Postfix's wiring as Postfix does (``postconf`` on written
files): contrib/postfix pasted into a Debian-style master.cf (smtpd chrooted) is all ok,
and each way a mail admin breaks it gets its own finding with the fix:

- an absolute milter socket path that the chrooted smtpd cannot reach (backscatter);
- a ``default_action`` other than accept (other domains' mail deferred while mtaplugin is
  down);
- the list-domain restriction missing, or placed after a ``permit_*``."""

from __future__ import annotations

from pathlib import Path

import pytest

from mtaplugin import config
from mtaplugin.check import Level, postfix, postfix_wiring
from mtaplugin.config import Settings
from mtaplugin.config.postconf import Postfix

CONTRIB = Path(__file__).resolve().parents[2] / "contrib" / "postfix"

#: Debian's stock master.cf lines for smtpd (chroot "y") and the contrib listener
MASTER_HEAD = "smtp      inet  n       -       y       -       -       smtpd\n"
TABLES = "/var/lib/mtaplugin/postfix"


def _pasted(tmp_path: Path, edit: tuple[str, str] | None = None) -> Postfix:
    """A configuration directory: a queue directory in tmp, contrib's main.cf lines
    (optionally with one replaced), Debian's smtpd line plus contrib's master.cf."""
    conf = tmp_path / "pf"
    conf.mkdir()
    main = (CONTRIB / "main.cf").read_text()
    if edit is not None:
        assert edit[0] in main, edit[0]
        main = main.replace(edit[0], edit[1])
    (conf / "main.cf").write_text(f"queue_directory = {tmp_path}/queue\n{main}")
    (conf / "master.cf").write_text(MASTER_HEAD + (CONTRIB / "master.cf").read_text())
    return Postfix(conf)


def _settings(tmp_path: Path) -> Settings:
    return config.load(
        None,
        environ={
            "MTAPLUGIN_MILTER_SOCKET": f"unix:{tmp_path}/queue/mtaplugin/milter.sock",
            "MTAPLUGIN_LOOKUP_TABLES_DIR": TABLES,
        },
    )


def _wiring(tmp_path: Path, edit: tuple[str, str] | None = None) -> list[postfix.Finding]:
    pf = _pasted(tmp_path, edit)
    return postfix.check(_settings(tmp_path), pf.conf)


def _by_name(findings: list[postfix.Finding], prefix: str) -> postfix.Finding:
    [found] = [f for f in findings if f.check.startswith(prefix)]
    return found


def test_contrib_pasted_into_a_chrooted_debian_master_cf_is_all_ok(tmp_path: Path) -> None:
    findings = _wiring(tmp_path)
    assert [f for f in findings if f.level != Level.ok] == []
    assert _by_name(findings, "postfix.wiring").found.startswith("smtpd smtp")


def test_an_absolute_socket_path_in_a_chrooted_smtpd_is_an_error_with_the_relative_fix(
    tmp_path: Path,
) -> None:
    absolute = f"unix:{tmp_path}/queue/mtaplugin/milter.sock"
    findings = _wiring(tmp_path, ("unix:mtaplugin/milter.sock, default", f"{absolute}, default"))
    found = _by_name(findings, "postfix.milter_chroot.smtp")
    assert found.level == Level.error
    assert "chrooted" in found.found and absolute in found.found
    assert "unix:mtaplugin/milter.sock" in found.fix


def test_the_same_absolute_path_in_an_smtpd_that_is_not_chrooted_is_fine(tmp_path: Path) -> None:
    service = postfix_wiring.Smtpd(
        "smtp",
        chrooted=False,
        values={
            "smtpd_milters": f"{{ unix:{tmp_path}/queue/mtaplugin/milter.sock, "
            "default_action=accept }"
        },
    )
    assert postfix_wiring.check_chroot(_settings(tmp_path), service, f"{tmp_path}/queue") is None


@pytest.mark.parametrize(
    ("edit", "action"),
    [
        (("default_action=accept", "default_action=tempfail"), "tempfail"),
        (("default_action=accept", "default_action=reject"), "reject"),
        # no default_action in the braces: Postfix's milter_default_action, tempfail
        ((", default_action=accept }", " }"), "tempfail"),
    ],
)
def test_a_milter_that_does_not_fail_open_is_an_error(
    tmp_path: Path, edit: tuple[str, str], action: str
) -> None:
    found = _by_name(_wiring(tmp_path, edit), "postfix.milter_default_action.smtp")
    assert found.level == Level.error
    assert f"default_action={action}" in found.found
    assert "default_action=accept" in found.fix


def test_a_global_milter_default_action_accept_is_enough(tmp_path: Path) -> None:
    findings = _wiring(
        tmp_path,
        (", default_action=accept }", " }\nmilter_default_action = accept"),
    )
    assert [f for f in findings if f.level != Level.ok] == []


def test_the_list_restriction_left_out_is_an_error(tmp_path: Path) -> None:
    line = f"smtpd_recipient_restrictions = check_recipient_access hash:{TABLES}/domains\n"
    found = _by_name(_wiring(tmp_path, (line, "")), "postfix.list_restriction.smtp")
    assert found.level == Level.error
    assert "250" in found.found
    assert f"check_recipient_access hash:{TABLES}/domains" in found.fix


def test_the_list_restriction_after_a_permit_is_an_error(tmp_path: Path) -> None:
    line = f"smtpd_recipient_restrictions = check_recipient_access hash:{TABLES}/domains"
    edited = (
        f"smtpd_recipient_restrictions = permit_mynetworks, "
        f"check_recipient_access hash:{TABLES}/domains, reject_unauth_destination"
    )
    found = _by_name(_wiring(tmp_path, (line, edited)), "postfix.list_restriction.smtp")
    assert found.level == Level.error and "permit_mynetworks" in found.found


def test_a_submission_service_overriding_the_restrictions_is_named(tmp_path: Path) -> None:
    pf = _pasted(tmp_path)
    with (pf.conf / "master.cf").open("a") as f:
        f.write(
            "submission inet n       -       y       -       -       smtpd\n"
            "  -o smtpd_recipient_restrictions=permit_sasl_authenticated,reject\n"
        )
    findings = postfix.check(_settings(tmp_path), pf.conf)
    found = _by_name(findings, "postfix.list_restriction.submission")
    assert found.level == Level.error
    assert not [f for f in findings if f.check.endswith(".smtp") and f.level != Level.ok]


def test_milter_lists_are_parsed_with_their_braces() -> None:
    parsed = postfix_wiring.parse_milters(
        "inet:127.0.0.1:8891, { unix:mtaplugin/milter.sock, default_action=accept }"
    )
    assert [(m.socket, m.options) for m in parsed] == [
        ("inet:127.0.0.1:8891", {}),
        ("unix:mtaplugin/milter.sock", {"default_action": "accept"}),
    ]
