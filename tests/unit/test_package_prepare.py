"""packaging/deb/prepare, the script root runs before every start of the packaged service
(``ExecStartPre=+``) and from postinst, run for real on a tree standing in for ``/``
(``MTAPLUGIN_PREPARE_ROOT``), with the unprivileged user ``nobody`` playing the user
mtaplugin.

The attack it must withstand (security review M7): code running as mtaplugin replaces
``/var/lib/mtaplugin/postfix`` (its own directory) with a symbolic link to ``/etc`` and
makes the service restart; root's ``install -d -o mtaplugin ...`` through the link would
then give ``/etc`` to mtaplugin.  Needs root (to be root and ``nobody`` in turn) and
setpriv (util-linux, a dependency of the package).
"""

from __future__ import annotations

import grp
import os
import pwd
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

PREPARE = Path(__file__).resolve().parents[2] / "packaging" / "deb" / "prepare"
USER = "nobody"

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="prepare changes owners: run as root, with setpriv (util-linux)",
)


def ids() -> tuple[int, int]:
    user = pwd.getpwnam(USER)
    return user.pw_uid, user.pw_gid


def owner_and_mode(path: Path) -> tuple[int, int, int]:
    st = path.lstat()
    return st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)


@pytest.fixture
def top() -> Iterator[Path]:
    """A tree standing in for ``/``: root's /var/lib, /run and /var/spool/postfix, and a
    state directory that belongs to the service's user, as postinst leaves it.  In /tmp,
    not pytest's 0700 tmp_path, so that the user can reach it."""
    with tempfile.TemporaryDirectory(prefix="prepare-") as name:
        root = Path(name)
        root.chmod(0o755)
        for d in ("var/lib", "run", "var/spool/postfix", "etc"):
            (root / d).mkdir(parents=True, mode=0o755)
        state = root / "var/lib/mtaplugin"
        state.mkdir(mode=0o751)
        os.chown(state, *ids())
        yield root


def prepare(top: Path) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
        "MTAPLUGIN_PREPARE_ROOT": str(top),
        "MTAPLUGIN_PREPARE_USER": USER,
        # nobody's own group: nobody is a member, so prepare adds it to no group
        "MTAPLUGIN_PREPARE_MTA_GROUP": grp.getgrgid(ids()[1]).gr_name,
    }
    return subprocess.run(
        ["/bin/sh", str(PREPARE)], env=env, capture_output=True, text=True, timeout=60
    )


def test_prepare_makes_the_directories_with_their_owners(top: Path) -> None:
    uid, gid = ids()
    state = top / "var/lib/mtaplugin"
    old_db = state / "mtaplugin.db"  # made before the service had UMask=0027
    old_db.write_text("")
    old_db.chmod(0o644)
    os.chown(old_db, uid, gid)
    roots = state / "copy.db"  # a file of root's: left as it is, and no failure
    roots.write_text("")
    roots.chmod(0o644)

    done = prepare(top)
    assert done.returncode == 0, done.stderr

    assert owner_and_mode(state) == (uid, gid, 0o750)
    assert owner_and_mode(state / "postfix") == (uid, gid, 0o755)
    assert owner_and_mode(top / "run/mtaplugin") == (uid, gid, 0o751)
    assert owner_and_mode(top / "var/spool/postfix/mtaplugin") == (uid, gid, 0o2750)
    assert owner_and_mode(old_db) == (uid, gid, 0o640)
    assert owner_and_mode(roots) == (0, 0, 0o644)
    assert prepare(top).returncode == 0  # again, at the next start


def test_a_link_planted_in_the_state_directory_gives_root_nothing(top: Path) -> None:
    uid, gid = ids()
    target = top / "etc"  # standing in for /etc
    target.chmod(0o700)
    shadow = target / "shadow"
    shadow.write_text("root:x:")
    shadow.chmod(0o600)
    # what the service's user can do in its own directory
    link = top / "var/lib/mtaplugin/postfix"
    link.symlink_to(target)
    os.lchown(link, uid, gid)
    db_link = top / "var/lib/mtaplugin/mtaplugin.db"
    db_link.symlink_to(shadow)
    os.lchown(db_link, uid, gid)

    done = prepare(top)

    assert owner_and_mode(target) == (0, 0, 0o700)
    assert owner_and_mode(shadow) == (0, 0, 0o600)
    assert link.is_symlink()
    # the service does not start, and the journal says why
    assert done.returncode != 0
    assert f"{link} is a symbolic link" in done.stderr


def test_root_makes_nothing_in_a_directory_others_may_write(top: Path) -> None:
    spool = top / "var/spool/postfix"
    spool.chmod(0o775)
    done = prepare(top)
    assert done.returncode != 0
    assert f"{spool} is writable by others than root" in done.stderr
    assert not (spool / "mtaplugin").exists()
