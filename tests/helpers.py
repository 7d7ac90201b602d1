"""Small helpers shared by the tests."""

from __future__ import annotations

import importlib.util
import itertools
import os
import re
import sqlite3
import subprocess
import sys
from datetime import datetime
from email.message import EmailMessage, Message
from email.utils import make_msgid
from pathlib import Path
from types import ModuleType
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.accepted.drain import Drained, drain_all
from mtaplugin.accepted.fanout import Outlets
from mtaplugin.enums import DeliveryStatus, MemberRole, TemplateScope
from mtaplugin.manage import hold_notices
from mtaplugin.manage.hold_notices import NoticePolicy
from mtaplugin.model import MailingList, Member, Template
from mtaplugin.posting.snapshot import ListSnapshot
from mtaplugin.vocabulary.envelope import Envelope
from mtaplugin.vocabulary.snapshot import Recipient

ROOT = Path(__file__).resolve().parents[1]
_n = itertools.count(1)
_CONFIRM = re.compile(r"-confirm\+([0-9a-f]{40})@")


def unique(prefix: str = "list") -> str:
    return f"{prefix}{next(_n)}"


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, ended but not yet reaped, does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1][0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def make_post(
    sender: str,
    to: str,
    subject: str = "hello",
    body: str = "Hello, list.\n",
    headers: dict[str, str] | None = None,
) -> bytes:
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = to
    msg["Subject"] = subject
    msg["Message-ID"] = make_msgid(domain="client.test")
    for name, value in (headers or {}).items():
        msg[name] = value
    msg.set_content(body)
    return msg.as_bytes()


def envelope(
    *recipients: str,
    mail_from: str = "sender@example.net",
    queue_id: str = "4ABCDEF",
    **more: Any,
) -> Envelope:
    """The envelope of a post from a client on the documentation network (192.0.2.1),
    for ``recipients`` (bare addresses); ``more``: other fields (``auth_user``...)."""
    fields: dict[str, Any] = {"helo": "client.test", **more}
    return Envelope(
        mail_from=mail_from,
        recipients=[f"<{r}>" for r in recipients],
        client_address="192.0.2.1",
        queue_id=queue_id,
        **fields,
    )


def list_template(
    mlist: MailingList, name: str, language: str = "", **text_or_uri: str
) -> Template:
    """A list's own template row: a ``text``, or a ``uri`` (and its credentials)."""
    return Template(
        scope=TemplateScope.list,
        mailing_list_id=mlist.id,
        name=name,
        language=language,
        **text_or_uri,
    )


def detached_list(**settings: Any) -> MailingList:
    """A MailingList in no session: every column at its default, then ``settings``."""
    mlist = MailingList()
    for column in MailingList.__table__.columns:
        default = column.default
        if default is None or column.key == "id" or column.key in settings:
            continue
        value = default.arg(None) if callable(default.arg) else default.arg
        setattr(mlist, column.key, value)
    for key, value in settings.items():
        setattr(mlist, key, value)
    return mlist


def snapshot_of(
    mlist: MailingList,
    roles: dict[str, Any],
    regular: tuple[str, ...],
    staff: tuple[str, ...] | None = None,
    **extra: Any,
) -> ListSnapshot:
    """What the hot path knows of ``mlist`` (a :func:`detached_list`, primary key 1):
    ``roles`` (address -> role -> moderation action), ``regular`` the members who get the
    posts, ``staff`` (by default the owners and moderators in ``roles``); ``extra``: bans,
    header matches..."""
    if staff is None:
        staff_roles = {MemberRole.owner, MemberRole.moderator}
        staff = tuple(sorted(e for e, r in roles.items() if staff_roles & r.keys()))
    recipients = tuple(Recipient(e, True) for e in regular)
    return ListSnapshot(
        pk=1, generation=1, mlist=mlist, roles=roles, regular=recipients, staff=staff, **extra
    )


def disabled_by_bounces(
    member: Member, last_bounce: datetime, warned: datetime, warnings: int = 1, score: int = 5
) -> None:
    """``member`` as bounce processing leaves a member whose delivery it turned off: its
    score, its last bounce, the warnings sent and when the last one went."""
    member.bounce_score = score
    member.last_bounce_received = last_bounce
    member.last_warning_sent = warned
    member.total_warnings_sent = warnings
    member.delivery_status = DeliveryStatus.by_bounces


def run_mtaplugin(
    *argv: str, env: dict[str, str], stdin: str | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``mtaplugin ARGV`` as a process of its own, from the source tree: this environment
    without its ``MTAPLUGIN_*`` settings, then ``env``."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("MTAPLUGIN_")}
    full.update(env)
    return subprocess.run(
        [sys.executable, "-m", "mtaplugin.cli", *argv],
        input=stdin,
        capture_output=True,
        text=True,
        env=full,
        cwd=ROOT,
        timeout=timeout,
    )


def confirm_token(msg: Message) -> str:
    """The token of the ``-confirm+TOKEN@`` address a confirmation's Reply-To names."""
    reply_to = str(msg["Reply-To"])
    found = _CONFIRM.search(reply_to)
    assert found, reply_to
    return found.group(1)


def plain_text(msg: Message) -> str:
    """The first text/plain part of ``msg``, decoded."""
    part = next(p for p in msg.walk() if p.get_content_type() == "text/plain")
    payload = part.get_payload(decode=True)
    assert isinstance(payload, bytes)
    return payload.decode()


def sqlite_write_lock_free(path: str) -> bool:
    """Whether another connection to the SQLite file ``path`` gets its one write lock at
    once (``BEGIN IMMEDIATE`` with no wait), given back at once."""
    other = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        other.execute("ROLLBACK")
        return True
    except sqlite3.OperationalError as exc:
        assert "locked" in str(exc), exc
        return False
    finally:
        other.close()


def drain(sessions: sessionmaker[Session], **outlets: Any) -> Drained:
    """Fan the accepted posts out now (the archive, the archivers, the digest, the news
    queue), as the worker does a moment after the answer; ``outlets``: what the site gives
    (:class:`~mtaplugin.accepted.fanout.Outlets`: ``news=True`` for a news server...)."""
    return drain_all(sessions, Outlets(**outlets))


def send_hold_notices(sessions: sessionmaker[Session], site_owner: str = "", **policy: Any) -> int:
    """Make the notices of the posts held since, now, as the worker does a moment after
    the answer (:mod:`mtaplugin.manage.hold_notices`); how many held posts had theirs made.
    ``policy``: the rest of :class:`~mtaplugin.manage.hold_notices.NoticePolicy`."""
    return hold_notices.send_all(sessions, NoticePolicy(site_owner=site_owner, **policy))


def bench_all() -> ModuleType:
    """bench/all.py (``make bench-all``), loaded from its file (bench/ is no package)."""
    path = Path(__file__).resolve().parents[1] / "bench" / "all.py"
    spec = importlib.util.spec_from_file_location("bench_all", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (its dataclasses look their module up)
    spec.loader.exec_module(module)
    return module
