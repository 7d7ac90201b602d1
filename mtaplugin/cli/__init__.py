"""The ``mtaplugin`` command."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence
from typing import Any

from mtaplugin import config
from mtaplugin.errors import MtapluginError
from mtaplugin.i18n import _, set_default_language

Handler = Callable[[argparse.Namespace, config.Settings], int]


def _sessions(settings: config.Settings) -> Any:
    from mtaplugin.db import make_engine, sessionmaker_for

    return sessionmaker_for(make_engine(settings.database.url, settings.database.timeout))


def _scope(settings: config.Settings) -> Any:
    from mtaplugin.db import session_scope

    return session_scope(_sessions(settings))


# --- db -----------------------------------------------------------------------------------
def cmd_db_upgrade(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.db import upgrade

    upgrade(settings.database.url)
    print(_("database is at the newest revision: {url}").format(url=_safe_url(settings)))
    return 0


def cmd_db_current(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.db import current_revision, make_engine

    print(current_revision(make_engine(settings.database.url)) or _("(empty database)"))
    return 0


def _safe_url(settings: config.Settings) -> str:
    from sqlalchemy.engine import make_url

    return make_url(settings.database.url).render_as_string(hide_password=True)


# --- domains ------------------------------------------------------------------------------
def cmd_domains_add(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.manage import domains

    with _scope(settings) as s:
        d = domains.create(s, args.mail_host, args.description, args.base_url)
        print(_("created domain {host}").format(host=d.mail_host))
    return 0


def cmd_domains_list(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.manage import domains

    with _scope(settings) as s:
        for d, count in domains.all_domains(s):
            print(f"{d.mail_host}\t{count}\t{d.description}")
    return 0


def cmd_domains_remove(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.manage import domains

    with _scope(settings) as s:
        domains.remove(s, args.mail_host)
    print(_("removed domain {host} and its lists").format(host=args.mail_host))
    return 0


# --- dkim ---------------------------------------------------------------------------------
def _print_key(mail_host: str, key: Any) -> None:
    from mtaplugin.mailauth import signing

    print(_("Publish this TXT record in the DNS of {host}:").format(host=mail_host))
    print(signing.txt_record(mail_host, key.selector, key.private_key))
    print()
    print(_("name:  {name}").format(name=f"{key.selector}._domainkey.{mail_host}"))
    print(_("value: {value}").format(value=signing.txt_value(key.private_key)))


def cmd_dkim_keygen(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.manage import dkim
    from mtaplugin.model.dkim import DEFAULT_SIGNED_HEADERS

    with _scope(settings) as s:
        key = dkim.create(
            s,
            args.mail_host,
            args.selector,
            args.algorithm,
            args.bits,
            args.headers or DEFAULT_SIGNED_HEADERS,
            args.replace,
        )
        host = key.domain.mail_host
        _print_key(host, key)
    return 0


def cmd_dkim_show(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.mailauth import signing
    from mtaplugin.manage import dkim

    with _scope(settings) as s:
        key = dkim.get(s, args.mail_host)
        assert key is not None
        host = key.domain.mail_host
        print(_("selector:  {selector}").format(selector=key.selector))
        print(_("algorithm: {algorithm}").format(algorithm=signing.key_algorithm(key.private_key)))
        print(_("created:   {when}").format(when=key.created_at.isoformat(timespec="seconds")))
        print(_("signs:     {headers}").format(headers=key.signed_headers))
        _print_key(host, key)
    return 0


def cmd_dkim_check(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.mailauth.resolver import from_settings
    from mtaplugin.manage import dkim

    with _scope(settings) as s:
        key = dkim.get(s, args.mail_host)
        assert key is not None
        ok, found = dkim.published(from_settings(settings), key)
    print(found, file=sys.stdout if ok else sys.stderr)
    return 0 if ok else 1


def cmd_dkim_remove(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.manage import dkim

    with _scope(settings) as s:
        dkim.remove(s, args.mail_host)
    print(_("removed the DKIM key of {host}").format(host=args.mail_host.strip().lower()))
    return 0


# --- lists --------------------------------------------------------------------------------
def cmd_lists_create(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.manage import lists, members
    from mtaplugin.model.enums import MemberRole

    with _scope(settings) as s:
        mlist = lists.create(
            s, args.fqdn_listname, args.style, args.display_name or "", args.description
        )
        for owner in args.owner or []:
            members.add(s, mlist, owner, MemberRole.owner)
        print(_("created list {name}").format(name=mlist.fqdn_listname))
    return 0


def cmd_lists_list(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.manage import lists

    with _scope(settings) as s:
        for mlist, count in lists.all_lists(s, args.domain):
            print(f"{mlist.fqdn_listname}\t{count}\t{mlist.display_name}")
    return 0


def cmd_lists_show(args: argparse.Namespace, settings: config.Settings) -> int:
    from sqlalchemy import inspect

    from mtaplugin.manage import lists

    with _scope(settings) as s:
        mlist = lists.get(s, args.list)
        for attr in inspect(type(mlist)).column_attrs:
            if attr.key in {"id", "moderator_password"}:
                continue
            value = getattr(mlist, attr.key)
            print(f"{attr.key}: {getattr(value, 'value', value)}")
    return 0


def cmd_lists_remove(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.manage import lists

    with _scope(settings) as s:
        lists.remove(s, args.list)
    print(_("removed list {name}").format(name=args.list))
    return 0


# --- members ------------------------------------------------------------------------------
def cmd_members_add(args: argparse.Namespace, settings: config.Settings) -> int:
    from tqdm import tqdm

    from mtaplugin.manage import lists, members

    role = members.parse_role(args.role)
    mode = members.check_delivery_mode(
        members.parse_delivery_mode(args.delivery_mode) if args.delivery_mode else None
    )
    lines: list[str] = list(args.emails)
    if args.file:
        if args.file == "-":
            lines.extend(sys.stdin.read().splitlines())
        else:
            try:
                with open(args.file, encoding="utf-8") as fh:
                    lines.extend(fh.read().splitlines())
            except OSError as exc:
                raise MtapluginError(f"--file: {exc.strerror}: {args.file}") from None
    entries, errors = members.validate_lines(lines)
    if errors:
        for error in errors:
            print(error, file=sys.stderr)
        print(_("nothing was changed: fix the lines above and try again"), file=sys.stderr)
        return 1
    if not entries:
        print(_("no addresses given (arguments, or --file FILE / --file -)"), file=sys.stderr)
        return 1
    with _scope(settings) as s:
        mlist = lists.get(s, args.list)
        if len(entries) == 1 and not args.file:
            email, name = entries[0]
            members.add(s, mlist, email, role, name, mode)
            print(
                _("added {email} as {role} of {list}").format(
                    email=email, role=role.value, list=mlist.fqdn_listname
                )
            )
            return 0
        with tqdm(total=len(entries), unit="member", file=sys.stderr, disable=args.quiet) as bar:
            result = members.add_many(s, mlist, entries, role, mode, progress=bar.update)
    print(
        _("added {added}, already there {already}, to {list}").format(
            added=result.added, already=result.already, list=args.list
        )
    )
    return 0


def cmd_members_remove(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.manage import lists, members

    role = members.parse_role(args.role)
    with _scope(settings) as s:
        mlist = lists.get(s, args.list)
        for email in args.emails:
            members.remove(s, mlist, email, role)
    for email in args.emails:
        print(_("removed {email}").format(email=email))
    return 0


def cmd_members_list(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.manage import lists, members

    role = members.parse_role(args.role) if args.role else None
    with _scope(settings) as s:
        mlist = lists.get(s, args.list)
        for member, address in members.roster(s, mlist, role):
            mode = member.delivery_mode.value if member.delivery_mode else "regular"
            name = f" ({member.display_name})" if member.display_name else ""
            print(f"{address.email}{name}\t{member.role.value}\t{mode}")
    return 0


# --- held posts ---------------------------------------------------------------------------
def _actor(args: argparse.Namespace) -> str:
    import getpass

    return args.actor or f"cli:{getpass.getuser()}"


def cmd_held_list(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.manage import held, lists

    with _scope(settings) as s:
        mlist = lists.get(s, args.list)
        for h in held.all_held(s, mlist):
            rules = ",".join(str(rule) for rule, _text in h.reasons)
            when = h.hold_date.strftime("%Y-%m-%d %H:%M")
            print(f"{h.id}	{when}	{h.sender}	{rules}	{h.subject}")
    return 0


def cmd_held_show(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.manage import held, lists

    with _scope(settings) as s:
        mlist = lists.get(s, args.list)
        h = held.get(s, mlist, args.id)
        if args.raw:
            sys.stdout.buffer.write(h.raw)
            return 0
        print(_("Held post {id} on {list}").format(id=h.id, list=mlist.fqdn_listname))
        print(_("  From:       {v}").format(v=h.sender))
        print(_("  Subject:    {v}").format(v=h.subject))
        print(_("  Message-ID: {v}").format(v=h.message_id))
        print(_("  Held at:    {v}").format(v=h.hold_date.isoformat(timespec="seconds")))
        print(
            _("  Envelope:   from {f} via {c}").format(
                f=h.envelope.get("mail_from", ""), c=h.envelope.get("client_address", "")
            )
        )
        signals = ", ".join(h.sender_signals) or _("not authenticated")
        print(_("  Sender:     {v}").format(v=signals))
        print(_("  Reasons:"))
        for rule, text in h.reasons:
            print(f"    - {text} ({rule})")
    return 0


def _held_action(action: str) -> Handler:
    def handler(args: argparse.Namespace, settings: config.Settings) -> int:
        from mtaplugin.manage import held, lists

        actor = _actor(args)
        with _scope(settings) as s:
            mlist = lists.get(s, args.list)
            results = [
                held.act(s, mlist, i, action, actor, getattr(args, "reason", "") or "")
                for i in args.ids
            ]
        for r in results:
            if action == "approve":
                print(_("approved {id}: queued for the members").format(id=r.held_id))
            elif action == "reject":
                if r.notified:
                    print(_("rejected {id}; the poster is told").format(id=r.held_id))
                else:
                    print(
                        _(
                            "rejected {id}; the poster is not told (their address was not "
                            "authenticated, so a notice could be backscatter)"
                        ).format(id=r.held_id)
                    )
            elif action == "discard":
                print(_("discarded {id}").format(id=r.held_id))
            else:
                print(_("{id} stays held").format(id=r.held_id))
        return 0

    return handler


# --- (un)subscription requests ---------------------------------------------------------
def cmd_requests_list(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.manage import lists, subscriptions

    with _scope(settings) as s:
        mlist = lists.get(s, args.list)
        for p in subscriptions.pending_requests(s, mlist):
            expires = p.expires_at.strftime("%Y-%m-%d %H:%M")
            print(f"{p.token}\t{p.request_type.value}\t{p.token_owner.value}\t{p.email}\t{expires}")
    return 0


def _request_action(action: str) -> Handler:
    def handler(args: argparse.Namespace, settings: config.Settings) -> int:
        from mtaplugin.manage import lists, subscriptions

        workflow = subscriptions.WorkflowSettings.from_settings(settings)
        with _scope(settings) as s:
            mlist = lists.get(s, args.list)
            results = [
                subscriptions.moderate(
                    s,
                    mlist,
                    token,
                    action,
                    actor=_actor(args),
                    reason=getattr(args, "reason", "") or "",
                    settings=workflow,
                )
                for token in args.tokens
            ]
        for token, status in zip(args.tokens, results, strict=True):
            print(f"{token}\t{status.value}")
        return 0

    return handler


def cmd_members_invite(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.manage import lists, subscriptions

    workflow = subscriptions.WorkflowSettings.from_settings(settings)
    with _scope(settings) as s:
        mlist = lists.get(s, args.list)
        for email in args.emails:
            subscriptions.request_subscription(
                s, mlist, email, invitation=True, actor=_actor(args), settings=workflow
            )
    for email in args.emails:
        print(_("invited {email}; they join when they answer").format(email=email))
    return 0


# --- daemons ------------------------------------------------------------------------------
def cmd_milter(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.frontends.milter.daemon import run

    run(settings)
    return 0


def cmd_lookup(args: argparse.Namespace, settings: config.Settings) -> int:
    import signal

    from mtaplugin.frontends.socketmap import serve

    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
    serve(settings)
    return 0


def cmd_lmtp(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.frontends.lmtp import serve

    serve(settings)
    return 0


def cmd_exim(args: argparse.Namespace, settings: config.Settings) -> int:
    import signal

    from mtaplugin.frontends.exim import serve

    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
    serve(settings)
    return 0


def cmd_inject(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.frontends.pipe import main as inject

    return inject(settings, args.recipient, args.sender)


def cmd_api(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.api.server import run

    run(settings)
    return 0


def cmd_worker(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.worker import run

    run(settings, once=args.once)
    return 0


def cmd_serve(args: argparse.Namespace, settings: config.Settings) -> int:
    from mtaplugin.supervisor import run

    return run(settings)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mtaplugin", description=_("A mailing-list manager that runs inside the MTA.")
    )
    parser.add_argument("--config", help=_("TOML settings file (default: $MTAPLUGIN_CONFIG)"))
    parser.add_argument("-v", "--verbose", action="store_true", help=_("log more"))
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def group(name: str, help_text: str) -> argparse._SubParsersAction[argparse.ArgumentParser]:
        p = sub.add_parser(name, help=help_text)
        return p.add_subparsers(dest="action", required=True, metavar="ACTION")

    def leaf(
        parent: argparse._SubParsersAction[argparse.ArgumentParser],
        name: str,
        handler: Handler,
        help_text: str,
    ) -> argparse.ArgumentParser:
        p = parent.add_parser(name, help=help_text)
        p.set_defaults(handler=handler)
        return p

    db = group("db", _("the database"))
    leaf(db, "upgrade", cmd_db_upgrade, _("create or migrate the schema"))
    leaf(db, "current", cmd_db_current, _("show the schema revision"))

    dom = group("domains", _("mail domains that hold lists"))
    p = leaf(dom, "add", cmd_domains_add, _("add a domain"))
    p.add_argument("mail_host")
    p.add_argument("--description", default="")
    p.add_argument("--base-url", default="")
    leaf(dom, "list", cmd_domains_list, _("list domains (name, lists, description)"))
    p = leaf(dom, "remove", cmd_domains_remove, _("remove a domain and all its lists"))
    p.add_argument("mail_host")

    dk = group("dkim", _("DKIM keys that sign and ARC-seal what a domain's lists send"))
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

    lst = group("lists", _("mailing lists"))
    p = leaf(lst, "create", cmd_lists_create, _("create a list"))
    p.add_argument("fqdn_listname", metavar="LIST@DOMAIN")
    p.add_argument(
        "--style",
        default="legacy-default",
        help="legacy-default, legacy-announce or private-default",
    )
    p.add_argument("--display-name")
    p.add_argument("--description", default="")
    p.add_argument("--owner", action="append", metavar="EMAIL")
    p = leaf(lst, "list", cmd_lists_list, _("list lists (address, members, name)"))
    p.add_argument("--domain")
    p = leaf(lst, "show", cmd_lists_show, _("show every setting of a list"))
    p.add_argument("list", metavar="LIST")
    p = leaf(lst, "remove", cmd_lists_remove, _("remove a list and its members"))
    p.add_argument("list", metavar="LIST")

    mem = group("members", _("members, owners, moderators and nonmembers of a list"))
    p = leaf(mem, "add", cmd_members_add, _("add members (arguments, or --file)"))
    p.add_argument("list", metavar="LIST")
    p.add_argument("emails", nargs="*", metavar="EMAIL")
    p.add_argument("--file", help=_("one address per line ('Name <email>' allowed); - is stdin"))
    p.add_argument("--role", default="member")
    p.add_argument("--delivery-mode")
    p.add_argument("--quiet", action="store_true", help=_("no progress bar"))
    p = leaf(mem, "remove", cmd_members_remove, _("remove members"))
    p.add_argument("list", metavar="LIST")
    p.add_argument("emails", nargs="+", metavar="EMAIL")
    p.add_argument("--role", default="member")
    p = leaf(mem, "list", cmd_members_list, _("list the roster"))
    p.add_argument("list", metavar="LIST")
    p.add_argument("--role")

    p = leaf(mem, "invite", cmd_members_invite, _("invite people to join (they confirm)"))
    p.add_argument("list", metavar="LIST")
    p.add_argument("emails", nargs="+", metavar="EMAIL")
    p.add_argument("--as", dest="actor", metavar="EMAIL", help=_("who acts (audit log)"))

    rq = group("requests", _("subscription and unsubscription requests"))
    p = leaf(rq, "list", cmd_requests_list, _("list waiting requests (token, type, owner, email)"))
    p.add_argument("list", metavar="LIST")
    for action, help_text in (
        ("accept", _("approve requests waiting for a moderator")),
        ("reject", _("refuse requests (the person is told)")),
        ("discard", _("drop requests silently")),
        ("defer", _("leave requests waiting, recording the decision")),
    ):
        p = leaf(rq, action, _request_action(action), help_text)
        p.add_argument("list", metavar="LIST")
        p.add_argument("tokens", nargs="+", metavar="TOKEN")
        p.add_argument("--as", dest="actor", metavar="EMAIL", help=_("who acts (audit log)"))
        if action == "reject":
            p.add_argument("--reason", default="", help=_("told to the person"))

    hp = group("held", _("posts held for moderation"))
    p = leaf(hp, "list", cmd_held_list, _("list held posts (id, date, sender, rules, subject)"))
    p.add_argument("list", metavar="LIST")
    p = leaf(hp, "show", cmd_held_show, _("show one held post"))
    p.add_argument("list", metavar="LIST")
    p.add_argument("id", type=int, metavar="ID")
    p.add_argument("--raw", action="store_true", help=_("print the post as it came in"))
    for action, help_text in (
        ("approve", _("send held posts to the members")),
        ("reject", _("refuse held posts (the poster is told if authenticated)")),
        ("discard", _("drop held posts")),
        ("defer", _("leave held posts held, recording the decision")),
    ):
        p = leaf(hp, action, _held_action(action), help_text)
        p.add_argument("list", metavar="LIST")
        p.add_argument("ids", nargs="+", type=int, metavar="ID")
        p.add_argument("--as", dest="actor", metavar="EMAIL", help=_("who acts (audit log)"))
        if action in {"reject", "defer"}:
            p.add_argument("--reason", default="", help=_("told to the poster / recorded"))

    from mtaplugin.web import cli_users

    cli_users.register(sub)

    for name, handler, help_text in (
        ("serve", cmd_serve, _("run the milter, the API and the worker under one supervisor")),
        ("milter", cmd_milter, _("run the milter")),
        ("lookup", cmd_lookup, _("answer Postfix's socketmap lookups (relay_domains)")),
        ("lmtp", cmd_lmtp, _("run the LMTP front end (Exim's lmtp transport)")),
        ("exim", cmd_exim, _("answer the queries of Exim's ACLs (contrib/exim)")),
        ("api", cmd_api, _("run the REST API under gunicorn")),
    ):
        p = sub.add_parser(name, help=help_text)
        p.set_defaults(handler=handler)
    p = sub.add_parser(
        "inject",
        help=_("decide one post on stdin for one list address (Exim's pipe transport)"),
        description=_(
            "Exit status (sysexits): 0 accepted, held or discarded; 65 unusable post; "
            "67 no such list; 77 refused by a rule; 75 try again later.  The reason is "
            "printed on stderr."
        ),
    )
    p.add_argument(
        "recipient", metavar="RECIPIENT", nargs="?", help=_("list address (default: $RECIPIENT)")
    )
    p.add_argument("-f", dest="sender", help=_("envelope sender (default: $SENDER)"))
    p.set_defaults(handler=cmd_inject)
    p = sub.add_parser("worker", help=_("run the outbox and housekeeping worker"))
    p.add_argument("--once", action="store_true", help=_("one pass, then exit"))
    p.set_defaults(handler=cmd_worker)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    daemon = args.command in {"serve", "milter", "lookup", "lmtp", "exim", "api", "worker"}
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO if daemon else logging.WARNING,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    try:
        settings = config.load(args.config)
        set_default_language(settings.site.default_language)
        return int(args.handler(args, settings))
    except MtapluginError as exc:
        print(_("mtaplugin: error: {error}").format(error=exc), file=sys.stderr)
        # For the pipe, a bad configuration is a reason to try later, not to bounce.
        return 75 if args.command == "inject" else 1
    except KeyboardInterrupt:
        return 130
