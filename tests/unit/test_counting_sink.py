"""The counting sink of bench/vs_mailman.py: one line per transaction, with the number of
recipients and the post it carried, over a real SMTP session (pipelined too)."""

from __future__ import annotations

import smtplib
import subprocess
import sys
import time
from pathlib import Path

from mtaplugin.testing import GrowingFile, free_port, wait_for, wait_for_port


def test_each_transaction_is_one_line_with_its_recipients_and_post(tmp_path: Path) -> None:
    events = tmp_path / "events"
    port = free_port()
    sink = subprocess.Popen(
        [sys.executable, "-m", "mtaplugin.testing.counting_sink", str(port), str(events)]
    )
    try:
        wait_for_port(port)
        before = time.time()
        with smtplib.SMTP("127.0.0.1", port) as smtp:
            msg = b"Message-ID: <vsm-run1-7@example.org>\r\nSubject: x\r\n\r\n.line\r\nbody\r\n"
            smtp.sendmail("a@example.org", ["b@example.org", "c@example.org"], msg)
            smtp.sendmail("a@example.org", ["d@example.org"], b"Subject: no id\r\n\r\nx\r\n")
        wait_for(lambda: events.exists() and len(events.read_text().splitlines()) == 2)
        first, second = (line.split() for line in events.read_text().splitlines())
        assert float(first[0]) >= before - 1
        assert first[1:] == ["2", "run1-7"]
        assert second[1:] == ["1", "-"]
    finally:
        sink.terminate()
        sink.wait(10)


def test_a_lone_post_is_timed_from_the_connect_to_its_copy_at_the_sink(tmp_path: Path) -> None:
    from mtaplugin.testing.benchlatency import LatencySink, lone_post

    with LatencySink(tmp_path) as sink:
        before = time.time()
        seconds = lone_post(sink.events, sink.port, "a@example.org", "b@example.org", "lone-1")
        assert 0 <= seconds <= time.time() - before
        assert sink.events.copies == {"lone-1": 1}
        assert sink.transport == f"inline:{{ latency.bench=smtp:[127.0.0.1]:{sink.port} }}"


def test_a_growing_file_gives_each_complete_line_once(tmp_path: Path) -> None:
    log = tmp_path / "maillog"
    tail = GrowingFile(log)
    assert tail.new_lines() == b""  # not written yet
    log.write_bytes(b"one\ntw")
    assert tail.new_lines() == b"one\n"  # the half-written line waits
    with log.open("ab") as f:
        f.write(b"o\nthree\n")
    assert tail.new_lines() == b"two\nthree\n"
    assert tail.new_lines() == b""
