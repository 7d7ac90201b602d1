"""Full-text search of the archive (mtaplugin.archive.search) on SQLite FTS5 and on
PostgreSQL's tsvector: the index follows the archived rows through the triggers of
migration 0022 (insert, change, removal, deletion)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session

from mtaplugin.archive import search
from mtaplugin.archive.search import Order, Query
from mtaplugin.manage import lists
from mtaplugin.model import ArchivedMessage, MailingList
from tests.helpers import unique
from tests.unit import archive_rows
from tests.unit.archive_rows import START, Seed


def found(session: Session, words: str, mlist: MailingList | None = None, **kw) -> list[str]:
    ids = [mlist.id] if mlist is not None else []
    res = search.search(session, Query(words=words, list_ids=ids, **kw))
    return [h.message.subject for h in res.hits]


# fmt: off
TEAM = (
    Seed("Postfix milter timeouts", "The milter answers slowly under load."),
    Seed("Re: Postfix milter timeouts", "Raise milter_command_timeout to 60s.",
         "Bob Builder <bob@example.org>", timedelta(days=1), parent=0),
    Seed("Holiday photos", "Pictures from the meeting.", "Carol <carol@example.net>",
         timedelta(days=40), parts=(("beach-sunset.png", "image/png", b"\x89PNG...."),)),
    Seed("Cafe meeting", "We meet at the café on Friday.", "Dave <dave@example.net>",
         timedelta(days=50)),
)
# fmt: on


@pytest.fixture
def team(txn_session: Session, mlist: MailingList) -> MailingList:
    archive_rows.seed(txn_session, mlist, *TEAM)
    return mlist


def test_finds_words_of_the_body_subject_author_and_attachment_names(txn_session, team):
    s = txn_session
    assert found(s, "slowly", team) == ["Postfix milter timeouts"]
    assert sorted(found(s, "milter", team)) == [
        "Postfix milter timeouts",
        "Re: Postfix milter timeouts",
    ]
    assert found(s, "holiday", team) == ["Holiday photos"]
    assert found(s, "Builder", team) == ["Re: Postfix milter timeouts"]
    assert found(s, "sunset", team) == ["Holiday photos"]
    assert found(s, "nowhere-to-be-found", team) == []


def test_words_all_must_occur_and_minus_excludes(txn_session, team):
    s = txn_session
    assert found(s, "milter slowly", team) == ["Postfix milter timeouts"]
    assert found(s, "milter -slowly", team) == ["Re: Postfix milter timeouts"]
    assert found(s, "-milter", team) == []
    assert found(s, '"milter answers"', team) == ["Postfix milter timeouts"]
    assert found(s, '"answers milter"', team) == []


def test_accents_do_not_matter(txn_session, team):
    assert found(txn_session, "cafe", team) == ["Cafe meeting"]
    assert found(txn_session, "café", team) == ["Cafe meeting"]


def test_input_is_never_query_syntax(txn_session, team):
    for nasty in ['"', "AND", "NOT milter", "milter OR", "(((", "*", "col:milter", "' OR 1=1 --"]:
        search.search(txn_session, Query(words=nasty, list_ids=[team.id]))
    assert found(txn_session, "(milter)", team)  # the word is found, the syntax ignored


def test_relevance_puts_the_subject_first_and_date_orders_newest_first(txn_session, team):
    s = txn_session
    archive_rows.post(
        s, team, "Unrelated", "meeting meeting notes", date=START + timedelta(days=60)
    )
    by_relevance = found(s, "meeting", team)
    assert by_relevance[0] == "Cafe meeting"
    assert found(s, "meeting", team, order=Order.date) == [
        "Unrelated",
        "Cafe meeting",
        "Holiday photos",
    ]


def test_filters_by_list_author_and_dates(txn_session, team):
    s = txn_session
    other = lists.create(s, f"other@{team.mail_host}")
    archive_rows.post(s, other, "Milter on the other list", "milter here too")
    assert len(found(s, "milter", team)) == 2
    assert len(found(s, "milter", other)) == 1
    assert len(found(s, "milter")) >= 3  # every list
    assert found(s, "milter", team, author="BOB@example.org") == ["Re: Postfix milter timeouts"]
    assert found(s, "milter", team, author="anne exa") == ["Postfix milter timeouts"]
    assert found(s, "milter", team, author="%") == []
    assert found(s, "", team, author="carol@example.net") == ["Holiday photos"]
    assert found(s, "", team, author="carol@example.net", author_by_name_only=True) == []
    assert found(s, "", team, author="CAROL", author_by_name_only=True) == ["Holiday photos"]
    window = {"since": START + timedelta(hours=12), "until": START + timedelta(days=2)}
    assert found(s, "milter", team, **window) == ["Re: Postfix milter timeouts"]


def test_words_leave_the_senders_address_out_when_addresses_are_hidden(txn_session, team):
    """L3: the address is indexed apart (migration 0046); anonymous visitors' words do not
    search it, not even to exclude posts; members' words do, as before."""
    s = txn_session
    assert found(s, "carol example net", team) == ["Holiday photos"]
    assert found(s, "carol@example.net", team) == ["Holiday photos"]
    assert found(s, "carol example net", team, addresses_hidden=True) == []
    assert found(s, "carol@example.net", team, addresses_hidden=True) == []
    assert found(s, "holiday carol", team, addresses_hidden=True) == ["Holiday photos"]
    assert found(s, "example", team, addresses_hidden=True) == ["Postfix milter timeouts"]
    assert found(s, "meeting -net", team) == []
    assert sorted(found(s, "meeting -net", team, addresses_hidden=True)) == [
        "Cafe meeting",
        "Holiday photos",
    ]
    assert found(s, "holiday", team, addresses_hidden=True, order=Order.date) == ["Holiday photos"]


