"""The decision line written straight to the daemon's handler (mtaplugin.daemon_log)
is the line ``logging`` writes, byte for byte: for an accepted, a held and a refused post,
and the ordinary way is kept with any other handler."""

from __future__ import annotations

import contextlib
import io
import logging
import time
from collections.abc import Iterator

import pytest

from mtaplugin.daemon_log import DAEMON_FORMAT
from mtaplugin.engine import ListEngine, decision_log
from mtaplugin.enums import Action
from mtaplugin.manage import lists
from mtaplugin.posting.rules.moderation import NONMEMBER_MODERATION
from tests import helpers
from tests.helpers import make_post
from tests.unit.sites import Site

NOW = 1765000000.0423  # 2025-12-06 05:46:40,042 UTC


class DaemonLog:
    """``mtaplugin.decision`` with the daemon's handler alone (as ``mtaplugin.cli`` sets
    it up), on a text buffer, while :meth:`alone` lasts (set up in the test's call: the
    test run adds its own handlers by then)."""

    def __init__(self) -> None:
        self.stream = io.StringIO()
        self.handler = logging.StreamHandler(self.stream)
        self.handler.setFormatter(logging.Formatter(DAEMON_FORMAT))

    @contextlib.contextmanager
    def alone(self) -> Iterator[None]:
        log = logging.getLogger("mtaplugin.decision")
        kept = (log.handlers[:], log.propagate, log.level)
        log.handlers[:] = [self.handler]
        log.propagate = False
        log.setLevel(logging.INFO)
        try:
            yield
        finally:
            log.handlers[:], log.propagate, log.level = kept

    def getvalue(self) -> str:
        return self.stream.getvalue()


@pytest.fixture
def daemon_log(monkeypatch: pytest.MonkeyPatch) -> DaemonLog:
    """The daemon's handler (:class:`DaemonLog`); the clock stopped at :data:`NOW`."""
    monkeypatch.setattr(time, "time", lambda: NOW)
    monkeypatch.setattr(time, "time_ns", lambda: int(NOW * 1e9))
    return DaemonLog()


def through_logging(text: str) -> str:
    """What ``logging`` writes for ``text`` through the daemon's handler."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter(DAEMON_FORMAT))
    log = logging.getLogger("mtaplugin.decision")
    handler.handle(log.makeRecord(log.name, logging.INFO, __file__, 0, text, (), None))
    return stream.getvalue()


def decide(
    engine: ListEngine, list_address: str, sender: str, daemon: DaemonLog, monkeypatch
) -> bytes:
    """Decide a post, with ``logging``'s record path forbidden (the line must go direct)."""

    def no_record(*args: object, **kwargs: object) -> logging.LogRecord:
        raise AssertionError("a LogRecord was made")

    raw = make_post(sender, list_address)
    with monkeypatch.context() as m, daemon.alone():
        m.setattr(logging.Logger, "makeRecord", no_record)
        engine.decide(helpers.envelope(list_address, mail_from=sender, queue_id="4QUEUEID"), raw)
    return raw


def test_an_accepted_posts_line_is_unchanged(
    engine: ListEngine, site: Site, daemon_log, monkeypatch
):
    raw = decide(engine, site.addr("team"), "anne@example.com", daemon_log, monkeypatch)
    expected = (
        f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(NOW))},042 mtaplugin.decision INFO"
        f" decision queue_id=4QUEUEID message_id={decision_log.message_id(raw)}"
        f" from=anne@example.com list={site.addr('team')} outcome=accepted rule=- reply=250"
        " smtp=250\n"
    )
    assert daemon_log.getvalue() == expected
    assert through_logging(expected.split(" INFO ", 1)[1].rstrip("\n")) == expected


def test_a_held_posts_line_is_unchanged(engine: ListEngine, site: Site, daemon_log, monkeypatch):
    raw = decide(engine, site.addr("team"), "stranger@example.net", daemon_log, monkeypatch)
    (held,) = site.held()
    line = daemon_log.getvalue()
    text = (
        f"decision queue_id=4QUEUEID message_id={decision_log.message_id(raw)}"
        f" from=stranger@example.net list={site.addr('team')} outcome=held"
        f" rule={NONMEMBER_MODERATION} reply=250 smtp=250 held_id={held.id}"
    )
    assert line == through_logging(text)
    assert line.endswith(f" mtaplugin.decision INFO {text}\n")


def test_a_refused_posts_line_is_unchanged(engine: ListEngine, site: Site, daemon_log, monkeypatch):
    with site.sessions.begin() as s:
        lists.create(s, site.addr("strict")).default_nonmember_action = Action.reject
    raw = decide(engine, site.addr("strict"), "stranger@example.net", daemon_log, monkeypatch)
    text = (
        f"decision queue_id=4QUEUEID message_id={decision_log.message_id(raw)}"
        f" from=stranger@example.net list={site.addr('strict')} outcome=refused"
        f' rule={NONMEMBER_MODERATION} reply="550 5.7.1" smtp="550 5.7.1"'
    )
    assert daemon_log.getvalue() == through_logging(text)


def test_any_other_handler_gets_its_record(engine: ListEngine, site: Site, daemon_log):
    """A handler that is not the daemon's (a filter on it, here) gets a record, and the
    daemon's handler beside it writes the same line as ever."""
    log = logging.getLogger("mtaplugin.decision")
    seen: list[logging.LogRecord] = []
    other = logging.Handler()
    other.emit = seen.append  # type: ignore[method-assign]
    raw = make_post("anne@example.com", site.addr("team"))
    with daemon_log.alone():
        log.addHandler(other)
        engine.decide(
            helpers.envelope(site.addr("team"), mail_from="anne@example.com", queue_id="4Q"), raw
        )
    (record,) = seen
    assert record.name == "mtaplugin.decision" and record.levelno == logging.INFO
    assert daemon_log.getvalue() == through_logging(record.getMessage())
    assert "outcome=accepted" in record.getMessage()


def test_nothing_is_written_when_info_is_off(engine: ListEngine, site: Site, daemon_log):
    raw = make_post("anne@example.com", site.addr("team"))
    with daemon_log.alone():
        logging.getLogger("mtaplugin.decision").setLevel(logging.WARNING)
        engine.decide(helpers.envelope(site.addr("team"), mail_from="anne@example.com"), raw)
    assert daemon_log.getvalue() == ""
