"""mtaplugin.engine.known_domains: with the list database down, the engine defers only
mail for the list domains it knows from the last Postfix table; other mail goes on."""

from __future__ import annotations

import os
from pathlib import Path

from mtaplugin.db import make_engine, sessionmaker_for
from mtaplugin.engine import ListEngine
from mtaplugin.engine.known_domains import KnownDomains, in_domains
from mtaplugin.frontends.postfix_tables import render
from mtaplugin.posting.verdict import Accept, TempFail
from mtaplugin.testing import free_port
from mtaplugin.vocabulary.envelope import Envelope
from tests.helpers import make_post


def test_in_domains_matches_the_domain_and_its_subdomains():
    known = frozenset({"lists.test"})
    assert in_domains("<Team@Lists.Test>", known)
    assert in_domains("team@sub.lists.test.", known)
    assert not in_domains("team@otherlists.test", known)
    assert not in_domains("team@test", known)
    assert not in_domains("no-domain", known)


def test_known_domains_follow_the_table_and_none_without_it(tmp_path: Path):
    assert KnownDomains("")() is None
    known = KnownDomains(str(tmp_path))
    assert known() is None  # not written yet
    (tmp_path / "domains").write_text(render(["A.test", "b.test"], "class"))
    assert known() == {"a.test", "b.test"}
    (tmp_path / "domains").write_text(render(["c.test"], "class"))
    os.utime(tmp_path / "domains", (1, 1))  # a new mtime, whatever the clock's resolution
    assert known() == {"c.test"}


def test_database_down_defers_list_mail_only(tmp_path: Path):
    (tmp_path / "domains").write_text(render(["lists.test"], "class"))
    url = f"postgresql+psycopg://postgres@127.0.0.1:{free_port()}/nowhere"
    db = make_engine(url, timeout=1)
    try:
        engine = ListEngine(sessionmaker_for(db), known_domains=KnownDomains(str(tmp_path)))
        listed = engine.check_recipient("<team@lists.test>")
        assert listed.reply is not None and listed.reply.code == 451
        assert engine.check_recipient("<bob@elsewhere.test>").reply is None
        other = Envelope(mail_from="<a@x.test>", recipients=["<bob@elsewhere.test>"])
        assert engine.decide(other, make_post("a@x.test", "bob@elsewhere.test")) == Accept()
        mixed = Envelope(
            mail_from="<a@x.test>", recipients=["<bob@elsewhere.test>", "<team@lists.test>"]
        )
        assert isinstance(engine.decide(mixed, make_post("a@x.test", "team@lists.test")), TempFail)
        # without the table: every recipient waits, as before
        unknown = ListEngine(sessionmaker_for(db))
        assert unknown.check_recipient("<bob@elsewhere.test>").reply is not None
    finally:
        db.dispose()
