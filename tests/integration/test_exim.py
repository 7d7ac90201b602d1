"""mtaplugin behind a real private Exim 4.96 (from Debian's package files), wired with the
contrib/exim/ snippets themselves: the ACLs decide during the SMTP dialogue, the routers
and the LMTP transport deliver what reaches them undecided.  What is Exim's own; the
scenarios every front end shares (with the LMTP and pipe variants) are in
test_front_ends.py."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest
from sqlalchemy.orm import Session

from mtaplugin.enums import MemberRole
from mtaplugin.manage import members
from mtaplugin.testing.exim import EximLab
from tests.helpers import make_post, unique
from tests.integration.labs import PASSTHROUGH, copies, make_list, session_on, waits


@pytest.fixture
def exim_db(exim: EximLab) -> Iterator[Session]:
    with session_on(exim) as s:
        yield s


# --- the recommended setup: decided in the SMTP dialogue ------------------------------------
def test_a_large_post_is_decided_whole(exim: EximLab, exim_db: Session) -> None:
    """The DATA query carries the whole post (Exim reads its spool file for mtaplugin):
    3 MB arrive intact, the last line included."""
    mlist = make_list(exim_db, "lee@example.org", max_message_size=0)  # no size limit
    subject = unique("exim-large")
    body = "".join(f"line {n:07d} of a large post\n" for n in range(110_000)) + "THE END\n"
    post = make_post("lee@example.org", mlist.posting_address, subject=subject, body=body)
    assert len(post) > 3_000_000

    assert exim.send("lee@example.org", [mlist.posting_address], post) is None

    waits(exim, lambda: copies(exim, subject, "lee@example.org"))
    (copy,) = [m for m in exim.sink.to("lee@example.org") if subject.encode() in m.data]
    assert b"line 0109999 of a large post" in copy.data and b"THE END" in copy.data


def test_owner_address_reaches_the_owners_and_a_suffix_routes_to_lmtp(
    exim: EximLab, exim_db: Session
) -> None:
    """-owner mail is decided in the ACL like a post; submitted locally, the router's
    local_part_suffix and list lookup send -owner to the LMTP front end."""
    mlist = make_list(exim_db, "mia@example.org")
    members.add(exim_db, mlist, "boss@example.org", MemberRole.owner)
    exim_db.commit()
    owner = mlist.fqdn_listname.replace("@", "-owner@")
    subject = unique("exim-owner")
    post = make_post("someone@example.com", owner, subject=subject)

    assert exim.send("someone@example.com", [owner], post) is None
    waits(exim, lambda: copies(exim, subject, "boss@example.org"))
    assert not copies(exim, subject, "mia@example.org")

    local = unique("exim-owner-local")
    proc = subprocess.run(
        [str(exim.exim.binary), "-C", str(exim.exim.conf), "-odi", "-f", "someone@example.com",
         owner],
        input=make_post("someone@example.com", owner, subject=local),
        capture_output=True, env=exim.exim.env(), timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    waits(exim, lambda: copies(exim, local, "boss@example.org"))
    line = f"<{owner}> R=mtaplugin_lists T=mtaplugin_lmtp"
    waits(exim, lambda: line in exim.exim.log())


def test_other_recipients_get_the_original(exim: EximLab, exim_db: Session) -> None:
    mlist = make_list(exim_db, "fay@example.org")
    other = f"{unique('person')}@{PASSTHROUGH}"
    subject = unique("exim-mixed")
    post = make_post("fay@example.org", mlist.posting_address, subject=subject)

    assert exim.send("fay@example.org", [mlist.posting_address, other], post) is None

    waits(exim, lambda: copies(exim, subject, "fay@example.org") and copies(exim, subject, other))
    exim.exim.wait_queue_empty()
    assert copies(exim, subject, "fay@example.org") == 1
    assert copies(exim, subject, other) == 1


def test_a_locally_submitted_post_is_decided_by_the_lmtp_transport(
    exim: EximLab, exim_db: Session
) -> None:
    mlist = make_list(exim_db, "gus@example.org", "hal@example.org")
    subject = unique("exim-local")
    post = make_post("gus@example.org", mlist.posting_address, subject=subject)
    proc = subprocess.run(
        [str(exim.exim.binary), "-C", str(exim.exim.conf), "-odi", "-f", "gus@example.org",
         mlist.posting_address],
        input=post, capture_output=True, env=exim.exim.env(), timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr

    waits(exim, lambda: copies(exim, subject, "hal@example.org"))
    line = f"<{mlist.posting_address}> R=mtaplugin_lists T=mtaplugin_lmtp"
    waits(exim, lambda: line in exim.exim.log())
    assert copies(exim, subject, "gus@example.org") == 1
