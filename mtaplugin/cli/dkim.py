"""``mtaplugin dkim keygen|show|check|remove``: the keys that sign and ARC-seal what a
domain's lists send."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from mtaplugin import config
from mtaplugin.cli.common import Subparsers, group, leaf, scope
from mtaplugin.cli.confirm import NOT_CONFIRMED, add_yes, confirmed
from mtaplugin.i18n import _

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from mtaplugin.model import DkimKey


def _key(s: Session, mail_host: str) -> DkimKey:
    """The key of ``mail_host`` (``dkim.get`` refuses a domain without one)."""
    from mtaplugin.manage import dkim

    key = dkim.get(s, mail_host)
    assert key is not None
    return key


def _print_key(mail_host: str, key: DkimKey) -> None:
    from mtaplugin.mailauth import signing

    print(_("Publish this TXT record in the DNS of {host}:").format(host=mail_host))
    print(signing.txt_record(mail_host, key.selector, key.private_key))
    print()
    print(_("name:  {name}").format(name=f"{key.selector}._domainkey.{mail_host}"))
    print(_("value: {value}").format(value=signing.txt_value(key.private_key)))


def cmd_dkim_keygen(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.manage import dkim
    from mtaplugin.model.dkim import DEFAULT_SIGNED_HEADERS

    with scope(settings) as s:
        key = dkim.create(
            s,
            args.mail_host,
            args.selector,
            args.algorithm,
            args.bits,
            args.headers or DEFAULT_SIGNED_HEADERS,
            args.replace,
        )
        _print_key(key.domain.mail_host, key)
    return 0


def cmd_dkim_show(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.mailauth import signing

    with scope(settings) as s:
        key = _key(s, args.mail_host)
        print(_("selector:  {selector}").format(selector=key.selector))
        print(_("algorithm: {algorithm}").format(algorithm=signing.key_algorithm(key.private_key)))
        print(_("created:   {when}").format(when=key.created_at.isoformat(timespec="seconds")))
        print(_("signs:     {headers}").format(headers=key.signed_headers))
        _print_key(key.domain.mail_host, key)
    return 0


def cmd_dkim_check(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.db import session_scope
    from mtaplugin.manage import dkim
    from mtaplugin.wiring import build

    world = build(settings)
    with session_scope(world.sessions) as s:
        key = _key(s, args.mail_host)
        ok, found = dkim.published(world.resolver, key)
    print(found, file=sys.stdout if ok else sys.stderr)
    return 0 if ok else 1


def cmd_dkim_remove(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.manage import dkim

    host = args.mail_host.strip().lower()
    with scope(settings) as s:
        key = dkim.get(s, host)
        assert key is not None
        what = [
            _("the DKIM key {selector}._domainkey.{host}: the domain's mail is not signed").format(
                selector=key.selector, host=host
            )
        ]
    if not confirmed(args, what, host):
        return NOT_CONFIRMED
    with scope(settings) as s:
        dkim.remove(s, host)
    print(_("removed the DKIM key of {host}").format(host=args.mail_host.strip().lower()))
    return 0


def register(sub: Subparsers) -> None:
    dk = group(sub, "dkim", _("DKIM keys that sign and ARC-seal what a domain's lists send"))
    p = leaf(dk, "keygen", cmd_dkim_keygen, _("make a key; prints the DNS record to publish"))
    p.add_argument("mail_host", metavar="DOMAIN")
    p.add_argument("--selector", help=_("the DNS selector (default: mtaplugin<YYYYMM>)"))
    p.add_argument("--bits", type=int, default=2048, help=_("RSA key size (default 2048)"))
    p.add_argument("--algorithm", choices=("rsa", "ed25519"), default="rsa")
    p.add_argument("--headers", help=_("header fields to sign, separated by colons"))
    p.add_argument("--replace", action="store_true", help=_("replace the domain's key"))
    p = leaf(dk, "show", cmd_dkim_show, _("show a domain's key and its DNS record"))
    p.add_argument("mail_host", metavar="DOMAIN")
    p = leaf(dk, "check", cmd_dkim_check, _("check that DNS publishes the domain's key"))
    p.add_argument("mail_host", metavar="DOMAIN")
    p = leaf(dk, "remove", cmd_dkim_remove, _("remove a domain's key (its mail is not signed)"))
    p.add_argument("mail_host", metavar="DOMAIN")
    add_yes(p)
