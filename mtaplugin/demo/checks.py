"""What the demo does once running and how ``--check`` finds it working: a held post,
one post to every member, the web UI's answer, ``mtaplugin check``."""

from __future__ import annotations

import smtplib
import sys
import time
import urllib.request
from email.message import EmailMessage
from pathlib import Path

from sqlalchemy import select

from mtaplugin import config, wiring
from mtaplugin.demo.site import DOMAIN, LIST, VISITOR, member_emails
from mtaplugin.model import HeldMessage


def hold_a_post(port: int, world: wiring.World) -> None:
    """A nonmember's post, held for the moderator (unless one is held already)."""
    with world.sessions() as s:
        waiting = s.scalar(select(HeldMessage.id).where(HeldMessage.sender == VISITOR))
    world.close()
    if waiting is not None:
        return
    msg = EmailMessage()
    msg["From"] = f"A visitor <{VISITOR}>"
    msg["To"] = LIST
    msg["Subject"] = "Held demo post: approve me in the web UI"
    msg.set_content("A nonmember's post is held for the moderator.\n")
    with smtplib.SMTP("127.0.0.1", port, timeout=30) as smtp:
        smtp.sendmail(VISITOR, [LIST], msg.as_bytes())


def web_answers(web_url: str) -> str:
    """ "" when the web UI's list page answers 200, else the problem."""
    try:
        with urllib.request.urlopen(f"{web_url}/lists/demo.{DOMAIN}/", timeout=30) as answer:
            return "" if answer.status == 200 else f"web UI: HTTP {answer.status}"
    except OSError as exc:
        return f"web UI: {exc}"


def post_once(port: int, maildir: Path) -> list[str]:
    """Post to the demo list and an unknown list; return the problems found."""
    problems: list[str] = []
    msg = EmailMessage()
    msg["From"] = "Alice Example <alice@example.net>"
    msg["To"] = LIST
    msg["Subject"] = "demo check"
    msg.set_content("Hello from make demo.\n")
    before = {e: mail_count(maildir, e) for e in member_emails()}
    with smtplib.SMTP("127.0.0.1", port, timeout=30) as smtp:
        smtp.sendmail("alice@example.net", [LIST], msg.as_bytes())
        smtp.mail("alice@example.net")
        code, text = smtp.rcpt(f"nosuchlist@{DOMAIN}")
        if code != 550 or b"5.1.1" not in text:
            problems.append(f"unknown list: expected 550 5.1.1 at RCPT, got {code} {text!r}")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        missing = [e for e in member_emails() if mail_count(maildir, e) <= before[e]]
        if not missing:
            break
        time.sleep(0.2)
    else:
        problems.append(f"no copy for: {', '.join(missing)}")
    return problems


def check_command(settings: Path, postfix_conf: Path) -> list[str]:
    """The ``mtaplugin check`` an admin runs on the demo."""
    return [
        str(Path(sys.executable).parent / "mtaplugin"),
        "--config",
        str(settings),
        "check",
        "--postfix",
        str(postfix_conf),
    ]


def installation_check(settings: Path, postfix_conf: Path) -> list[str]:
    """``mtaplugin check`` on the running demo: every finding fine, else the problems."""
    from mtaplugin.check import Level, Options, run

    found = run(config.load(settings, environ={}), Options(postfix_dir=postfix_conf))
    return [f"mtaplugin check: {f.check}: {f.found}" for f in found if f.level != Level.ok]


def mail_count(maildir: Path, email: str) -> int:
    new = maildir / email / "new"
    return len(list(new.iterdir())) if new.is_dir() else 0
