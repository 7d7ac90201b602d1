"""The archive store and its threads on SQLite and PostgreSQL: once per Message-ID,
X-No-Archive honoured, threads by In-Reply-To/References/subject, a reply before its
parent re-parented; and posts through the engine and released holds archived with the
Archived-At their members' copy carries."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.archive import store, threads
from mtaplugin.archive.hashing import message_id_hash
from mtaplugin.engine import ListEngine
from mtaplugin.enums import ArchivePolicy
from mtaplugin.manage import held, lists
from mtaplugin.model import MailingList
from mtaplugin.model.archive import ArchivedMessage, ArchiveThread, ArchiveWaiting
from mtaplugin.posting.verdict import Accept, Discard
from mtaplugin.vocabulary.draft import apply_ops, parse_fields
from mtaplugin.vocabulary.envelope import Envelope
from tests.helpers import drain, make_post
from tests.unit.sites import Roster, make_site

NOW = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)


def mail(
    mid: str,
    subject: str = "plan",
    irt: str = "",
    refs: str = "",
    when: datetime = NOW,
    extra: str = "",
) -> bytes:
    lines = [
        "From: Anne <anne@example.com>",
        f"Subject: {subject}",
        f"Message-ID: <{mid}@example.com>",
        f"Date: {when.strftime('%a, %d %b %Y %H:%M:%S +0000')}",
    ]
    if irt:
        lines.append(f"In-Reply-To: <{irt}@example.com>")
    if refs:
        lines.append("References: " + " ".join(f"<{r}@example.com>" for r in refs.split()))
    if extra:
        lines.append(extra)
    return ("\n".join(lines) + f"\n\nbody of {mid}\n").encode()


def put(s: Session, mlist: MailingList, raw: bytes, now: datetime = NOW) -> ArchivedMessage | None:
    pk = store.archive(s, mlist, raw, now)
    return None if pk is None else s.get(ArchivedMessage, pk)


def by_mid(s: Session, mlist: MailingList) -> dict[str, ArchivedMessage]:
    rows = s.scalars(select(ArchivedMessage).where(ArchivedMessage.mailing_list_id == mlist.id))
    return {m.message_id.split("@")[0].lstrip("<"): m for m in rows}


def thread_rows(s: Session, mlist: MailingList) -> list[ArchiveThread]:
    query = select(ArchiveThread).where(ArchiveThread.mailing_list_id == mlist.id)
    return list(s.scalars(query.order_by(ArchiveThread.id)))


def test_a_post_is_archived_once(txn_session: Session, mlist: MailingList) -> None:
    first = put(txn_session, mlist, mail("a1"))
    assert first is not None
    assert first.message_id_hash == message_id_hash("<a1@example.com>")
    assert (first.sender, first.sender_name, first.subject) == ("anne@example.com", "Anne", "plan")
    assert first.text == "body of a1\n"
    assert put(txn_session, mlist, mail("a1", subject="again")) is None
    assert len(by_mid(txn_session, mlist)) == 1
    (thread,) = thread_rows(txn_session, mlist)
    assert (thread.posts, thread.subject, thread.subject_key) == (1, "plan", "plan")


def test_no_archive_posts_and_never_lists_are_not_kept(
    txn_session: Session, mlist: MailingList
) -> None:
    assert put(txn_session, mlist, mail("n1", extra="X-No-Archive: yes")) is None
    assert put(txn_session, mlist, mail("n2", extra="Archive: no")) is None
    mlist.archive_policy = ArchivePolicy.never
    assert put(txn_session, mlist, mail("n3")) is None
    assert by_mid(txn_session, mlist) == {}


def test_replies_join_their_parent_s_thread(txn_session: Session, mlist: MailingList) -> None:
    s = txn_session
    put(s, mlist, mail("r1", "[Team] plan", when=NOW))
    put(s, mlist, mail("r2", "[Team] Re: plan", irt="r1", refs="r1", when=NOW + timedelta(hours=1)))
    # In-Reply-To names a post the archive lacks: the last archived one of References
    put(s, mlist, mail("r3", "Re: plan", irt="gone", refs="r1 r2", when=NOW + timedelta(hours=2)))
    m = by_mid(s, mlist)
    assert m["r2"].parent_id == m["r1"].id and m["r3"].parent_id == m["r2"].id
    assert m["r1"].parent_id is None
    (thread,) = thread_rows(s, mlist)
    assert {m["r1"].thread_id, m["r2"].thread_id, m["r3"].thread_id} == {thread.id}
    assert thread.posts == 3
    assert thread.subject == "plan"
    assert thread.started_at == NOW and thread.last_post_at == NOW + timedelta(hours=2)


def test_the_subject_fallback_and_its_window(txn_session: Session, mlist: MailingList) -> None:
    s = txn_session
    put(s, mlist, mail("s1", "Lunch", when=NOW))
    put(s, mlist, mail("s2", "RE: [Team] lunch", when=NOW + timedelta(days=1)))
    put(s, mlist, mail("s3", "Lunch", when=NOW + timedelta(days=2)))  # not a reply
    late = NOW + threads.SUBJECT_WINDOW + timedelta(days=3)
    put(s, mlist, mail("s4", "Re: Lunch", when=late), now=late)
    m = by_mid(s, mlist)
    assert m["s2"].thread_id == m["s1"].thread_id and m["s2"].parent_id == m["s1"].id
    assert m["s3"].thread_id != m["s1"].thread_id
    # the most recent "lunch" thread was s3's, and it is too old by then
    assert m["s4"].thread_id not in (m["s1"].thread_id, m["s3"].thread_id)
    assert len(thread_rows(s, mlist)) == 3


def test_a_reply_before_its_parent_is_re_parented(txn_session: Session, mlist: MailingList) -> None:
    s = txn_session
    later = NOW + timedelta(hours=1)
    put(s, mlist, mail("c2", "Re: q", irt="c1", refs="c0 c1", when=later + timedelta(hours=1)))
    put(s, mlist, mail("c3", "Re: q", irt="c2", refs="c0 c1 c2", when=later + timedelta(hours=2)))
    put(s, mlist, mail("c1", "Re: q", irt="c0", refs="c0", when=later))
    m = by_mid(s, mlist)
    assert m["c2"].parent_id == m["c1"].id and m["c3"].parent_id == m["c2"].id
    assert len({m[k].thread_id for k in ("c1", "c2", "c3")}) == 1
    # the thread the early reply started is the one kept (its address stays)
    (thread,) = thread_rows(s, mlist)
    assert thread.posts == 3 and thread.started_at == later
    # the root arrives last: it takes every orphan under it, and names the thread
    put(s, mlist, mail("c0", "q", when=NOW))
    m = by_mid(s, mlist)
    (thread,) = thread_rows(s, mlist)
    assert m["c1"].parent_id == m["c0"].id and m["c0"].parent_id is None
    assert (thread.posts, thread.subject, thread.started_at) == (4, "q", NOW)
    assert waiting(s, mlist) == []  # nobody waits any more


def waiting(s: Session, mlist: MailingList) -> list[ArchiveWaiting]:
    query = select(ArchiveWaiting).where(ArchiveWaiting.mailing_list_id == mlist.id)
    return list(s.scalars(query))


def test_a_nearer_ancestor_takes_the_reply_from_a_farther_one(
    txn_session: Session, mlist: MailingList
) -> None:
    s = txn_session
    put(s, mlist, mail("f0", "z", when=NOW))
    # In-Reply-To f2, References f0 f1 f2: only f0 is archived, so f0 is its parent for now
    put(s, mlist, mail("f3", "Re: z", irt="f2", refs="f0 f1 f2", when=NOW + timedelta(hours=3)))
    m = by_mid(s, mlist)
    assert m["f3"].parent_id == m["f0"].id
    assert len(waiting(s, mlist)) == 2  # for f2 and f1
    put(s, mlist, mail("f1", "Re: z", irt="f0", refs="f0", when=NOW + timedelta(hours=1)))
    assert by_mid(s, mlist)["f3"].parent_id == by_mid(s, mlist)["f1"].id
    assert len(waiting(s, mlist)) == 1  # still for f2
    put(s, mlist, mail("f2", "Re: z", irt="f1", refs="f0 f1", when=NOW + timedelta(hours=2)))
    m = by_mid(s, mlist)
    assert (m["f1"].parent_id, m["f2"].parent_id, m["f3"].parent_id) == (
        m["f0"].id,
        m["f1"].id,
        m["f2"].id,
    )
    assert waiting(s, mlist) == []
    (thread,) = thread_rows(s, mlist)
    assert thread.posts == 4


def test_two_orphan_threads_merge_under_their_parent(
    txn_session: Session, mlist: MailingList
) -> None:
    s = txn_session
    put(s, mlist, mail("o2", "Re: x", irt="o1", when=NOW + timedelta(hours=1)))
    put(s, mlist, mail("o3", "Re: x", refs="o1", when=NOW + timedelta(hours=2)))
    assert len(thread_rows(s, mlist)) == 2
    put(s, mlist, mail("o1", "x", when=NOW))
    m = by_mid(s, mlist)
    (thread,) = thread_rows(s, mlist)  # the empty thread is gone
    assert thread.posts == 3
    assert m["o2"].parent_id == m["o1"].id == m["o3"].parent_id


def test_a_loop_of_references_does_not_hang(txn_session: Session, mlist: MailingList) -> None:
    s = txn_session
    put(s, mlist, mail("l1", irt="l2"))
    put(s, mlist, mail("l2", irt="l1"))
    m = by_mid(s, mlist)
    assert m["l1"].thread_id == m["l2"].thread_id
    assert not (m["l1"].parent_id == m["l2"].id and m["l2"].parent_id == m["l1"].id)


def test_rebuild_threads_again(txn_session: Session, mlist: MailingList) -> None:
    s = txn_session
    put(s, mlist, mail("b2", "Re: y", irt="b1", when=NOW + timedelta(hours=1)))
    put(s, mlist, mail("b1", "y", when=NOW))
    put(s, mlist, mail("b3", "other", when=NOW))
    assert threads.rebuild(s, mlist.id) == 2
    m = by_mid(s, mlist)
    assert m["b2"].parent_id == m["b1"].id
    assert sorted(t.posts for t in thread_rows(s, mlist)) == [1, 2]


# --- through the engine ---------------------------------------------------------------

BASE = "https://lists.example.org"


def envelope(address: str, sender: str = "anne@example.com") -> Envelope:
    return Envelope(mail_from=sender, recipients=[f"<{address}>"], queue_id="Q1")


def archived(sessions: sessionmaker[Session], address: str) -> list[ArchivedMessage]:
    with sessions() as s:
        pk = lists.get(s, address).id
        query = select(ArchivedMessage).where(ArchivedMessage.mailing_list_id == pk)
        rows = list(s.scalars(query.order_by(ArchivedMessage.id)))
        s.expunge_all()
        return rows


def test_an_accepted_post_is_archived_and_its_copy_says_where(module_sessions) -> None:
    site = make_site(module_sessions, Roster.members("anne@example.com"), base_url=BASE)
    raw = make_post("anne@example.com", site.address, subject="hello archive")
    verdict = ListEngine(module_sessions).decide(envelope(site.address), raw)
    assert isinstance(verdict, Accept)
    assert archived(module_sessions, site.address) == []  # a moment after the answer:
    drain(module_sessions)  # the worker fans the post out
    (msg,) = archived(module_sessions, site.address)
    assert msg.subject == "[Team] hello archive" and msg.thread_id is not None
    end = raw.index(b"\n\n") + 2
    fields = dict(apply_ops(parse_fields(raw[:end]), verdict.edits.header_ops))
    link = f"{BASE}/archive/{site.list_id}/message/{msg.message_id_hash}/"
    assert fields["Archived-At"] == f"<{link}>"
    assert fields["List-Archive"] == f"<{BASE}/archive/{site.list_id}/>"
    assert b"Archived-At" in msg.raw and b"mailing list -- " not in msg.raw  # no footer
    # the same post again (an MTA retry): still once
    ListEngine(module_sessions).decide(envelope(site.address), raw)
    assert drain(module_sessions).repeats == 1
    assert len(archived(module_sessions, site.address)) == 1


def test_a_no_archive_post_goes_out_without_archived_at(module_sessions) -> None:
    site = make_site(module_sessions, Roster.members("anne@example.com"), base_url=BASE)
    raw = make_post("anne@example.com", site.address, headers={"X-No-Archive": "yes"})
    verdict = ListEngine(module_sessions).decide(envelope(site.address), raw)
    assert isinstance(verdict, Accept)
    names = {op.name.lower() for op in verdict.edits.header_ops}
    assert "archived-at" not in names and "list-id" in names
    drain(module_sessions)
    assert archived(module_sessions, site.address) == []


def test_a_released_hold_is_archived(module_sessions) -> None:
    site = make_site(module_sessions, Roster.members("anne@example.com"), base_url=BASE)
    verdict = ListEngine(module_sessions).decide(
        envelope(site.address, "stranger@example.net"),
        make_post("stranger@example.net", site.address, subject="from outside"),
    )
    assert isinstance(verdict, Discard)
    assert archived(module_sessions, site.address) == []  # held: not yet
    (held_id,) = verdict.stored.held.values()
    with module_sessions.begin() as s:
        held.approve(held.Moderator(s, lists.get(s, site.address), "olive@example.com"), held_id)
    drain(module_sessions)
    (msg,) = archived(module_sessions, site.address)
    assert msg.sender == "stranger@example.net"


# --- bad input: the corpus ------------------------------------------------------------

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
BAD = sorted([*CORPUS.glob("*.eml"), *(CORPUS / "archive").glob("*.eml")])


def test_every_corpus_post_is_archived_without_an_error(
    txn_session: Session, mlist: MailingList
) -> None:
    assert len(BAD) >= 20
    for path in BAD:
        msg = put(txn_session, mlist, path.read_bytes())
        assert msg is not None, path.name
        assert msg.message_id and len(msg.message_id_hash) == 32, path.name
        assert msg.thread_id is not None and msg.date is not None, path.name
    query = select(ArchivedMessage).where(ArchivedMessage.mailing_list_id == mlist.id)
    rows = {r.message_id: r for r in txn_session.scalars(query)}
    assert len(rows) == len(BAD)
    future = rows["<future@example.com>"]
    assert future.date == NOW  # an absurd Date: is the archive time
    script = rows["<script@example.com>"]
    assert "Visible words" in script.text and "document.write" not in script.text
    klingon = rows["<klingon@example.com>"]
    assert klingon.text.startswith("qapla")
    broken = rows["<b64@example.com>"]
    names = [a["name"] for a in broken.attachments]
    assert "résumé.bin" in names


def test_a_huge_attachment_is_listed_not_read_as_text(
    txn_session: Session, mlist: MailingList
) -> None:
    from email.message import EmailMessage

    big = EmailMessage()
    big["From"] = "a@example.com"
    big["Message-ID"] = "<huge@example.com>"
    big.set_content("see the file")
    big.add_attachment(b"\0" * 5_000_000, maintype="application", subtype="zip", filename="x.zip")
    msg = put(txn_session, mlist, big.as_bytes())
    assert msg is not None and msg.text == "see the file\n"
    assert msg.attachments[0]["size"] == 5_000_000 and msg.attachments[0]["name"] == "x.zip"


def test_two_replies_archived_at_once_are_both_counted(module_sessions) -> None:
    """Two transactions archive a reply to the same thread at the same moment (the second
    waits for the first's lock): the thread counts both."""
    import threading

    site = make_site(module_sessions, Roster.members("anne@example.com"))
    with module_sessions.begin() as s:
        team = lists.get(s, site.address)
        root = put(s, team, mail("k0"))
        assert root is not None and root.thread_id is not None
        thread_id = root.thread_id
    first = module_sessions()
    first.begin()
    put(first, lists.get(first, site.address), mail("k1", "Re: plan", irt="k0"))
    done: list[str] = []

    def second() -> None:
        with module_sessions.begin() as s:
            put(s, lists.get(s, site.address), mail("k2", "Re: plan", irt="k0"))
        done.append("k2")

    worker = threading.Thread(target=second)
    worker.start()
    worker.join(0.5)  # it waits for the first transaction (or is done, on a free path)
    first.commit()
    first.close()
    worker.join(10)
    assert done == ["k2"]
    with module_sessions() as s:
        thread = s.get(ArchiveThread, thread_id)
        assert thread is not None and thread.posts == 3


def test_the_archive_keeps_posts_compressed_and_reads_old_rows_as_they_are():
    from mtaplugin.model.archive import PACKED, ArchivedMessage, pack, unpack

    raw = b"From: a@example.com\r\nSubject: hi\r\n\r\n" + b"the same words again " * 200
    msg = ArchivedMessage(raw=raw)
    assert msg.stored_raw.startswith(PACKED)
    assert len(msg.stored_raw) < len(raw) / 5
    assert msg.raw == raw
    # A row written before compression (or a value that only looks packed) reads as is.
    assert unpack(raw) == raw
    assert unpack(PACKED + b"not zlib") == PACKED + b"not zlib"
    assert pack(b"") == b"" and unpack(b"") == b"" and unpack(None) == b""
