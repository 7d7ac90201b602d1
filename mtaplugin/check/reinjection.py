"""The re-injection listener, over SMTP: it answers, takes XVERP when the outbox asks for
it, and no milter decides there.

The last is seen, not guessed: the listener is asked to take mail for an address in a list
domain that names no list (``RCPT TO``, then ``RSET``: nothing is sent).  mtaplugin's
milter refuses such an address at RCPT with 550 5.1.1; a listener without it accepts it."""

from __future__ import annotations

import secrets
import smtplib

from mtaplugin.check.finding import Finding, error, ok, warning
from mtaplugin.config import Settings
from mtaplugin.i18n import _

NAME = "outbox.listener"


def check(settings: Settings, list_domain: str | None, exim: bool = False) -> list[Finding]:
    """On an Exim host (``exim``) the outbox submits to Exim's own SMTP port, where
    contrib's RCPT ACL answers for list addresses (the 5.1.1); the outbox's recipients are
    members, which no statement of mtaplugin's asks about, so that answer is fine there."""
    out = settings.outbox
    where = f"{out.host}:{out.port}"
    try:
        with smtplib.SMTP(out.host, out.port, timeout=min(out.timeout, 10.0)) as smtp:
            smtp.ehlo("mtaplugin-check.invalid")
            findings = []
            if out.xverp and not smtp.has_extn("xverp"):
                findings.append(
                    error(
                        "outbox.xverp",
                        _("outbox.xverp is on, but {where} does not offer XVERP").format(
                            where=where
                        ),
                        _(
                            "add `-o smtpd_authorized_verp_clients=127.0.0.1` to the listener "
                            "in master.cf, or set outbox.xverp = false"
                        ),
                    )
                )
            if list_domain is None:
                findings.append(
                    ok(
                        NAME,
                        _("{where} answers (no list domain yet to test it with)").format(
                            where=where
                        ),
                    )
                )
                return findings
            probe = f"mtaplugin-check-{secrets.token_hex(4)}@{list_domain}"
            smtp.mail("")
            code, text = smtp.rcpt(probe)
            smtp.rset()
    except (TimeoutError, OSError, smtplib.SMTPException) as exc:
        return [
            error(
                NAME,
                _("the re-injection listener {where} does not answer: {error}").format(
                    where=where, error=exc
                ),
                _(
                    "add the service of contrib/postfix/master.cf to master.cf and "
                    "`postfix reload`, or correct outbox.host and outbox.port"
                ),
            )
        ]
    said = f"{code} {text.decode(errors='replace')}"
    if 200 <= code < 300:
        findings.append(
            ok(NAME, _("{where} answers, and no milter decides there").format(where=where))
        )
    elif code >= 500 and b"5.1.1" in text and exim:
        findings.append(
            ok(
                NAME,
                _(
                    "{where} answers; Exim's RCPT ACL refused {probe} ({said}), as it does "
                    "for any list domain address that names no list: the outbox's "
                    "recipients are members, which it lets through"
                ).format(where=where, probe=probe, said=said),
            )
        )
    elif code >= 500 and b"5.1.1" in text:
        findings.append(
            error(
                NAME,
                _(
                    "{where} runs mtaplugin's milter (it refused {probe}: {said}): what the "
                    "outbox sends would be decided again"
                ).format(where=where, probe=probe, said=said),
                _("add `-o smtpd_milters=` to the listener in master.cf, then `postfix reload`"),
            )
        )
    else:
        findings.append(
            warning(
                NAME,
                _("{where} answered {said} for {probe}").format(
                    where=where, said=said, probe=probe
                ),
                _(
                    "the listener must take any recipient from 127.0.0.1 "
                    "(contrib/postfix/master.cf: permit_mynetworks)"
                ),
            )
        )
    return findings
