"""``Approved:`` as the first non-blank line of the body (Mailman 2.1 and 3), through the
real engine: it approves with the list's moderator password, within the same one check
per post as the header, and the members' copy (and the archive's) goes without it, in a
text/plain post and in every text part of a multipart one."""

from __future__ import annotations

import base64
from email.message import EmailMessage, Message

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mtaplugin.engine import ListEngine
from mtaplugin.posting import approval_line
from mtaplugin.posting.verdict import Discard
from mtaplugin.vocabulary.envelope import Envelope
from mtaplugin.vocabulary.header_block import content_kind
from tests.helpers import make_post
from tests.unit.sites import Site
from tests.unit.test_moderator_password import HASHED, STRANGER

ANNE = "anne@example.com"


@pytest.fixture
def engine(site: Site) -> ListEngine:
    site.update(moderator_password=HASHED)
    return ListEngine(site.sessions, site_owner="postmaster@site.test")


def post(engine: ListEngine, site: Site, message: bytes) -> None:
    verdict = engine.decide(Envelope(mail_from=STRANGER, recipients=[site.address]), message, False)
    assert isinstance(verdict, Discard), verdict  # the list's copies go through the outbox


def anne_gets(site: Site) -> list[Message]:
    return site.mails_to(ANNE)


def texts(msg: Message) -> list[str]:
    out = []
    for part in msg.walk():
        payload = part.get_payload(decode=True)
        if part.get_content_maintype() == "text" and isinstance(payload, bytes):
            out.append(payload.decode(part.get_content_charset() or "utf-8"))
    return out


def test_the_first_body_line_approves_and_is_not_in_the_members_copy(
    site: Site, engine: ListEngine, checks: list[str]
):
    body = "\n\nApproved: s3cret\nHello from afar.\n"
    post(engine, site, make_post(STRANGER, site.address, subject="by body", body=body))
    [copy] = anne_gets(site)
    [text] = texts(copy)
    assert "s3cret" not in copy.as_string() and "Approved" not in text
    assert "Hello from afar." in text
    assert checks == ["s3cret"]
    assert not site.held()


@pytest.mark.parametrize("name", ["Approve", "approved", "X-Approved"])
def test_every_name_of_the_family_works_in_the_body(
    site: Site, engine: ListEngine, checks: list[str], name: str
):
    body = f"{name}: s3cret\nHi.\n"
    post(engine, site, make_post(STRANGER, site.address, body=body))
    [copy] = anne_gets(site)
    assert "s3cret" not in copy.as_string()


def test_a_wrong_body_password_holds_the_post_after_one_check(
    site: Site, engine: ListEngine, checks: list[str]
):
    body = "Approved: guess\n" * 5_000 + "Hi.\n"
    verdict = engine.decide(
        Envelope(mail_from=STRANGER, recipients=[site.address]),
        make_post(STRANGER, site.address, body=body),
        False,
    )
    assert verdict is not None
    assert len(site.held()) == 1
    assert checks == ["guess"]
    assert not anne_gets(site)


def test_a_header_is_read_first_and_the_body_is_then_left_alone(
    site: Site, engine: ListEngine, checks: list[str]
):
    message = make_post(
        STRANGER, site.address, body="Approved: s3cret\nHi.\n", headers={"Approved": "guess"}
    )
    engine.decide(Envelope(mail_from=STRANGER, recipients=[site.address]), message, False)
    assert checks == ["guess"]  # one check, the header's: the body line is not a second try
    assert len(site.held()) == 1


def test_urgent_and_a_body_approval_share_the_one_check(
    site: Site, engine: ListEngine, checks: list[str]
):
    message = make_post(
        STRANGER, site.address, body="Approved: guess\nHi.\n", headers={"Urgent": "s3cret"}
    )
    engine.decide(Envelope(mail_from=STRANGER, recipients=[site.address]), message, False)
    assert len(checks) == 1


