"""Mail that is not for a list steps aside at DATA: the milter answers ACCEPT there (the MTA
then sends it nothing more of the transaction), and the RCPT lookup of a recipient in a
domain that holds no list runs no SQL once the domain's answer is kept.  (Through a real
Postfix and Sendmail: tests/integration/test_postfix_path.py, test_sendmail.py.)"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import Milter
from sqlalchemy import event

from mtaplugin.config import UnixSocket
from mtaplugin.engine import ListEngine
from mtaplugin.frontends.milter.session import milter_class
from mtaplugin.lists.domain_set import ListDomains
from tests.helpers import make_post
from tests.unit.sites import Site


@contextmanager
def statements(engine: ListEngine) -> Iterator[list[str]]:
    """Every SQL statement the engine's database runs meanwhile."""
    seen: list[str] = []

    def count(conn: Any, cursor: Any, statement: str, *rest: Any) -> None:
        seen.append(statement)

    event.listen(engine.db, "before_cursor_execute", count)
    try:
        yield seen
    finally:
        event.remove(engine.db, "before_cursor_execute", count)


class Context:
    """libmilter's context for a session driven by the test: the queue id macro, and the
    edits recorded."""

    def __init__(self) -> None:
        self.edits: list[tuple[str, tuple[object, ...]]] = []

    def getsymval(self, name: str) -> str | None:
        return "4QUEUEID" if name == "i" else None

    def __getattr__(self, name: str) -> Any:
        return lambda *args: self.edits.append((name, args))


def session(engine: ListEngine) -> Any:
    """A milter session as libmilter makes it on a unix socket with Postfix 3: every step
    the MTA offers negotiated as the class asks."""
    cls = milter_class(UnixSocket("/tmp/test.sock"), log_connections=True)
    one = cls(engine)
    one._ctx = Context()
    one._actions = Milter.CURR_ACTS
    one._protocol = 0x1FFFFF & ~cls.protocol_mask()
    return one


def test_the_rcpt_lookup_of_a_non_list_domain_runs_no_sql(engine: ListEngine, site: Site):
    with statements(engine) as seen:
        # the domain's answer, asked once (and the counting works)
        assert engine.check_recipient("<friend@elsewhere.example>").reply is None
    assert seen
    with statements(engine) as seen:
        for n in range(50):
            check = engine.check_recipient(f"<someone{n}@elsewhere.example>")
            assert check.reply is None and not check.is_list
    assert seen == []
    assert engine.check_recipient(f"<{site.address}>").is_list


def test_a_domain_never_asked_before_is_looked_up_at_once(engine: ListEngine, site: Site):
    """A new list domain needs no wait: only answers already given are kept."""
    assert isinstance(engine.list_domains, ListDomains)
    with statements(engine) as seen:
        assert engine.check_recipient(f"<{site.addr('nosuch')}>").reply is not None
    assert seen


def test_a_transaction_without_a_list_recipient_steps_aside_at_data(engine: ListEngine):
    milter = session(engine)
    assert milter.envfrom("<ann@example.com>") == Milter.NOREPLY
    assert milter.envrcpt("<bob@elsewhere.example>") == Milter.CONTINUE
    assert milter.envrcpt("<cy@other.example>") == Milter.CONTINUE

    assert milter.data() == Milter.ACCEPT

    assert milter.counts.stepped_aside == 1
    assert milter.counts.queue_ids == ["4QUEUEID"]
    assert "stepped_aside=1 headers=0 body_chunks=0 ends_of_message=0" in milter.counts.line()


def test_a_transaction_with_a_list_recipient_goes_on_and_is_decided(engine: ListEngine, site: Site):
    milter = session(engine)
    milter.envfrom("<anne@example.com>")
    assert milter.envrcpt("<bob@elsewhere.example>") == Milter.CONTINUE
    assert milter.envrcpt(f"<{site.address}>") == Milter.CONTINUE

    assert milter.data() == Milter.CONTINUE

    post = make_post("anne@example.com", site.address)
    head, _blank, body = post.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        name, _colon, value = line.partition(b": ")
        assert milter.header_bytes(name.decode(), value) == Milter.NOREPLY
    assert milter.body(body) == Milter.NOREPLY
    assert milter.eom() == Milter.ACCEPT
    # the list address went, the members came (bob keeps the original)
    assert ("delrcpt", (f"<{site.address}>",)) in milter._ctx.edits
    assert milter.counts.ends_of_message == 1 and milter.counts.stepped_aside == 0


def test_the_milter_asks_for_data_and_no_end_of_headers() -> None:
    """DATA must answer (a no-reply step cannot step aside); the end of headers is not
    sent; every other step that needs no answer is negotiated away."""
    negotiated = 0x1FFFFF & ~milter_class(UnixSocket("/tmp/test.sock")).protocol_mask()
    assert not negotiated & (Milter.P_NR_DATA | Milter.P_NODATA)
    assert negotiated & Milter.P_NOEOH
    assert not negotiated & (Milter.P_NOHDRS | Milter.P_NOBODY)
    for no_reply in (Milter.P_NR_CONN, Milter.P_NR_HELO, Milter.P_NR_MAIL, Milter.P_NR_HDR):
        assert negotiated & no_reply
    assert negotiated & Milter.P_NR_BODY
