"""The list's settings in a cached snapshot are plain values (mtaplugin.lists.settings):
every attribute of the row the posting core may read, the same values; a change of a
setting is seen by the next decision; a decision on a cached snapshot reads no attribute
of an ORM row of the list."""

from __future__ import annotations

import pytest
from sqlalchemy import inspect
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import InstrumentedAttribute

from mtaplugin.engine import ListEngine
from mtaplugin.lists import cache
from mtaplugin.lists.settings import ListSettings
from mtaplugin.manage import lists
from mtaplugin.model import MailingList
from mtaplugin.posting.verdict import Accept, Accepted, Discard, Held
from tests import helpers
from tests.helpers import make_post
from tests.unit.sites import Site


def test_every_column_and_address_of_the_row_with_its_value(site: Site):
    with Session(site.sessions.kw["bind"]) as session:
        row = lists.get(session, site.addr("team"))
        snap = cache.build(session, row)
        settings = snap.mlist
        assert isinstance(settings, ListSettings) and not isinstance(settings, MailingList)
        mapper = inspect(MailingList)
        for attr in mapper.column_attrs:
            assert getattr(settings, attr.key) == getattr(row, attr.key), attr.key
        # the derived addresses and properties (the row's own, and ListAddresses')
        derived = [
            name
            for cls in MailingList.__mro__
            for name, value in vars(cls).items()
            if isinstance(value, property) and not name.startswith("_")
        ]
        derived += ["request_address", "owner_address", "bounces_address", "join_address"]
        derived += ["leave_address"]
        assert {"posting_address", "fqdn_listname", "no_reply_address"} <= set(derived)
        for name in derived:
            assert getattr(settings, name) == getattr(row, name), name
        assert settings.subaddress("confirm") == row.subaddress("confirm")
        with pytest.raises(AttributeError):
            settings.emergency = True
        assert not hasattr(settings, "domain") and not hasattr(settings, "members")


def post(engine: ListEngine, site: Site) -> Accept | Discard:
    verdict = engine.decide(
        helpers.envelope(site.addr("team"), mail_from="anne@example.com"),
        make_post("anne@example.com", site.addr("team")),
    )
    assert isinstance(verdict, Accept | Discard), verdict
    return verdict


def test_a_changed_setting_is_seen_by_the_next_decision(engine: ListEngine, site: Site):
    """The settings are copied again at the list's next generation: a change made through
    manage/ (what the REST API and the web UI call) holds the next post."""
    (first,) = post(engine, site).outcomes
    assert isinstance(first, Accepted)
    pk = site.mlist().id
    before = site.mlist().generation
    assert engine.snapshots.cached(pk, before).mlist.emergency is False  # type: ignore[union-attr]
    with site.sessions.begin() as s:
        lists.get(s, site.addr("team")).emergency = True
    after = site.mlist().generation
    assert after > before
    (second,) = post(engine, site).outcomes
    assert isinstance(second, Held)
    snap = engine.snapshots.cached(pk, after)
    assert snap is not None and snap.generation == after
    assert isinstance(snap.mlist, ListSettings) and snap.mlist.emergency is True


def test_a_decision_on_a_cached_snapshot_reads_no_row_attribute(
    engine: ListEngine, site: Site, monkeypatch: pytest.MonkeyPatch
):
    post(engine, site)  # the snapshot loaded (reading the row) and cached
    read: list[str] = []
    descriptor_get = InstrumentedAttribute.__get__

    def counted(self, instance, owner):  # type: ignore[no-untyped-def]
        if isinstance(instance, MailingList):
            read.append(self.key)
        return descriptor_get(self, instance, owner)

    monkeypatch.setattr(InstrumentedAttribute, "__get__", counted)
    assert isinstance(site.mlist().list_id, str) and read == ["list_id"]  # (it counts)
    read.clear()
    for _ in range(3):
        (outcome,) = post(engine, site).outcomes
        assert isinstance(outcome, Accepted)
    assert read == []
