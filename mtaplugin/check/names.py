"""DNS: the resolver of ``[dns]`` answers, and every domain's DKIM key is published as it
is stored (:func:`mtaplugin.manage.dkim.published`, what ``mtaplugin dkim check`` asks;
here nothing is changed: a key waiting for DNS is not activated)."""

from __future__ import annotations

from sqlalchemy.orm import Session

from mtaplugin.check.finding import Finding, error, ok, warning
from mtaplugin.config import Settings
from mtaplugin.errors import TryLater
from mtaplugin.i18n import _
from mtaplugin.mailauth.resolver import Resolver


def servers(settings: Settings) -> str:
    dns = settings.dns
    if not dns.nameservers:
        return "/etc/resolv.conf"
    return ", ".join(f"{s}:{dns.port}" for s in dns.nameservers)


def check_resolver(settings: Settings, resolver: Resolver, domain: str) -> Finding:
    name = f"_dmarc.{domain}"
    try:
        resolver.txt(name)
    except TryLater as exc:
        return error(
            "dns.resolver",
            _("the resolver ({servers}) does not answer for {name}: {error}").format(
                servers=servers(settings), name=name, error=exc
            ),
            _(
                "posts whose DMARC policy cannot be read get 4xx until DNS answers: correct "
                "dns.nameservers, or the resolver of /etc/resolv.conf"
            ),
        )
    return ok(
        "dns.resolver",
        _("the resolver ({servers}) answers").format(servers=servers(settings)),
    )


def check_dkim(session: Session, resolver: Resolver) -> list[Finding]:
    from sqlalchemy import select

    from mtaplugin.manage import dkim
    from mtaplugin.model import DkimKey

    keys = list(session.scalars(select(DkimKey).order_by(DkimKey.id)))
    if not keys:
        return [
            ok(
                "dkim",
                _("no domain has a DKIM key: list mail leaves unsigned (`mtaplugin dkim keygen`)"),
            )
        ]
    findings: list[Finding] = []
    for key in keys:
        host = key.domain.mail_host
        try:
            published, found = dkim.published(resolver, key)
        except TryLater as exc:
            findings.append(
                warning(
                    "dkim",
                    _("{host}: DNS cannot say whether the key is published: {error}").format(
                        host=host, error=exc
                    ),
                    _("run `mtaplugin check` again once DNS answers"),
                )
            )
            continue
        if key.active and published:
            findings.append(
                ok("dkim", _("{host}: {found}; it signs").format(host=host, found=found))
            )
        elif key.active:
            findings.append(
                error(
                    "dkim",
                    _("{host}: the key that signs is not published: {found}").format(
                        host=host, found=found
                    ),
                    _("publish the record `mtaplugin dkim show {host}` prints").format(host=host),
                ),
            )
        elif published:
            findings.append(
                warning(
                    "dkim",
                    _("{host}: {found}, but the key does not sign yet").format(
                        host=host, found=found
                    ),
                    _("run `mtaplugin dkim check {host}` (the hourly job does it too)").format(
                        host=host
                    ),
                )
            )
        else:
            findings.append(
                warning(
                    "dkim",
                    _("{host}: the new key waits for DNS: {found}").format(host=host, found=found),
                    _("publish the record `mtaplugin dkim show {host}` prints").format(host=host),
                )
            )
    return findings
