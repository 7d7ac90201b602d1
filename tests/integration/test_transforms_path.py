"""What the members get, end to end through a real private Postfix and the real milter:
subject prefix, Reply-To, List-* headers, footer, content filtering at DATA, one-click
unsubscribe links on personalized copies."""

from __future__ import annotations

from email.message import Message
from pathlib import Path

from sqlalchemy.orm import Session

from mtaplugin.copies import unsubscribe
from mtaplugin.copies.transforms.encoding import decode_text
from mtaplugin.enums import Action, FilterAction, ReplyToMunging
from mtaplugin.manage import domains, lists, members
from mtaplugin.posting import content_filter
from mtaplugin.testing.lab import Lab
from tests.helpers import list_template, make_post, unique
from tests.integration.conftest import SECRET_KEY
from tests.integration.labs import copies_for, copies_of_a_post, make_list
from tests.replies import REFUSED_BY_RULE, said

CORPUS = Path(__file__).resolve().parents[1] / "corpus"


def body_text(msg: Message) -> str:
    out = []
    for part in msg.walk():
        if part.get_content_maintype() == "text" and not part.is_multipart():
            data = part.get_payload(decode=True)
            out.append(data.decode(part.get_content_charset() or "utf-8", "replace"))
    return "\n".join(out)


def test_members_get_prefix_reply_to_list_headers_and_footer(lab: Lab, db: Session) -> None:
    people = ("pia@example.org", "quin@example.org", "ravi@example.net")
    mlist = make_list(
        db,
        *people,
        display_name="Team",
        subject_prefix="[Team] ",
        reply_goes_to_list=ReplyToMunging.point_to_list,
    )
    marker = unique("marker").encode()
    post = make_post(
        "pia@example.org",
        mlist.posting_address,
        subject="Re: [Team] Re: plans",
        body=f"See you there. {marker.decode()}\n",
        headers={"Return-Receipt-To": "pia@example.org", "X-Keep": "kept"},
    )

    assert lab.send("pia@example.org", [mlist.posting_address], post) is None

    got = copies_for(lab, marker, *people)
    for person in people:
        msg = got[person]
        assert decode_text(msg["Subject"]) == "[Team] Re: plans"
        assert mlist.posting_address in msg["Reply-To"]
        assert msg["List-Id"] == f'"Team" <{mlist.list_id}>'
        assert msg["List-Post"] == f"<mailto:{mlist.posting_address}>"
        assert f"<mailto:{mlist.leave_address}>" in msg["List-Unsubscribe"]
        assert msg["List-Help"].startswith(f"<mailto:{mlist.request_address}")
        assert msg["Precedence"] == "list"
        assert msg["Return-Receipt-To"] is None
        assert msg["X-Keep"] == "kept"
        assert msg.get_all("Subject") and len(msg.get_all("Subject")) == 1
        text = body_text(msg)
        assert "See you there." in text
        assert f"Team mailing list -- {mlist.posting_address}" in text
        assert f"To unsubscribe send an email to {mlist.leave_address}" in text


def test_footer_in_a_latin1_post_and_around_a_signed_post(lab: Lab, db: Session) -> None:
    mlist = make_list(
        db,
        "dee@example.org",
        display_name="Café",
        subject_prefix="[Café] ",
        default_nonmember_action=Action.accept,
    )
    latin1 = (
        (CORPUS / "latin1-8bit.eml")
        .read_bytes()
        .replace(b"team@lists.example.org", mlist.posting_address.encode())
    )
    signed = (
        (CORPUS / "signed.eml")
        .read_bytes()
        .replace(b"team@lists.example.org", mlist.posting_address.encode())
    )
    assert lab.send("joerg@example.de", [mlist.posting_address], latin1) is None
    assert lab.send("frank@example.org", [mlist.posting_address], signed) is None

    msg = copies_for(lab, b"<latin1@example.de>", "dee@example.org")["dee@example.org"]
    assert msg.get_content_type() == "text/plain"
    text = body_text(msg)
    assert "Grüße aus Köln" in text
    assert f"Café mailing list -- {mlist.posting_address}" in text
    assert decode_text(msg["Subject"]) == "[Café] Re: Grüße aus Köln"

    msg = copies_for(lab, b"<signed@example.org>", "dee@example.org")["dee@example.org"]
    signed_body = signed[signed.index(b"\r\n\r\n") + 4 :]
    raw = msg.as_bytes()
    assert msg.get_content_type() == "multipart/mixed"
    assert msg.get_payload()[0].get_content_type() == "multipart/signed"
    # The signed part reached the member byte for byte (Postfix may only change line ends).
    assert signed_body.replace(b"\r\n", b"\n") in raw.replace(b"\r\n", b"\n")
    assert "Café mailing list" in body_text(msg.get_payload()[-1])


def test_a_content_filter_reject_is_a_5xx_at_data_naming_the_rule(lab: Lab, db: Session) -> None:
    mlist = make_list(
        db,
        "eve@example.org",
        filter_content=True,
        filter_types=["text/html"],
        filter_action=FilterAction.reject,
        default_nonmember_action=Action.accept,
    )
    post = (
        (CORPUS / "html-only.eml")
        .read_bytes()
        .replace(b"team@lists.example.org", mlist.posting_address.encode())
    )
    refused = lab.send("eve@example.org", [mlist.posting_address], post)
    assert said(refused) == ("data", REFUSED_BY_RULE), refused
    assert refused is not None and content_filter.RULE in refused.text
    assert "text/html" in refused.text


