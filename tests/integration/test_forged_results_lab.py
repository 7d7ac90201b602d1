"""M1 through a Postfix lab of its own: mtaplugin checks DKIM/SPF/DMARC itself
(``verify_incoming``) and trusts a second authserv-id, and Postfix removes incoming
Authentication-Results of the first one in ``header_checks``, as docs/security.md shows."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin.enums import MemberRole
from mtaplugin.manage import members
from mtaplugin.model import HeldMessage
from mtaplugin.posting.rules.emergency import EMERGENCY
from mtaplugin.testing.lab import Lab
from tests.helpers import make_post, unique
from tests.integration.conftest import TRUSTED_VERIFIER, LabPool, lab_database, postfix_lab
from tests.integration.labs import copies, make_list, session_on

#: trusted too, but not removed by the lab's Postfix
OTHER_VERIFIER = "mx2.lab.test"
#: docs/security.md's header_checks line, for the lab's verifier
HEADER_CHECK = (
    r"/^Authentication-Results:[[:space:]]*mx\.lab\.test([[:space:]]*;|[[:space:]]*$)/ IGNORE"
)


@pytest.fixture(scope="module")
def strict_lab(request: pytest.FixtureRequest, lab_pool: LabPool) -> Iterator[Lab]:
    name = "forged-results"
    url = lab_database(request, lab_pool.root, "sqlite")
    lab = postfix_lab(
        lab_pool.root / name,
        url,
        lab_pool.dns,
        env={
            "MTAPLUGIN_AUTHENTICATION_TRUSTED_AUTHSERV_IDS": f"{TRUSTED_VERIFIER} {OTHER_VERIFIER}",
            "MTAPLUGIN_AUTHENTICATION_VERIFY_INCOMING": "true",
        },
    )
    checks = lab_pool.root / name / "header_checks"
    checks.parent.mkdir(parents=True, exist_ok=True)
    checks.write_text(HEADER_CHECK + "\n")
    lab.postfix.extra_main["header_checks"] = f"regexp:{checks}"
    with lab:
        yield lab


@pytest.fixture
def db(strict_lab: Lab) -> Iterator[Session]:
    with session_on(strict_lab) as s:
        yield s


def _owner_post(db: Session, results: str) -> tuple[str, str, bytes]:
    mlist = make_list(db, "ann@example.org", emergency=True)
    members.add(db, mlist, "owner@example.org", MemberRole.owner)
    db.commit()
    subject = unique("forged")
    post = f"Authentication-Results: {results}\r\n".encode() + make_post(
        "owner@example.org", mlist.posting_address, subject=subject, headers={"Approved": "yes"}
    )
    return mlist.posting_address, subject, post


def _held(db: Session, subject: str) -> HeldMessage:
    db.expire_all()
    return db.scalars(select(HeldMessage).where(HeldMessage.subject == subject)).one()


def test_a_trusted_header_on_top_never_replaces_our_own_checks(strict_lab: Lab, db: Session):
    address, subject, post = _owner_post(
        db, f"{OTHER_VERIFIER}; dkim=pass header.d=example.org; dmarc=pass header.from=example.org"
    )
    assert strict_lab.send("attacker@example.com", [address], post) is None
    held = _held(db, subject)
    assert [rule for rule, _text in held.reasons] == [EMERGENCY]
    assert held.sender_signals == []
    assert copies(strict_lab, subject, "ann@example.org") == 0


def test_postfix_header_checks_remove_the_verifiers_header_before_the_milter(
    strict_lab: Lab, db: Session
):
    address, subject, post = _owner_post(db, f"{TRUSTED_VERIFIER}; dkim=pass header.d=example.org")
    assert strict_lab.send("attacker@example.com", [address], post) is None
    held = _held(db, subject)
    assert b"Authentication-Results" not in held.raw  # the milter never saw it
    assert held.sender_signals == []