def test_a_multipart_post_loses_the_line_in_its_text_and_its_html(
    site: Site, engine: ListEngine, checks: list[str]
):
    msg = EmailMessage()
    msg["From"] = STRANGER
    msg["To"] = site.address
    msg["Subject"] = "alternative"
    msg.set_content("Approved: s3cret\n\nSee you.\n")
    msg.add_alternative("<p>Approved: <b>s3cret</b></p><p>See you.</p>\n", subtype="html")
    post(engine, site, msg.as_bytes())
    [copy] = anne_gets(site)
    plain, html = texts(copy)[:2]
    assert "s3cret" not in copy.as_string()
    assert "See you." in plain and "See you." in html
    assert checks == ["s3cret"]


def test_a_base64_text_part_of_a_multipart_post_is_read_and_cleaned(
    site: Site, engine: ListEngine, checks: list[str]
):
    text = "Approved: s3cret\nÜber alles.\n"
    raw = (
        f"From: {STRANGER}\r\nTo: {site.address}\r\nSubject: b64\r\nMIME-Version: 1.0\r\n"
        'Content-Type: multipart/mixed; boundary="b"\r\n\r\n--b\r\n'
        "Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: base64\r\n\r\n"
        + base64.encodebytes(text.encode()).decode()
        + "--b\r\nContent-Type: application/octet-stream\r\n\r\nxyz\r\n--b--\r\n"
    ).encode()
    post(engine, site, raw)
    [copy] = anne_gets(site)
    assert "s3cret" not in texts(copy)[0] and "Über alles." in texts(copy)[0]
    assert checks == ["s3cret"]


def test_the_line_later_in_the_body_is_neither_read_nor_removed(
    site: Site, engine: ListEngine, checks: list[str]
):
    body = "Hello.\nApproved: s3cret\n"
    engine.decide(
        Envelope(mail_from=STRANGER, recipients=[site.address]),
        make_post(STRANGER, site.address, body=body),
        False,
    )
    assert checks == [] and len(site.held()) == 1


def test_a_list_without_a_password_holds_and_the_members_never_see_the_line(
    site: Site, checks: list[str]
):
    """An authenticated moderator may approve with any value, from the body too; the line
    goes from the copy as the header would."""
    engine = ListEngine(site.sessions, site_owner="postmaster@site.test")
    message = make_post("anne@example.com", site.address, body="Approved: whatever\nHi.\n")
    engine.decide(Envelope(mail_from="anne@example.com", recipients=[site.address]), message, False)
    copies = site.mails_to("bob@example.com")
    assert copies and all("whatever" not in c.as_string() for c in copies)
    assert checks == []


def test_the_parse_is_skipped_for_a_multipart_post_without_the_line():
    from mtaplugin.posting import approval_line

    body = b"--b\r\nContent-Type: text/plain\r\n\r\nHello\r\n--b--\r\n"
    fields = [("Content-Type", 'multipart/mixed; boundary="b"')]

    def no_tree() -> Message:
        raise AssertionError("parsed")

    assert approval_line.body_value(fields, body, no_tree) == ""


@given(
    st.one_of(
        st.sampled_from(
            [
                "",
                "text/plain",
                'Text/Plain; charset="UTF-8"',
                "text/plain; charset=iso-8859-1; format=flowed",
                "multipart/alternative; boundary=x",
                "MULTIPART/mixed",
                "text/html; charset*=utf-8''%e2%82%ac",
                "bogus",
                "text/plain; charset=" + "x" * 300,
            ]
        ),
        st.text(max_size=60),
    )
)
def test_a_content_type_is_read_as_the_email_package_reads_it(value: str) -> None:
    """The kept reading of a Content-Type value (read once per value) is the email
    package's."""
    holder = approval_line._holder(value)
    expected = (holder.get_content_type(), holder.get_content_charset())
    assert content_kind(value) == expected
    assert content_kind(value) == expected  # (kept)
