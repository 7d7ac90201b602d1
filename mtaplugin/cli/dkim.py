"""``mtaplugin dkim keygen|show|check|remove``: the keys that sign and ARC-seal what a
domain's lists send."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from mtaplugin import config
from mtaplugin.cli.common import Handler, Subparsers, group, leaf, scope
from mtaplugin.cli.confirm import add_yes, remove_confirmed
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


def _print_state(s: Session, mail_host: str, key: DkimKey) -> None:
    from mtaplugin.manage import dkim

    if key.activated_at is not None:
        print(
            _("signing:   yes, since {when}").format(
                when=key.activated_at.isoformat(timespec="seconds")
            )
        )
    else:
        print(
            _(
                "signing:   not yet: the key signs once `mtaplugin dkim check {host}` has seen "
                "its record in DNS (checked every hour until then)"
            ).format(host=mail_host)
        )
        current = dkim.signing_key(s, mail_host)
        if current is not None:
            print(
                _(
                    "           until then the key with selector {selector} signs: keep its "
                    "record published"
                ).format(selector=current.selector)
            )


def cmd_dkim_keygen(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.db import session_scope
    from mtaplugin.manage import dkim
    from mtaplugin.model.dkim import DEFAULT_SIGNED_HEADERS
    from mtaplugin.wiring import build

    world = build(settings)
    with session_scope(world.sessions) as s:
        key = dkim.create(
            s,
            args.mail_host,
            args.selector,
            args.algorithm,
            args.bits,
            args.headers or DEFAULT_SIGNED_HEADERS,
            args.replace,
            activate=args.activate,
            now=world.clock(),
        )
        _print_key(key.domain.mail_host, key)
        print()
        _print_state(s, key.domain.mail_host, key)
    return 0


def cmd_dkim_show(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.mailauth import signing
    from mtaplugin.manage import dkim

    with scope(settings) as s:
        _key(s, args.mail_host)  # refuses a domain without a key
        # every key: one, two during a rollover, or an RSA and an Ed25519 key side by side
        for n, key in enumerate(dkim.keys(s, args.mail_host)):
            if n:
                print()
            print(_("selector:  {selector}").format(selector=key.selector))
            print(
                _("algorithm: {algorithm}").format(algorithm=signing.key_algorithm(key.private_key))
            )
            print(_("created:   {when}").format(when=key.created_at.isoformat(timespec="seconds")))
            print(_("signs:     {headers}").format(headers=key.signed_headers))
            _print_state(s, key.domain.mail_host, key)
            _print_key(key.domain.mail_host, key)
    return 0


def cmd_dkim_check(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.db import session_scope
    from mtaplugin.manage import dkim
    from mtaplugin.wiring import build

    world = build(settings)
    all_ok = True
    with session_scope(world.sessions) as s:
        _key(s, args.mail_host)  # refuses a domain without a key
        host = args.mail_host.strip().lower()
        # the waiting keys first: activating one removes the key it replaces
        for key in sorted(dkim.keys(s, host), key=lambda k: k.active):
            if s.get(type(key), key.id) is None:
                continue  # removed by a rollover just now
            was_active = key.active
            ok, found = dkim.check(world.resolver, key, world.clock())
            all_ok = all_ok and ok
            print(found, file=sys.stdout if ok else sys.stderr)
            if ok and not was_active:
                print(_("the key of {host} signs from now on").format(host=host))
            elif not ok and not was_active:
                print(
                    _("the key of {host} does not sign until DNS publishes it").format(host=host),
                    file=sys.stderr,
                )
    return 0 if all_ok else 1


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
    done = _("removed the DKIM key of {host}").format(host=host)
    return remove_confirmed(args, settings, what, host, lambda s: dkim.remove(s, host), done)


def _domain_leaf(
    dk: Subparsers, name: str, handler: Handler, help_text: str
) -> argparse.ArgumentParser:
    """One action on one domain's key, named first (``DOMAIN``)."""
    p = leaf(dk, name, handler, help_text)
    p.add_argument("mail_host", metavar="DOMAIN")
    return p


def register(sub: Subparsers) -> None:
    dk = group(sub, "dkim", _("DKIM keys that sign and ARC-seal what a domain's lists send"))
    p = _domain_leaf(
        dk, "keygen", cmd_dkim_keygen, _("make a key; prints the DNS record to publish")
    )
    p.add_argument("--selector", help=_("the DNS selector (default: mtaplugin<YYYYMM>)"))
    p.add_argument("--bits", type=int, default=2048, help=_("RSA key size (default 2048)"))
    p.add_argument("--algorithm", choices=("rsa", "ed25519"), default="rsa")
    p.add_argument("--headers", help=_("header fields to sign, separated by colons"))
    p.add_argument(
        "--replace",
        action="store_true",
        help=_(
            "replace the domain's key (the old one signs until the new one is published, "
            "under a selector of its own)"
        ),
    )
    p.add_argument(
        "--activate",
        action="store_true",
        help=_(
            "sign with it at once: its record is published already (otherwise it signs "
            "once `dkim check` has seen the record)"
        ),
    )
    _domain_leaf(dk, "show", cmd_dkim_show, _("show a domain's key and its DNS record"))
    _domain_leaf(
        dk,
        "check",
        cmd_dkim_check,
        _("check that DNS publishes the domain's key; a new key signs from then on"),
    )
    p = _domain_leaf(
        dk, "remove", cmd_dkim_remove, _("remove a domain's key (its mail is not signed)")
    )
    add_yes(p)