def test_pages(txn_session, mlist):
    s = txn_session
    for n in range(25):
        archive_rows.post(s, mlist, f"Report {n}", "weekly report", date=START + timedelta(n))
    first = search.search(s, Query("report", [mlist.id], order=Order.date, per_page=10))
    third = search.search(s, Query("report", [mlist.id], order=Order.date, page=3, per_page=10))
    assert first.total == 25 and first.pages == 3
    assert [h.message.subject for h in first.hits][:2] == ["Report 24", "Report 23"]
    assert [h.message.subject for h in third.hits] == [f"Report {n}" for n in range(4, -1, -1)]
    huge = search.search(s, Query("report", [mlist.id], per_page=10_000))
    assert huge.per_page == search.MAX_PER_PAGE


def test_removed_and_deleted_posts_are_never_found(txn_session, team):
    s = txn_session
    gone = archive_rows.post(s, team, "Secret plans", "the password is swordfish")
    assert found(s, "swordfish", team) == ["Secret plans"]
    gone.removed = True
    gone.text = ""
    s.flush()
    assert found(s, "swordfish", team) == []
    assert found(s, "secret", team) == []
    assert index_size(s, gone) == 0
    other = archive_rows.post(s, team, "Deleted later", "zebra crossing")
    s.delete(other)
    s.flush()
    assert found(s, "zebra", team) == []
    assert index_size(s, other) == 0


def test_a_changed_text_is_searched_as_changed(txn_session, team):
    s = txn_session
    row = archive_rows.post(s, team, "Typo", "recieve")
    row.text = "receive"
    s.flush()
    assert found(s, "recieve", team) == []
    assert found(s, "receive", team) == ["Typo"]


def test_broken_attachment_lists_do_not_stop_archiving(txn_session, mlist):
    s = txn_session
    for junk in ([{"nameless": 1}], ["just a string"], [{"name": None}], {"name": "x.pdf"}):
        archive_rows.post(s, mlist, f"odd {unique('a')}", "oddities", attachments=junk)  # type: ignore[arg-type]
    assert len(found(s, "oddities", mlist)) == 4


