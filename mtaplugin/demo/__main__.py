"""``make demo``: a working list on this machine, in a minute.

Everything lives under ``./var/``: the SQLite database, the settings file, a private
Postfix instance on 127.0.0.1 (built from ``contrib/postfix/``) wired to ``mtaplugin
serve`` (the milter, the REST API and the worker), and a Maildir per member where the
members' copies land.  Nothing of the system's own Postfix is touched.

``python -m mtaplugin.demo --check`` brings it all up, posts once, checks that every member
got a copy and that an unknown list address is refused at RCPT, and stops again.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from mtaplugin import config, wiring
from mtaplugin.demo.checks import (
    check_command,
    hold_a_post,
    installation_check,
    post_once,
    web_answers,
)
from mtaplugin.demo.site import (
    API_LISTEN,
    DOMAIN,
    LIST,
    MODERATOR,
    OWNER,
    REINJECT_PORT,
    SMTP_PORT,
    Passwords,
    member_emails,
    populate,
    write_settings,
)
from mtaplugin.i18n import _

if TYPE_CHECKING:
    from mtaplugin.testing.lab import Lab


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _searchable_by_postfix(path: Path) -> bool:
    """Postfix's processes reach the demo's queue directory and tables under ``path``."""
    return (
        subprocess.run(
            ["runuser", "-u", "postfix", "--", "test", "-x", str(path)], check=False
        ).returncode
        == 0
    )


def running(lab: Lab, web_url: str, passwords: Passwords, maildir: Path) -> dict[str, object]:
    """What ``--print-json`` prints of the running demo, for programs (the text is for
    people, and translated): the web UI (REST under /3.1), the SMTP port, the log-ins,
    where the copies land and mtaplugin's log."""
    return {
        "web": web_url,
        "smtp_port": lab.smtp_port,
        "moderator": [MODERATOR, passwords.moderator],
        "owner": [OWNER, passwords.owner],
        "maildir": str(maildir),
        "log": str(lab.runner.log_file),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mtaplugin-demo", description=__doc__)
    parser.add_argument("--var", default="var", help="where the demo keeps its state")
    parser.add_argument("--check", action="store_true", help="post once, check, stop")
    parser.add_argument("--free-ports", action="store_true", help="pick any free ports")
    parser.add_argument(
        "--print-json",
        action="store_true",
        help="once running, print the site (addresses, ports, log-ins, files) as one JSON line",
    )
    args = parser.parse_args(argv)

    from mtaplugin.testing import free_port
    from mtaplugin.testing.lab import Lab

    if os.geteuid() != 0:
        print(_("make demo must run as root: it starts a private Postfix"), file=sys.stderr)
        return 1
    var = Path(args.var).resolve()
    (var / "demo").mkdir(parents=True, exist_ok=True)
    for d in (var, var / "demo"):
        os.chmod(d, 0o755)
    fixed = not args.free_ports
    smtp_port = SMTP_PORT if fixed and _port_free(SMTP_PORT) else 0
    reinject = REINJECT_PORT if fixed and _port_free(REINJECT_PORT) else free_port()
    api_listen = API_LISTEN if fixed and _port_free(8001) else f"127.0.0.1:{free_port()}"
    settings = write_settings(var, api_listen, reinject)
    world = wiring.build(config.load(settings, environ={}))
    url = world.settings.database.url
    web_url = f"http://{api_listen}"
    passwords = populate(world, web_url)
    if not _searchable_by_postfix(var / "demo"):
        print(
            _(
                "the postfix user cannot read {path}; clone mtaplugin into a directory that "
                "others may traverse (not /root), or run with --var /var/tmp/mtaplugin-demo"
            ).format(path=var / "demo"),
            file=sys.stderr,
        )
        return 1
    maildir = var / "demo" / "maildir"
    lab = Lab(
        root=var / "demo",
        database_url=url,
        command=("--config", str(settings), "serve"),
        maildir=maildir,
        name="mtaplugin-demo",
        # Debian's own main.cf and master.cf (smtpd chrooted) with contrib/postfix added as
        # docs/postfix.md says: `mtaplugin check` finds it wired as a real install
        debian=True,
        smtp_port_wanted=smtp_port,
        reinject_port_wanted=reinject,
        env={"MTAPLUGIN_API_LISTEN": api_listen, "MTAPLUGIN_OUTBOX_PORT": str(reinject)},
    )
    lab.start()
    try:
        if args.check:
            problems = post_once(lab.smtp_port, maildir)
            problems += [p for p in [web_answers(web_url)] if p]
            problems += installation_check(settings, lab.postfix.conf)
            for p in problems:
                print("demo check FAILED:", p, file=sys.stderr)
            if not problems:
                print(_("demo check passed: every member got the post; unknown list refused"))
            return 1 if problems else 0
        port = lab.smtp_port
        hold_a_post(port, world)
        if args.print_json:
            print(json.dumps(running(lab, web_url, passwords, maildir)), flush=True)
        else:
            print(
                _(
                    """
mtaplugin demo is running.

  List        {list}  (members: {members})
  Postfix     127.0.0.1:{port}  (private instance; log: {maillog})
  Milter      {socket}
  Web UI      {web}/  (log in as {moderator}, password {password})
              held posts: {web}/lists/demo.{domain}/held
              the list's owner (settings, members): log in as {owner}, password {owner_password}
              settings: {web}/lists/demo.{domain}/settings
  REST API    {web}/3.1/system/versions  (user restadmin, password restpass)
  Settings    {settings}
  Database    {db}

Post to the list:
  swaks --server 127.0.0.1:{port} --from alice@example.net --to {list} \\
        --header "Subject: hello" --body "Hello, list"

or, in Python:
  python3 -c "import smtplib; smtplib.SMTP('127.0.0.1', {port}).sendmail(\\
'alice@example.net', ['{list}'], b'From: alice@example.net\\r\\nSubject: hi\\r\\n\\r\\nhi')"

The members' copies land in {maildir}/<member>/new/
A post to an unknown list (nosuchlist@{domain}) is refused at RCPT with 550 5.1.1;
a post from a nonmember is held: one is waiting for you in the web UI's held posts.
Each member's copy carries a one-click List-Unsubscribe link to the web UI.

Manage it:  .venv/bin/mtaplugin --config {settings} members list {list}
Stop with Ctrl-C.
"""
                ).format(
                    list=LIST,
                    members=", ".join(member_emails()),
                    port=port,
                    maillog=lab.postfix.maillog,
                    socket=lab.socket,
                    web=web_url,
                    moderator=MODERATOR,
                    password=passwords.moderator,
                    owner=OWNER,
                    owner_password=passwords.owner,
                    settings=settings,
                    db=var / "mtaplugin.db",
                    maildir=maildir,
                    domain=DOMAIN,
                )
            )
            print(
                _("Check the installation (as after installing):\n  {command}\n").format(
                    command=" ".join(check_command(settings, lab.postfix.conf))
                )
            )
        stop = False

        def _stop(signum: int, frame: object) -> None:
            nonlocal stop
            stop = True

        signal.signal(signal.SIGINT, _stop)
        signal.signal(signal.SIGTERM, _stop)
        while not stop:
            if lab.process is not None and lab.process.poll() is not None:
                print(
                    _("mtaplugin serve exited; see {log}").format(log=var / "demo"), file=sys.stderr
                )
                return 1
            time.sleep(0.5)
        return 0
    finally:
        lab.stop()


if __name__ == "__main__":
    sys.exit(main())
