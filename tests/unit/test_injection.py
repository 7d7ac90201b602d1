"""Header injection and template escapes: CR/LF in display names, subjects, addresses and
refusal texts cannot add a header to a notice or a line to an SMTP reply; a list owner's
template cannot reach Python's innards through Jinja2 (the sandbox), nor exhaust memory."""

from __future__ import annotations

import re
from email import message_from_bytes, policy
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin import passwords
from mtaplugin.engine import ListEngine
from mtaplugin.enums import TemplateScope
from mtaplugin.manage import lists
from mtaplugin.model import OutboxMessage, Template
from mtaplugin.notices import build, editing
from mtaplugin.notices.templates import NAMES, render, render_text
from mtaplugin.posting.replies import MAX_TEXT, permanent, temporary
from mtaplugin.posting.verdict import Discard
from mtaplugin.vocabulary.envelope import Envelope
from tests.helpers import make_post, send_hold_notices
from tests.unit.sites import make_site
from tests.unit.webclient import CHEAP_PASSWORDS
from tests.unit.webclient import make_site as make_web_site

BREAKS = ["\r\n", "\n", "\r", "\x00", "\u2028", "\x0b", "\x85"]


@pytest.mark.parametrize("brk", BREAKS)
def test_an_smtp_reply_stays_one_line(brk: str) -> None:
    for make in (permanent, temporary):
        reply = str(make("5.7.1" if make is permanent else "4.7.1", f"refused{brk}250 2.0.0 Ok"))
        assert len(reply.splitlines()) == 1 and "\r" not in reply and "\n" not in reply
        assert reply.endswith("refused 250 2.0.0 Ok")
    long = str(permanent("5.7.1", "x" * 5000))
    assert len(long) < MAX_TEXT + 20


@pytest.mark.parametrize("brk", BREAKS[:4])
def test_a_notice_gets_no_header_from_a_name_a_subject_or_an_extra(brk: str) -> None:
    raw = build(
        "list-bounces@example.org",
        f'"Eve{brk}Bcc: victim@example.net" <eve@example.net>',
        f"Your post{brk}Bcc: victim@example.net{brk}{brk}body injected",
        "the body",
        extra={"X-Reason": f"a{brk}Bcc: victim@example.net"},
    )
    msg = message_from_bytes(raw, policy=policy.default)
    assert msg["Bcc"] is None and "body injected" in str(msg["Subject"])
    assert msg.get_all("To") is not None and len(msg.get_all("To") or []) == 1
    assert msg.get_content().strip() == "the body"  # type: ignore[attr-defined]
    for line in raw.split(b"\r\n" if b"\r\n" in raw else b"\n"):
        assert not line.lower().startswith(b"bcc:")


def test_a_held_post_with_a_line_break_hidden_in_its_subject(
    module_sessions: sessionmaker[Session],
) -> None:
    """An encoded word may decode to CR LF: the moderators' notice is still one Subject."""
    site = make_site(module_sessions)
    raw = make_post("stranger@example.net", site.address).replace(
        b"Subject: hello", b"Subject: =?utf-8?q?hi=0D=0ABcc:_victim@example.net?="
    )
    name = b'From: "Eve =?utf-8?q?=0D=0ABcc:_x@example.net?=" <stranger@example.net>'
    raw = re.sub(rb"^From: .*$", name, raw, count=1, flags=re.M)
    verdict = ListEngine(site.sessions).decide(
        Envelope(mail_from="stranger@example.net", recipients=[f"<{site.address}>"]), raw
    )
    assert isinstance(verdict, Discard)  # held
    send_hold_notices(site.sessions)  # the worker's part, a moment after the answer
    with site.sessions() as s:
        mlist = lists.get(s, site.address)
        rows = s.scalars(select(OutboxMessage).where(OutboxMessage.mailing_list_id == mlist.id))
        notices = [message_from_bytes(r.raw, policy=policy.default) for r in rows]
    assert notices
    for notice in notices:
        assert notice["Bcc"] is None
        head = notice.as_bytes().split(b"\n\n", 1)[0]
        assert not re.search(rb"^bcc:", head, re.I | re.M)


ESCAPES = [
    "{{ ''.__class__.__mro__ }}",
    "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "{{ ().__class__.__base__.__subclasses__() }}",
    "{{ cycler.__init__.__globals__.os.popen('id').read() }}",
    "{{ lipsum.__globals__['os'] }}",
    "{{ self.__init__.__globals__ }}",
    "{{ request.application.__globals__ }}",
    "{{ config.__class__.__init__.__globals__ }}",
    "{{ '{0.__class__.__mro__}'.format('') }}",
    "{{ 'x' * 1000000000 }}",
    "{{ 9 ** 99999999 }}",
    "{% for i in range(1000000000) %}x{% endfor %}",
    "{{ range.__self__.__import__('os') }}",
]
HARMFUL = re.compile(r"<class |<module |<built-in|subclasses|__globals__|uid=|\bos\b")


@pytest.mark.parametrize("payload", ESCAPES)
def test_the_editor_refuses_or_disarms_every_escape_on_every_template(payload: str) -> None:
    sample = editing.sample_variables(None, "example.org")
    for name in NAMES:
        try:
            shown = editing.preview(name, payload, "en", sample)
        except Exception as exc:
            assert type(exc).__name__ in {
                "SecurityError",
                "OverflowError",
                "InvalidTemplate",
                "UndefinedError",
            }, (name, exc)
            continue
        assert not HARMFUL.search(shown), (name, shown[:200])
        assert len(shown) < 200_000


def test_a_stored_escape_sends_the_built_in_text(module_sessions: sessionmaker[Session]) -> None:
    """A text stored through REST or an import is not checked by the editor: rendering it
    falls back to the built-in notice, whatever the text raises."""
    site = make_site(module_sessions)
    with site.sessions.begin() as s:
        mlist = lists.get(s, site.address)
        for n, payload in enumerate(ESCAPES[:1] + ESCAPES[9:12]):
            s.add(
                Template(
                    name="list:user:notice:welcome",
                    scope=TemplateScope.list,
                    mailing_list_id=mlist.id,
                    language="",
                    text=payload,
                )
            )
            s.flush()
            text = render("list:user:notice:welcome", "en", session=s, mlist=mlist)
            assert not HARMFUL.search(text) and len(text) < 100_000, n
            for row in s.scalars(select(Template).where(Template.mailing_list_id == mlist.id)):
                s.delete(row)
            s.flush()
    assert render_text("{{ 'ab' * 3 }} {{ 2 ** 10 }}", "en", {}) == "ababab 1024"


@pytest.mark.parametrize("payload", ESCAPES[:2] + ESCAPES[9:11])
def test_the_web_editor_saves_no_escape(
    module_sessions: sessionmaker[Session],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    payload: str,
) -> None:
    monkeypatch.setattr(passwords, "PASSWORDS", CHEAP_PASSWORDS)
    site = make_web_site(module_sessions, tmp_path / "var")
    client = site.client()
    client.login(f"owner@{site.host}")
    page = client.post(
        f"/lists/{site.list_id}/templates/list:user:notice:welcome",
        {"op": "save", "text": payload},
    )
    assert page.status_code == 400 and "Not saved" in page.text
    assert "&lt;class" not in page.text and "<class" not in page.text
    with site.sessions() as s:
        assert s.scalars(select(Template).where(Template.text == payload)).first() is None
