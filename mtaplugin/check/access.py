"""Who may open a file: the permission bits of a path and of every directory above it, read
as the kernel reads them for one user (owner bits, else group bits, else the others'),
without becoming that user."""

from __future__ import annotations

import grp
import os
import pwd
import stat
from dataclasses import dataclass
from pathlib import Path

READ = 4
WRITE = 2
SEARCH = 1


@dataclass(frozen=True)
class User:
    name: str
    uid: int
    gids: frozenset[int]


def user(name: str) -> User | None:
    """The system user ``name`` with all its groups, or None when there is none."""
    try:
        pw = pwd.getpwnam(name)
    except KeyError:
        return None
    gids = {pw.pw_gid} | {g.gr_gid for g in grp.getgrall() if name in g.gr_mem}
    return User(name, pw.pw_uid, frozenset(gids))


def owner(uid: int) -> User | None:
    try:
        return user(pwd.getpwuid(uid).pw_name)
    except KeyError:
        return None


def may(who: User, st: os.stat_result, want: int) -> bool:
    """Whether ``who`` has the ``want`` bits (READ, WRITE, SEARCH) on a file with ``st``."""
    if who.uid == 0:
        return True
    mode = stat.S_IMODE(st.st_mode)
    if st.st_uid == who.uid:
        bits = mode >> 6
    elif st.st_gid in who.gids:
        bits = mode >> 3
    else:
        bits = mode
    return bits & want == want


def _name(uid: int, gid: int) -> str:
    try:
        u = pwd.getpwuid(uid).pw_name
    except KeyError:
        u = str(uid)
    try:
        g = grp.getgrgid(gid).gr_name
    except KeyError:
        g = str(gid)
    return f"{u}:{g}"


def describe(path: Path | str) -> str:
    """``PATH (mode 0660, owner mtaplugin:postfix)``."""
    st = os.stat(path)
    return f"{path} (mode {stat.S_IMODE(st.st_mode):04o}, owner {_name(st.st_uid, st.st_gid)})"


def blocker(who: User, path: Path | str, want: int) -> str | None:
    """None when ``who`` may use ``path`` with ``want``; else the path that stops it (a
    directory above it without search permission, or the file itself), described."""
    target = Path(os.path.abspath(path))
    for directory in reversed(target.parents):
        if not may(who, os.stat(directory), SEARCH):
            return describe(directory)
    if not may(who, os.stat(target), want):
        return describe(target)
    return None
