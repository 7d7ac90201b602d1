"""``milter.processes``: the parent that forks the milter's processes and waits for them
(:mod:`mtaplugin.frontends.milter.prefork`), run in a process of its own with a ``serve``
that waits for SIGTERM as libmilter's accept loop does.  The real milter's processes
behind a real Postfix: tests/integration/test_milter_processes.py."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mtaplugin.frontends.milter import prefork
from mtaplugin.testing import wait_for
from tests.helpers import alive

#: the parent: ``run_children(2, serve)``; each child writes its pid to a file named for it
#: and waits for SIGTERM (held, then taken with sigwait, as libmilter's signal thread does)
PARENT = textwrap.dedent(
    """
    import os, signal, subprocess, sys
    from pathlib import Path
    from mtaplugin.frontends.milter import prefork

    def serve():
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        Path(sys.argv[1], str(os.getpid())).write_text("")
        signal.sigwait({signal.SIGTERM})
        Path(sys.argv[1], str(os.getpid()) + ".stopped").write_text("")
        return 0

    if sys.argv[2:] == ["--other-child"]:
        # a child of the parent's own (noop_milter's archiver), which ends at once
        subprocess.Popen([sys.executable, "-c", "pass"])
    sys.exit(prefork.run_children(2, serve))
    """
)


@contextlib.contextmanager
def _running(tmp_path: Path, *options: str) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    """The parent started: (its process, the directory its children write to); killed with
    its children at the end if it is still there."""
    script = tmp_path / "parent.py"
    script.write_text(PARENT)
    children = tmp_path / "children"
    children.mkdir()
    argv = [sys.executable, str(script), str(children), *options]
    proc = subprocess.Popen(argv, start_new_session=True)
    try:
        yield proc, children
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


@pytest.fixture
def parent(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], Path, list[int]]]:
    """The parent running, its two children ready: (the parent, their directory, their pids)."""
    with _running(tmp_path) as (proc, children):
        wait_for(lambda: len(list(children.glob("[0-9]*[0-9]"))) == 2, timeout=30)
        yield proc, children, sorted(int(p.name) for p in children.glob("[0-9]*[0-9]"))


def test_sigterm_to_the_parent_stops_every_child_in_order(parent):
    proc, children, pids = parent
    assert all(alive(pid) for pid in pids)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 0
    # each child was asked (its SIGTERM taken by its own loop), none was cut short
    assert sorted(p.name for p in children.glob("*.stopped")) == [f"{pid}.stopped" for pid in pids]
    assert not any(alive(pid) for pid in pids)


def test_a_child_that_dies_stops_the_other_and_the_parent_fails(parent):
    proc, children, pids = parent
    os.kill(pids[0], signal.SIGKILL)
    # the parent's status says which signal ended the child; the other child was stopped
    assert proc.wait(30) == 128 + signal.SIGKILL
    assert (children / f"{pids[1]}.stopped").exists()
    assert not (children / f"{pids[0]}.stopped").exists()
    assert not alive(pids[1])


def test_children_stop_when_the_parent_is_killed_outright(parent):
    proc, children, pids = parent
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    # the kernel sent each child SIGTERM when its parent ended (PR_SET_PDEATHSIG)
    wait_for(lambda: not any(alive(pid) for pid in pids), timeout=30)
    assert sorted(p.name for p in children.glob("*.stopped")) == [f"{pid}.stopped" for pid in pids]


def test_the_socket_opened_is_found_even_on_a_number_used_before(tmp_path: Path):
    """libmilter keeps its listening descriptor to itself: it is found as the one socket
    that appeared.  The new socket usually takes the lowest free number, the one the
    listing of /dev/fd itself had just used and closed: found by inode, not by number."""
    made: list[socket.socket] = []
    found = prefork.opened_sockets(lambda: made.append(socket.socket(socket.AF_UNIX)))
    try:
        assert found == [made[0].fileno()]
        prefork.share(found)
        assert os.get_blocking(made[0].fileno()) is False
    finally:
        made[0].close()


def test_sharing_refuses_anything_but_one_socket():
    with pytest.raises(RuntimeError, match="opened 0 sockets"):
        prefork.share([])


def test_the_parent_starts_no_child_it_cannot_stop(tmp_path: Path):
    """A stop that comes while the children are being made reaches them all: the signal
    is held until the handler is in place (here: SIGTERM sent at once, before the children
    had time to report ready)."""
    with _running(tmp_path) as (proc, children):
        wait_for(lambda: any(children.iterdir()), timeout=30)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
        pids = [int(p.name) for p in children.glob("[0-9]*[0-9]")]
        assert pids and not any(alive(pid) for pid in pids)


def test_another_child_of_the_parent_ending_stops_no_milter_process(tmp_path: Path):
    with _running(tmp_path, "--other-child") as (proc, children):
        wait_for(lambda: len(list(children.glob("[0-9]*[0-9]"))) == 2, timeout=30)
        pids = [int(p.name) for p in children.glob("[0-9]*[0-9]")]
        # the other child has long ended (and been reaped by the parent's wait)
        wait_for(lambda: proc.poll() is None and all(alive(p) for p in pids), timeout=5)
        time.sleep(1.0)
        assert proc.poll() is None and all(alive(p) for p in pids)
        assert not list(children.glob("*.stopped"))
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
