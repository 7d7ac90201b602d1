"""``mtaplugin domains add|alias|list|remove``: the mail domains that hold lists.

The CLI is the site admin's: ``--alias-domain`` and ``alias`` take any alias domain that
:mod:`mtaplugin.manage.alias_domains` does not refuse (another domain's, a public suffix,
one of the site's own mail domains)."""

from __future__ import annotations

import argparse

from mtaplugin import config
from mtaplugin.cli.common import Subparsers, group, leaf, scope
from mtaplugin.cli.confirm import add_yes, remove_confirmed
from mtaplugin.i18n import _


def cmd_domains_add(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.manage import domains
    from mtaplugin.manage.alias_domains import AliasRules

    with scope(settings) as s:
        d = domains.create(s, args.mail_host, args.description, args.base_url)
        if args.alias_domain:
            rules = AliasRules.of(settings, site_admin=True)
            domains.update(s, d, alias_domain=args.alias_domain, rules=rules)
        print(_("created domain {host}").format(host=d.mail_host))
    return 0


def cmd_domains_alias(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.manage import domains
    from mtaplugin.manage.alias_domains import AliasRules

    with scope(settings) as s:
        d = domains.get(s, args.mail_host)
        rules = AliasRules.of(settings, site_admin=True)
        domains.update(s, d, alias_domain=args.alias_domain, rules=rules)
        now = _("Alias domain now: {alias}").format(alias=d.alias_domain or _("none"))
        print(f"{d.mail_host}: {now}")
    return 0


def cmd_domains_list(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.manage import domains

    with scope(settings) as s:
        for d, count in domains.all_domains(s):
            print(f"{d.mail_host}\t{count}\t{d.description}")
    return 0


def cmd_domains_remove(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.manage import domains, lists

    host = args.mail_host.strip().lower()
    with scope(settings) as s:
        domains.get(s, host)
        what = [_("the domain {host}").format(host=host)] + [
            _("the list {list} and its {count} members").format(
                list=mlist.fqdn_listname, count=count
            )
            for mlist, count in lists.all_lists(s, host)
        ]
    done = _("removed domain {host} and its lists").format(host=args.mail_host)
    return remove_confirmed(args, settings, what, host, lambda s: domains.remove(s, host), done)


def register(sub: Subparsers) -> None:
    dom = group(sub, "domains", _("mail domains that hold lists"))
    p = leaf(dom, "add", cmd_domains_add, _("add a domain"))
    p.add_argument("mail_host")
    p.add_argument("--description", default="")
    p.add_argument("--base-url", default="")
    p.add_argument("--alias-domain", default="", help=_("Alias domain (empty: none)"))
    p = leaf(dom, "alias", cmd_domains_alias, _("set a domain's alias domain ('' clears it)"))
    p.add_argument("mail_host")
    p.add_argument("alias_domain", help=_("Alias domain (empty: none)"))
    leaf(dom, "list", cmd_domains_list, _("list domains (name, lists, description)"))
    p = leaf(dom, "remove", cmd_domains_remove, _("remove a domain and all its lists"))
    p.add_argument("mail_host")
    add_yes(p)
