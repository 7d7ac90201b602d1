"""M2 through a Postfix lab of its own with SMTP AUTH: ``trust_sasl_senders`` and what
Postfix's ``reject_sender_login_mismatch`` enforces (the envelope sender, never From:)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin.enums import MemberRole
from mtaplugin.manage import members
from mtaplugin.model import HeldMessage, MailingList
from mtaplugin.posting.rules.emergency import EMERGENCY
from mtaplugin.testing import wait_for
from mtaplugin.testing.lab import Lab
from mtaplugin.testing.mta import Refused, send
from tests.helpers import make_post, unique
from tests.integration.conftest import LabPool, lab_database, postfix_lab
from tests.integration.dovecot_auth import DovecotAuth
from tests.integration.labs import copies, make_list, session_on

LOGINS = {"bob": "bob-secret", "owner": "owner-secret"}
#: who may send as which address (Postfix's smtpd_sender_login_maps)
OWNERS = {"bob@example.org": "bob", "owner@example.org": "owner"}


@pytest.fixture(scope="module")
def sasl_lab(request: pytest.FixtureRequest, lab_pool: LabPool) -> Iterator[Lab]:
    name = "sasl-senders"
    root = lab_pool.root / name
    url = lab_database(request, lab_pool.root, "sqlite")
    lab = postfix_lab(
        root, url, lab_pool.dns, env={"MTAPLUGIN_AUTHENTICATION_TRUST_SASL_SENDERS": "true"}
    )
    root.mkdir(parents=True, exist_ok=True)
    auth = DovecotAuth(root / "auth.sock", LOGINS).start()
    logins = ", ".join(f"{address}={user}" for address, user in OWNERS.items())
    lab.postfix.extra_main.update(
        {
            "smtpd_sasl_auth_enable": "yes",
            "smtpd_sasl_type": "dovecot",
            "smtpd_sasl_path": str(auth.path),
            "smtpd_sender_login_maps": f"inline:{{ {logins} }}",
            "smtpd_sender_restrictions": "reject_sender_login_mismatch",
        }
    )
    try:
        with lab:
            yield lab
    finally:
        auth.stop()


@pytest.fixture
def db(sasl_lab: Lab) -> Iterator[Session]:
    with session_on(sasl_lab) as s:
        yield s


def _owner_list(db: Session) -> MailingList:
    mlist = make_list(db, "ann@example.org", emergency=True)
    members.add(db, mlist, "owner@example.org", MemberRole.owner)
    db.commit()
    return mlist


def send_as(lab: Lab, login: str, mail_from: str, rcpt: str, post: bytes) -> Refused | None:
    smtp = lab.connect()
    smtp.login(login, LOGINS[login])
    return send(smtp, mail_from, [rcpt], post)


def test_a_login_does_not_vouch_for_a_from_that_is_not_its_envelope_sender(
    sasl_lab: Lab, db: Session
):
    mlist = _owner_list(db)
    subject = unique("bob-as-owner")
    post = make_post(
        "owner@example.org", mlist.posting_address, subject=subject, headers={"Approved": "yes"}
    )
    # Postfix enforces the login map on MAIL FROM only ...
    refused = send_as(sasl_lab, "bob", "owner@example.org", mlist.posting_address, post)
    assert refused is not None and refused.code == 553, refused
    # ... so bob sends as himself with the owner's From:, which Postfix lets through.
    assert send_as(sasl_lab, "bob", "bob@example.org", mlist.posting_address, post) is None
    db.expire_all()
    held = db.scalars(select(HeldMessage).where(HeldMessage.subject == subject)).one()
    assert [rule for rule, _text in held.reasons] == [EMERGENCY]
    assert held.sender_signals == []
    assert copies(sasl_lab, subject, "ann@example.org") == 0


def test_the_owner_logged_in_and_sending_as_themselves_pre_approves(sasl_lab: Lab, db: Session):
    mlist = _owner_list(db)
    subject = unique("owner")
    post = make_post(
        "owner@example.org", mlist.posting_address, subject=subject, headers={"Approved": "yes"}
    )
    assert send_as(sasl_lab, "owner", "owner@example.org", mlist.posting_address, post) is None
    wait_for(lambda: copies(sasl_lab, subject, "ann@example.org"), timeout=30)
