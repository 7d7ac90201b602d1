"""The acceptance of the web UI, tried as a new user would: ``make demo`` prints the web
URL and the moderator's password; in Chromium the moderator logs in, sees the held demo
post, approves it, and the members' copies land in their Maildirs; then a member leaves
with the one-click link of the copy they received."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import urllib.request
from email import message_from_bytes, policy
from pathlib import Path

from playwright.sync_api import Page, expect

from mtaplugin.testing import wait_for
from tests.e2e.conftest import log_in

MEMBERS = ("alice@example.net", "bob@example.net", "carol@example.com")


def _copies(maildir: Path, email: str, marker: bytes) -> list[bytes]:
    new = maildir / email / "new"
    if not new.is_dir():
        return []
    return [p.read_bytes() for p in new.iterdir() if marker in p.read_bytes()]


def test_make_demo_moderator_approves_the_held_post_and_a_member_leaves(
    lab_root: Path, page: Page, shot
) -> None:
    var = lab_root / "demo-web-var"
    assert not var.exists()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mtaplugin.demo", "--free-ports", "--var", str(var)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    printed = ""
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            printed += line
            if "Stop with Ctrl-C" in line:
                break
        found = re.search(r"Web UI\s+(http://\S+)/\s+\(log in as (\S+), password (\S+)\)", printed)
        assert found, printed
        web, moderator, password = found.groups()
        owner_found = re.search(
            r"owner \(settings, members\): log in as (\S+), password (\S+)", printed
        )
        assert owner_found, printed

        log_in(page, web, moderator, password)
        page.goto(f"{web}/lists/demo.example.org/held")
        expect(page.locator("table.held")).to_contain_text("Held demo post", timeout=60_000)
        shot(page, "demo-held")
        page.click("text=Held demo post")
        page.click("button[value=approve]")
        expect(page.locator("#done")).to_contain_text("approve")

        maildir = var / "demo" / "maildir"
        marker = b"A nonmember's post is held"
        wait_for(lambda: all(_copies(maildir, m, marker) for m in MEMBERS), timeout=90)

        copy = message_from_bytes(
            _copies(maildir, "bob@example.net", marker)[0], policy=policy.default
        )
        link = re.search(r"<(http[^>]+)>", str(copy["List-Unsubscribe"])).group(1)
        assert copy["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
        request = urllib.request.Request(link, data=b"List-Unsubscribe=One-Click", method="POST")
        with urllib.request.urlopen(request, timeout=30) as answer:
            assert "bob@example.net is unsubscribed" in answer.read().decode()
        page.goto(link)
        expect(page.locator("#outcome")).to_contain_text("not a member")

        # The owner's log-in the demo printed opens the owner's pages (no 403).
        page.context.clear_cookies()
        log_in(page, web, *owner_found.groups())
        page.goto(f"{web}/lists/demo.example.org/settings/message-acceptance")
        expect(page.locator("h1")).to_contain_text("Message acceptance")
        expect(page.locator("#field-max_message_size")).to_contain_text("KB")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
