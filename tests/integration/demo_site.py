"""A running ``make demo`` seen from outside (tests/integration/test_demo_attacks.py):
started as a new user starts it (``python -m mtaplugin.demo --free-ports``), known by what
it prints (``--print-json``), and reached only over HTTP (its web UI and REST API on one
listener) and SMTP (its private Postfix); what it mails is read from its Maildirs."""

from __future__ import annotations

import json
import os
import re
import signal
import smtplib
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from email import message_from_bytes, policy
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import requests

from mtaplugin.testing import wait_for
from mtaplugin.testing.mta import Refused, send

#: the verifier whose Authentication-Results the demo trusts (M1's precondition: the one
#: setting the tests add to the demo, through the environment of ``mtaplugin serve``)
DEMO_AUTHSERV_ID = "mx.demo.test"
ADMIN = ("restadmin", "restpass")
DEMO_LIST = "demo.example.org"
DEMO_ADDRESS = "demo@example.org"
PASSWORD = "a long enough passphrase"
_CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
_LINK = re.compile(r"https?://[^\s<>\"']+")


@dataclass
class Demo:
    web: str
    smtp_port: int
    moderator: tuple[str, str]
    owner: tuple[str, str]
    maildir: Path
    log: Path

    def rest(
        self, who: tuple[str, str], method: str, path: str, data: dict[str, str] | None = None
    ) -> requests.Response:
        """One REST request as ``who`` (form-encoded, as mailmanclient sends)."""
        return requests.request(method, f"{self.web}/3.1/{path}", data=data, auth=who, timeout=120)

    def send(self, mail_from: str, rcpt: str, message: bytes) -> Refused | None:
        """One SMTP transaction with the demo's Postfix; None when it said 250."""
        return send(
            smtplib.SMTP("127.0.0.1", self.smtp_port, timeout=150), mail_from, [rcpt], message
        )

    def mails_to(self, email: str) -> list[EmailMessage]:
        new = self.maildir / email / "new"
        paths = sorted(new.iterdir(), key=lambda p: p.stat().st_mtime) if new.is_dir() else []
        return [message_from_bytes(p.read_bytes(), policy=policy.default) for p in paths]

    def copies(self, email: str, subject: str) -> list[EmailMessage]:
        return [m for m in self.mails_to(email) if subject in str(m["Subject"])]

    def held(self, list_id: str, subject: str) -> list[dict[str, Any]]:
        entries = self.rest(ADMIN, "GET", f"lists/{list_id}/held").json().get("entries", [])
        return [e for e in entries if e["subject"] == subject]

    def wait_held(self, list_id: str, subject: str) -> dict[str, Any]:
        found = wait_for(lambda: self.held(list_id, subject), timeout=120, interval=0.5)
        assert isinstance(found, list) and len(found) == 1, found
        return dict(found[0])

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def user(self, email: str, password: str = PASSWORD) -> str:
        """A REST user made by the site admin, its address verified; its user_id."""
        made = self.rest(ADMIN, "POST", "users", {"email": email, "password": password})
        assert made.status_code == 201, made.text
        verified = self.rest(ADMIN, "POST", f"addresses/{email}/verify")
        assert verified.status_code in (200, 204), verified.text
        return str(self.rest(ADMIN, "GET", f"users/{email}").json()["user_id"])

    def domain(self, host: str, *owners: str) -> list[str]:
        """A domain of the site with these owners (each made a REST user first); their
        user_ids."""
        made = self.rest(ADMIN, "POST", "domains", {"mail_host": host})
        assert made.status_code == 201, made.text
        ids = []
        for owner in owners:
            ids.append(self.user(owner))
            added = self.rest(ADMIN, "POST", f"domains/{host}/owners", {"owner": owner})
            assert added.status_code in (200, 201, 204), added.text
        return ids

    def owners(self, host: str) -> set[str]:
        """The user_ids of the domain's owners."""
        entries = self.rest(ADMIN, "GET", f"domains/{host}/owners").json().get("entries", [])
        return {str(e["user_id"]) for e in entries}


def body_text(message: EmailMessage) -> str:
    part = message.get_body(preferencelist=("plain", "html"))
    return part.get_content() if part is not None else ""


def links(message: EmailMessage) -> list[str]:
    return _LINK.findall(body_text(message))


class Browser:
    """A browser on the demo's web UI: its cookies and the page's CSRF token."""

    def __init__(self, web: str) -> None:
        self.web = web
        self.session = requests.Session()

    def form(
        self, path: str, data: dict[str, str], page: str = "", **headers: str
    ) -> requests.Response:
        """POST the form of ``page`` (default: ``path``) with the CSRF token it carries."""
        shown = self.session.get(f"{self.web}{page or path}", timeout=120)
        token = _CSRF.search(shown.text)
        assert token is not None, shown.text[:300]
        if "Host" in headers:
            # requests matches its cookies against a Host: header: send them by hand
            jar = self.session.cookies
            headers["Cookie"] = "; ".join(f"{c.name}={c.value}" for c in jar)
        return self.session.post(
            f"{self.web}{path}",
            data={**data, "csrf_token": token.group(1)},
            headers=headers,
            timeout=120,
            allow_redirects=False,
        )

    def log_in(self, email: str, password: str) -> int:
        return self.form("/login", {"email": email, "password": password, "next": "/"}).status_code


def start_demo(var: Path) -> Iterator[Demo]:
    """Run the demo until the generator is closed; what it prints tells where it is."""
    out = var.parent / f"{var.name}.out"
    env = {
        **os.environ,
        "PYTHONUNBUFFERED": "1",
        "MTAPLUGIN_AUTHENTICATION_TRUSTED_AUTHSERV_IDS": DEMO_AUTHSERV_ID,
    }
    with open(out, "wb") as printed:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mtaplugin.demo",
                "--free-ports",
                "--print-json",
                "--var",
                str(var),
            ],
            stdout=printed,
            stderr=subprocess.STDOUT,
            env=env,
        )

    def site() -> dict[str, Any] | None:
        if proc.poll() is not None:
            raise AssertionError(f"the demo exited: {out.read_text(errors='replace')[-3000:]}")
        for line in out.read_text(errors="replace").splitlines():
            if line.startswith("{"):
                return dict(json.loads(line))
        return None

    try:
        found = wait_for(site, timeout=240, interval=0.5)
        assert isinstance(found, dict)
        yield Demo(
            web=found["web"],
            smtp_port=int(found["smtp_port"]),
            moderator=tuple(found["moderator"]),
            owner=tuple(found["owner"]),
            maildir=Path(found["maildir"]),
            log=Path(found["log"]),
        )
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
