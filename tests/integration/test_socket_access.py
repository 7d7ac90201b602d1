"""Who may connect to mtaplugin's sockets: the real milter (libmilter) creates its socket
0660 with the MTA's group, so the MTA's processes connect and any other local user is
refused; and the milter believes an SMTP AUTH login only where only the MTA connects."""

from __future__ import annotations

import grp
import os
import socket
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from mtaplugin.testing import wait_for
from mtaplugin.testing.process import MtapluginProcess
from tests.conftest import fresh_database

_CONNECT = (
    "import socket, sys\n"
    "s = socket.socket(socket.AF_UNIX)\n"
    "try:\n"
    "    s.connect(sys.argv[1])\n"
    "except PermissionError:\n"
    "    sys.exit(13)\n"
)


def _connects_as(user: str, group: str, path: Path) -> bool:
    run = subprocess.run(
        ["/usr/bin/python3", "-c", _CONNECT, str(path)],
        user=user,
        group=group,
        extra_groups=[],
        timeout=30,
    )
    assert run.returncode in (0, 13), run
    return run.returncode == 0


@pytest.fixture
def milter(request: pytest.FixtureRequest, lab_root: Path) -> Iterator[Path]:
    try:
        grp.getgrnam("postfix")
    except KeyError:
        pytest.skip("no group postfix on this machine")
    root = Path(tempfile.mkdtemp(prefix="m", dir=lab_root))  # a unix socket's path is short
    os.chmod(root, 0o755)
    path = root / "run" / "milter.sock"
    env = dict(
        os.environ,
        MTAPLUGIN_DATABASE_URL=fresh_database(request, "sqlite", lab_root),
        MTAPLUGIN_MILTER_SOCKET=f"unix:{path}",
    )
    env.pop("MTAPLUGIN_CONFIG", None)
    proc = MtapluginProcess(root)
    proc.start(["milter"], env, ready=path.exists)
    try:
        yield path
    finally:
        proc.stop()


def test_the_milter_socket_is_0660_with_the_mtas_group(milter: Path) -> None:
    postfix = grp.getgrnam("postfix").gr_gid
    wait_for(lambda: os.stat(milter).st_gid == postfix, timeout=10)
    st = os.stat(milter)
    assert stat.S_IMODE(st.st_mode) == 0o660
    assert not st.st_mode & stat.S_IWOTH
    # the MTA's user connects; any other local user is refused by the kernel
    assert _connects_as("postfix", "postfix", milter)
    assert not _connects_as("nobody", "nogroup", milter)
    with socket.socket(socket.AF_UNIX) as s:  # and the owner, of course
        s.connect(str(milter))
