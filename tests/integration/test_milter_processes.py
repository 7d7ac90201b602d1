"""``milter.processes = 2`` behind a real private Postfix: both processes take posts from
the one socket, and a process that dies (or a parent killed outright) brings the milter
back under ``mtaplugin serve`` with no process left accepting on the old socket."""

from __future__ import annotations

import os
import shlex
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mtaplugin.db import make_engine, sessionmaker_for
from mtaplugin.testing import wait_for
from mtaplugin.testing.exim import pipe_python
from mtaplugin.testing.lab import Lab
from tests.faults import procs
from tests.helpers import alive, make_post, unique
from tests.integration.conftest import make_list, sqlite_lab_home
from tests.integration.labs import copies

MEMBER = "ann@example.org"


def _processes(parent: int) -> list[int]:
    """The milter processes a milter's parent runs (those not yet ended)."""
    return sorted(p for p in procs.children(parent) if alive(p))


def _milter(lab: Lab) -> tuple[int, list[int]]:
    """The milter's parent under ``mtaplugin serve`` and its processes, once both run."""
    state: dict[str, tuple[int, list[int]]] = {}

    def ready() -> bool:
        parent = procs.part_pid(lab, "milter")
        if parent is None or not alive(parent):
            return False
        state["found"] = (parent, _processes(parent))
        return len(state["found"][1]) == 2

    wait_for(ready, timeout=60)
    return state["found"]


@pytest.fixture(scope="module")
def two(request: pytest.FixtureRequest, lab_root: Path) -> Iterator[tuple[Lab, str]]:
    """A lab whose milter runs two processes, and a list with one member."""
    root, url = sqlite_lab_home(request, lab_root, "processes")
    engine = make_engine(url)
    with sessionmaker_for(engine)() as db:
        address = make_list(db, MEMBER).fqdn_listname
    engine.dispose()
    lab = Lab(root=root, database_url=url, name="lab-processes",
              env={"MTAPLUGIN_MILTER_PROCESSES": "2"})  # fmt: skip
    lab.start()
    try:
        yield lab, address
    finally:
        lab.stop()


def _delivered(lab: Lab, address: str) -> None:
    marker = unique("processes")
    refused = lab.send(MEMBER, [address], make_post(MEMBER, address, subject=marker))
    assert refused is None, refused
    wait_for(lambda: copies(lab, marker, MEMBER) == 1, timeout=60)


def _delivered_again(lab: Lab, address: str) -> None:
    """A post gets through once the restarted milter takes mail (4xx until then)."""
    marker = unique("processes")

    def sent() -> bool:
        return lab.send(MEMBER, [address], make_post(MEMBER, address, subject=marker)) is None

    wait_for(sent, timeout=90, interval=1)
    wait_for(lambda: copies(lab, marker, MEMBER) == 1, timeout=60)


def test_each_process_takes_posts_from_the_one_socket(two):
    lab, address = two
    _parent, processes = _milter(lab)
    for paused in processes:
        # With one process stopped, the other alone can accept: the post still goes
        # through, so each of the two accepts on the socket.  (A process stopped while it
        # held SQLite's write lock, for its post counter's flush, would make the other
        # answer 4xx: then it runs again a moment and is stopped anew.)
        marker = unique("processes")
        replies = []
        for _attempt in range(5):
            os.kill(paused, signal.SIGSTOP)
            try:
                refused = lab.send(MEMBER, [address], make_post(MEMBER, address, subject=marker))
            finally:
                os.kill(paused, signal.SIGCONT)
            replies.append(refused)
            if refused is None or refused.code // 100 != 4:
                break
            time.sleep(0.5)
        assert replies[-1] is None, replies
        wait_for(lambda m=marker: copies(lab, m, MEMBER) == 1, timeout=60)


def test_a_process_that_dies_brings_the_milter_back_whole(two):
    lab, address = two
    parent, processes = _milter(lab)
    os.kill(processes[0], signal.SIGKILL)
    # the parent stops the other process and ends; the supervisor starts the milter again
    wait_for(lambda: not alive(parent) and not alive(processes[1]), timeout=60)
    new_parent, new_processes = _milter(lab)
    assert new_parent != parent and not set(new_processes) & set(processes)
    _delivered_again(lab, address)
    assert "milter process" in lab.runner.log_file.read_text(errors="replace")


def test_a_parent_killed_outright_leaves_no_process_behind(two):
    lab, address = two
    parent, processes = _milter(lab)
    os.kill(parent, signal.SIGKILL)
    # each process was told by the kernel that its parent ended, and stopped
    wait_for(lambda: not any(alive(p) for p in processes), timeout=60)
    new_parent, _new = _milter(lab)
    assert new_parent != parent
    _delivered_again(lab, address)


def test_sigterm_stops_every_process_while_one_waits_to_accept(two):
    """Each connection wakes both processes and one takes it: the other must go back to
    waiting, where it sees a stop (on a blocking socket it would sit in accept() until the
    next connection, and the milter would never end)."""
    lab, address = two
    parent, processes = _milter(lab)
    for _ in range(3):
        _delivered(lab, address)
    os.kill(parent, signal.SIGTERM)
    wait_for(lambda: not any(alive(p) for p in (parent, *processes)), timeout=30)
    _delivered_again(lab, address)


def _start_milter_as_nobody(root: Path, url: str) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    env.update({
        "MTAPLUGIN_DATABASE_URL": url,
        "MTAPLUGIN_SITE_VAR_DIR": str(root / "var"),
        "MTAPLUGIN_MILTER_SOCKET": f"unix:{root / 'sock' / 'milter.sock'}",
        "MTAPLUGIN_MILTER_SOCKET_GROUP": "nogroup",
        "MTAPLUGIN_MILTER_PROCESSES": "2",
    })  # fmt: skip
    log = open(root / "milter.log", "ab")  # noqa: SIM115 - owned by the child
    try:
        return subprocess.Popen(
            # (this interpreter, or the system's on its packages when out of nobody's reach)
            [*shlex.split(pipe_python()), "-m", "mtaplugin.cli", "milter"],
            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            user="nobody", group="nogroup", extra_groups=[],
        )  # fmt: skip
    finally:
        log.close()


def _listening(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX) as client:
        try:
            client.connect(str(path))
        except OSError:
            return False
        return True


def test_an_old_process_never_removes_the_new_milters_socket(
    request: pytest.FixtureRequest, lab_root: Path
) -> None:
    """Not root (as a packaged milter runs), libmilter removes the socket file it was
    told of when it stops.  A process outliving a parent killed outright stops a few
    seconds later (its loop waits up to 5 s), when the milter started again may already
    listen at that path: it must not remove that milter's socket."""
    home, url = sqlite_lab_home(request, lab_root, "processes-nobody")
    root = home.parent
    for sub in ("sock", "var"):
        (root / sub).mkdir(mode=0o777)
        os.chmod(root / sub, 0o777)
    path = root / "sock" / "milter.sock"
    first = _start_milter_as_nobody(root, url)
    second = None
    try:
        wait_for(lambda: _listening(path), timeout=60)
        old = _processes(first.pid)
        assert len(old) == 2
        first.kill()
        first.wait(10)
        second = _start_milter_as_nobody(root, url)
        wait_for(lambda: len(_processes(second.pid)) == 2, timeout=60)
        # the old processes end within their loop's 5 s; the new socket is still there
        wait_for(lambda: not any(alive(p) for p in old), timeout=30)
        assert _listening(path), (root / "milter.log").read_text(errors="replace")[-3000:]
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(30)