def test_content_filter_removes_parts_and_converts_html(lab: Lab, db: Session) -> None:
    mlist = make_list(
        db,
        "fay@example.org",
        filter_content=True,
        filter_extensions=["exe"],
        convert_html_to_plaintext=True,
        default_nonmember_action=Action.accept,
    )
    post = (
        (CORPUS / "nested-mixed.eml")
        .read_bytes()
        .replace(b"team@lists.example.org", mlist.posting_address.encode())
    )
    assert lab.send("erin@example.com", [mlist.posting_address], post) is None
    msg = copies_for(lab, b"<nested@example.com>", "fay@example.org")["fay@example.org"]
    names = [p.get_filename() for p in msg.walk() if p.get_filename()]
    assert names == ["report.pdf"]
    assert msg["X-Content-Filtered-By"] == "mtaplugin"
    assert "text/html" not in {p.get_content_type() for p in msg.walk()}


def test_one_click_unsubscribe_on_each_members_own_copy(lab: Lab, db: Session) -> None:
    host = f"{unique('web')}.test"
    domains.create(db, host, base_url=f"https://{host}")
    mlist = lists.create(db, f"{unique('news')}@{host}")
    people = ("gus@example.org", "hana@example.net")
    for person in people:
        members.add(db, mlist, person)
    db.commit()
    got = copies_of_a_post(lab, mlist, "gus@example.org", *people)
    for person in people:
        msg = got[person]
        assert msg["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
        unfolded = " ".join(msg["List-Unsubscribe"].split())
        https, mailto = (v.strip(" <>") for v in unfolded.split(","))
        assert mailto == f"mailto:{mlist.leave_address}"
        prefix = f"https://{host}/lists/{mlist.list_id}/unsubscribe/"
        assert https.startswith(prefix)
        token = https[len(prefix) :]
        assert unsubscribe.verify(SECRET_KEY, token) == (mlist.list_id, person)
    # One copy per member, each with its own link.
    assert len({got[p]["List-Unsubscribe"] for p in people}) == 2


def test_dmarc_munge_from_reaches_the_members(lab: Lab, db: Session) -> None:
    from mtaplugin.enums import DMARCMitigateAction

    people = ("ulla@example.org", "vic@example.org")
    mlist = make_list(
        db,
        *people,
        display_name="Team",
        dmarc_mitigate_action=DMARCMitigateAction.munge_from,
        dmarc_mitigate_unconditionally=True,
    )
    ulla = "Ulla Example <ulla@example.org>"
    got = copies_of_a_post(lab, mlist, "ulla@example.org", *people, author=ulla)
    for msg in got.values():
        assert msg["From"] == f"Ulla Example via Team <{mlist.posting_address}>"
        assert msg["Reply-To"] == "Ulla Example <ulla@example.org>"
        assert msg["List-Id"] == f'"Team" <{mlist.list_id}>'
        assert f"<mailto:{mlist.leave_address}>" in msg["List-Unsubscribe"]


def test_a_personalized_list_names_each_member_in_its_footer(lab: Lab, db: Session) -> None:
    from mtaplugin.enums import Personalization

    people = ("wes@example.org", "xia@example.net")
    mlist = make_list(db, *people, personalize=Personalization.individual)
    db.add(
        list_template(
            mlist,
            "list:member:regular:footer",
            text="-- \nThis copy is for $member ($display_name)",
        )
    )
    db.commit()
    got = copies_of_a_post(lab, mlist, "wes@example.org", *people)
    for person in people:
        text = body_text(got[person])
        assert text.rstrip().endswith(f"This copy is for {person} ({mlist.display_name})")
        assert decode_text(got[person]["Subject"]).startswith(f"[{mlist.display_name}] ")


def test_a_long_folded_subject_is_edited_in_place(lab: Lab, db: Session) -> None:
    mlist = make_list(db, "yara@example.org", display_name="Équipe", subject_prefix="[Équipe] ")
    subject = "Réunion " + "très longue " * 15
    marker = unique("folded").encode()
    post = make_post("yara@example.org", mlist.posting_address, subject=subject)
    post = post.replace(b"Hello, list.", marker)
    assert lab.send("yara@example.org", [mlist.posting_address], post) is None
    msg = copies_for(lab, marker, "yara@example.org")["yara@example.org"]
    assert decode_text(msg["Subject"]) == "[Équipe] " + " ".join(subject.split())
    assert msg.get_all("Subject") and len(msg.get_all("Subject")) == 1
    raw = msg.as_bytes()
    head = raw[: raw.index(b"\n\n")]
    assert all(len(line) <= 998 for line in head.split(b"\n"))
    subject_lines = head.split(b"Subject: ")[1].split(b"\n")
    assert subject_lines[1].startswith(b" =?utf-8?")  # folded, as encoded words


def test_an_anonymous_post_names_neither_poster_nor_client(lab: Lab, db: Session) -> None:
    mlist = make_list(db, "zed@example.org", anonymous_list=True, description="Whistle")
    post = (
        (CORPUS / "anonymous-leaky.eml")
        .read_bytes()
        .replace(b"team@lists.example.org", mlist.posting_address.encode())
    )
    mlist.accept_these_nonmembers = ["leak@example.net"]
    db.commit()
    assert lab.send("leak@example.net", [mlist.posting_address], post) is None
    msg = copies_for(lab, b"say nothing about me", "zed@example.org")["zed@example.org"]
    raw = msg.as_bytes().lower()
    for secret in (b"leak", b"192.0.2", b"client.test", b"secret org", b"leakmail"):
        assert secret not in raw, secret
    assert msg["From"] == f"Whistle <{mlist.posting_address}>"