def test_a_huge_post_is_indexed(txn_session, mlist):
    words = " ".join(f"w{n}x" for n in range(200_000))
    archive_rows.post(txn_session, mlist, "Huge", words + " needle")
    assert found(txn_session, "w17x", mlist) == ["Huge"]


def test_reindex_rebuilds_the_index(txn_session, team):
    s = txn_session
    assert search.reindex(s, team.id) == 4
    assert sorted(found(s, "milter", team)) == [
        "Postfix milter timeouts",
        "Re: Postfix milter timeouts",
    ]
    assert search.reindex(s) >= 4
    assert found(s, "sunset", team) == ["Holiday photos"]


def index_size(s: Session, row: ArchivedMessage) -> int:
    if s.get_bind().dialect.name == "postgresql":
        sql = "SELECT count(*) FROM archive_fts WHERE message_id = :id"
    else:
        sql = "SELECT count(*) FROM archive_fts WHERE rowid = :id"
    return int(s.scalar(text(sql), {"id": row.id}) or 0)


def test_postgresql_stems_in_the_list_language_sqlite_does_not(txn_session, mlist):
    s = txn_session
    mlist.preferred_language = "de"
    s.flush()
    archive_rows.post(s, mlist, "Häuser", "Wir bauen viele Häuser am Meer.")
    assert found(s, "Häuser", mlist) == ["Häuser"]
    if s.get_bind().dialect.name != "postgresql":
        # SQLite's FTS5 index is language-neutral: no stemming
        assert found(s, "Haus", mlist) == []
        return
    assert found(s, "Haus", mlist) == ["Häuser"]
    # an unknown language falls back to 'simple' (no stemming, still found)
    mlist.preferred_language = "xx"
    s.flush()
    archive_rows.post(s, mlist, "Other", "plural houses")
    assert found(s, "houses", mlist) == ["Other"]


def test_parse_and_fts5_expression():
    terms = search.parse('Milter "time out" -spam prefix* (x)')
    assert [t.words for t in terms] == [
        ("milter",),
        ("time", "out"),
        ("spam",),
        ("prefix",),
        ("x",),
    ]
    assert terms[2].negated and terms[3].prefix
    expr = search.fts5_match(terms)
    assert expr == '("milter" AND "time out" AND "prefix"* AND "x") NOT "spam"'
    assert search.fts5_match(search.parse("-only")) == ""
    assert search.websearch_text(terms) == 'milter "time out" -spam prefix x'


def test_excerpt_shows_the_found_word():
    body = "word " * 200 + "needle in the haystack " + "word " * 200
    piece = search.excerpt(body, search.parse("needle"))
    assert "needle" in piece and piece.startswith("…") and piece.endswith("…")


def test_postgresql_ranks_the_newest_matches_and_lists_the_rest(txn_session, mlist, monkeypatch):
    s = txn_session
    monkeypatch.setattr(search, "RANK_WINDOW", 2)
    for n in range(5):
        subject = "tulip tulip tulip" if n == 0 else f"post {n}"
        archive_rows.post(s, mlist, subject, "tulip", date=START + timedelta(days=n))
    res = search.search(s, Query("tulip", [mlist.id]))
    assert res.total == 5
    if s.get_bind().dialect.name != "postgresql":
        # SQLite ranks every match (bm25 reads no whole rows): the best first, window or not
        assert res.hits[0].message.subject == "tulip tulip tulip"
        return
    # the two newest ranked first, then the older ones newest first (the best, oldest, last)
    assert [h.message.subject for h in res.hits] == [
        "post 4", "post 3", "post 2", "post 1", "tulip tulip tulip"
    ]  # fmt: skip
    monkeypatch.setattr(search, "RANK_WINDOW", 1000)
    assert found(s, "tulip", mlist)[0] == "tulip tulip tulip"
