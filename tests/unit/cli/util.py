"""Helpers of the CLI tests: the command in a child process, and what the database holds."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass

from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.manage import lists, members
from mtaplugin.model import Address, Domain, MailingList, Member
from tests.helpers import run_mtaplugin
from tests.unit.dbutil import counts

ALL = (Domain, MailingList, Member, Address)


@dataclass
class Result:
    code: int
    out: str
    err: str


def run_process(
    *argv: str, env: dict[str, str], stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m mtaplugin.cli ARGV`` with only ``env`` of the MTAPLUGIN_ variables."""
    return run_mtaplugin(*argv, env=env, stdin=stdin, timeout=60)


def table(db: sessionmaker[Session]) -> dict[str, int]:
    """How many domains, lists, members and addresses there are."""
    with db() as s:
        return counts(s, *ALL)


def roster(db: sessionmaker[Session], name: str) -> list[tuple[str, str, str]]:
    """(email, role, display name) of everyone on the list ``name``."""
    with db() as s:
        mlist = lists.get(s, name)
        return [(a.email, m.role.value, m.display_name) for m, a in members.roster(s, mlist)]
