"""What the members' servers see, through the real private Postfix: DMARC mitigation of a
p=reject domain, the List-* headers with one-click unsubscribe, and a DKIM signature and
ARC set by the list domain that dkimpy verifies against the loopback DNS server.

Both delivery paths are covered: a list whose domain has a web address sends each member
its own copy through the outbox (the worker seals each copy); a list without one is
edited in place by the milter and fanned out by Postfix (the milter seals the copy)."""

from __future__ import annotations

import email
import re
from collections.abc import Callable
from email.message import Message
from email.utils import getaddresses
from functools import partial

import dkim
import pytest
from sqlalchemy.orm import Session

from mtaplugin.copies import unsubscribe
from mtaplugin.enums import DMARCMitigateAction
from mtaplugin.manage import dkim as dkim_keys
from mtaplugin.manage import domains, lists, members
from mtaplugin.model import MailingList
from mtaplugin.posting.rules.dmarc import DMARC_MITIGATION
from mtaplugin.testing import wait_for
from mtaplugin.testing.dns import DnsServer
from mtaplugin.testing.lab import Lab
from mtaplugin.testing.mailauth import publish_domain_key
from tests.helpers import make_post, unique
from tests.integration.conftest import LAB_AUTHSERV_ID, SECRET_KEY, TRUSTED_VERIFIER
from tests.integration.test_rules_path import cli
from tests.replies import REFUSED_BY_RULE, TRY_LATER, said

STRICT = "strict.test"  # publishes p=reject
POSTER = f"ann@{STRICT}"


def _list_in_new_domain(
    db: Session, lab_dns: DnsServer, *regular: str, base_url: str = "", **settings: object
) -> MailingList:
    """A list in a domain of its own with a DKIM key published in the loopback DNS."""
    mail_host = f"{unique('dlv')}.test"
    domains.create(db, mail_host, "deliverability tests", base_url=base_url)
    dkim_keys.create(db, mail_host, activate=True)
    mlist = lists.create(db, f"team@{mail_host}")
    mlist.display_name = "Team"
    for key, value in settings.items():
        setattr(mlist, key, value)
    for address in regular:
        members.add(db, mlist, address)
    db.commit()
    publish_domain_key(lab_dns.zone, db, mail_host)
    return mlist


NewList = Callable[..., MailingList]


@pytest.fixture
def munging_list(db: Session, lab_dns: DnsServer) -> NewList:
    """Makes lists (:func:`_list_in_new_domain`) that munge the From: of a post from a
    p=reject domain: the member :data:`POSTER`'s domain publishes p=reject."""
    lab_dns.zone.dmarc(STRICT, "v=DMARC1; p=reject")
    munge = DMARCMitigateAction.munge_from
    return partial(_list_in_new_domain, db, lab_dns, POSTER, dmarc_mitigate_action=munge)


def _post(mlist: MailingList, subject: str) -> bytes:
    return make_post(
        f"Ann Poster <{POSTER}>",
        mlist.posting_address,
        subject=subject,
        body="Hello, list.\nA second line.\n",
        headers={
            "Authentication-Results": (
                f"{TRUSTED_VERIFIER}; dkim=pass header.d={STRICT}; "
                f"spf=pass smtp.mailfrom={POSTER}; dmarc=pass header.from={STRICT}"
            )
        },
    )


def _copy(lab: Lab, address: str, subject: str) -> bytes:
    found = wait_for(
        lambda: [m.data for m in lab.sink.to(address) if subject.encode() in m.data], timeout=60
    )
    assert isinstance(found, list) and len(found) == 1, f"{address}: {len(found)} copies"
    return found[0]


def _assert_signed_and_sealed(data: bytes, lab_dns: DnsServer, mail_host: str) -> Message:
    resolver = lab_dns.resolver()
    msg = email.message_from_bytes(data)
    signature = msg["DKIM-Signature"]
    assert signature is not None and f"d={mail_host}" in re.sub(r"\s", "", signature)
    assert dkim.verify(data, dnsfunc=resolver.dkim_dnsfunc), "DKIM signature does not verify"
    cv, _results, reason = dkim.arc_verify(data, dnsfunc=resolver.dkim_dnsfunc)
    assert cv == b"pass", f"ARC chain: {cv!r} {reason}"
    recorded = " ".join(str(msg["ARC-Authentication-Results"]).split())
    assert recorded.startswith(f"i=1; {LAB_AUTHSERV_ID};")
    assert f"dkim=pass header.d={STRICT}" in recorded  # what the trusted verifier saw
    return msg


def _assert_munged(msg: Message, mlist: MailingList) -> None:
    ((name, address),) = getaddresses([str(msg["From"])])
    assert address == mlist.posting_address
    assert name == "Ann Poster via Team"
    assert POSTER in str(msg["Reply-To"])  # the author is still one reply away
    assert msg["List-Id"] is not None and mlist.list_id in str(msg["List-Id"])
    assert str(msg["Precedence"]) == "list"


def test_p_reject_post_reaches_members_munged_signed_sealed_with_one_click(
    lab: Lab, munging_list: NewList, lab_dns: DnsServer
) -> None:
    mlist = munging_list("m1@example.net", "m2@example.net", base_url="https://lists.example.net")
    subject = unique("p-reject")
    assert lab.send(POSTER, [mlist.posting_address], _post(mlist, subject)) is None
    links = {}
    for member in ("m1@example.net", "m2@example.net"):
        msg = _assert_signed_and_sealed(_copy(lab, member, subject), lab_dns, mlist.mail_host)
        _assert_munged(msg, mlist)
        unsubscribe_field = str(msg["List-Unsubscribe"])
        assert f"<mailto:{mlist.leave_address}" in unsubscribe_field
        (url,) = re.findall(r"<(https://[^>]+)>", unsubscribe_field)
        token = url.rstrip("/").rsplit("/", 1)[-1]
        assert unsubscribe.verify(SECRET_KEY, token) == (mlist.list_id, member)
        assert str(msg["List-Unsubscribe-Post"]) == "List-Unsubscribe=One-Click"
        signed = re.sub(r"\s", "", str(msg["DKIM-Signature"])).lower()
        assert "list-unsubscribe:list-unsubscribe-post" in signed or (
            "list-unsubscribe" in signed and "list-unsubscribe-post" in signed
        )
        links[member] = url
    assert links["m1@example.net"] != links["m2@example.net"]  # one link per member


def test_in_place_copy_is_munged_signed_and_sealed_by_the_milter(
    lab: Lab, munging_list: NewList, lab_dns: DnsServer
) -> None:
    mlist = munging_list("m3@example.net", subject_prefix="[team] ")
    subject = unique("in-place")
    assert lab.send(POSTER, [mlist.posting_address], _post(mlist, subject)) is None
    msg = _assert_signed_and_sealed(_copy(lab, "m3@example.net", subject), lab_dns, mlist.mail_host)
    _assert_munged(msg, mlist)
    assert str(msg["Subject"]) == f"[team] {subject}"
    assert f"<mailto:{mlist.leave_address}" in str(msg["List-Unsubscribe"])


def test_p_none_domain_is_not_munged(lab: Lab, db: Session, lab_dns: DnsServer) -> None:
    relaxed = f"{unique('relaxed')}.test"
    lab_dns.zone.dmarc(relaxed, "v=DMARC1; p=none")
    poster = f"bea@{relaxed}"
    mlist = _list_in_new_domain(
        db, lab_dns, poster, "m4@example.net", dmarc_mitigate_action=DMARCMitigateAction.munge_from
    )
    subject = unique("p-none")
    assert (
        lab.send(poster, [mlist.posting_address], make_post(poster, mlist.posting_address, subject))
        is None
    )
    msg = email.message_from_bytes(_copy(lab, "m4@example.net", subject))
    assert getaddresses([str(msg["From"])])[0][1] == poster


def test_dmarc_reject_action_is_a_550_naming_the_rule(
    lab: Lab, db: Session, lab_dns: DnsServer
) -> None:
    lab_dns.zone.dmarc(STRICT, "v=DMARC1; p=reject")
    mlist = _list_in_new_domain(
        db, lab_dns, POSTER, "m5@example.net", dmarc_mitigate_action=DMARCMitigateAction.reject
    )
    refused = lab.send(POSTER, [mlist.posting_address], _post(mlist, unique("refuse")))
    assert said(refused) == ("data", REFUSED_BY_RULE), refused
    assert refused is not None and DMARC_MITIGATION in refused.text and STRICT in refused.text


def test_dns_down_is_a_451_and_the_retry_is_delivered(
    lab: Lab, db: Session, lab_dns: DnsServer
) -> None:
    down = f"{unique('down')}.test"
    poster = f"cy@{down}"
    mlist = _list_in_new_domain(
        db, lab_dns, poster, "m6@example.net", dmarc_mitigate_action=DMARCMitigateAction.munge_from
    )
    lab_dns.zone.servfail(f"_dmarc.{down}")
    subject = unique("dns-down")
    post = make_post(poster, mlist.posting_address, subject)
    refused = lab.send(poster, [mlist.posting_address], post)
    assert said(refused) == ("data", TRY_LATER), refused
    assert not lab.sink.to("m6@example.net")
    lab_dns.zone.heal()
    lab_dns.zone.dmarc(down, "v=DMARC1; p=quarantine")
    assert lab.send(poster, [mlist.posting_address], post) is None
    msg = email.message_from_bytes(_copy(lab, "m6@example.net", subject))
    assert getaddresses([str(msg["From"])])[0][1] == mlist.posting_address


def test_released_hold_is_mitigated_and_sealed_with_what_the_milter_saw(
    lab: Lab, db: Session, lab_dns: DnsServer
) -> None:
    lab_dns.zone.dmarc(STRICT, "v=DMARC1; p=reject")
    mlist = _list_in_new_domain(
        db, lab_dns, "m7@example.net", dmarc_mitigate_action=DMARCMitigateAction.munge_from
    )
    subject = unique("held")
    assert lab.send(POSTER, [mlist.posting_address], _post(mlist, subject)) is None  # nonmember
    listing = cli(lab, "held", "list", mlist.fqdn_listname)
    assert subject in listing.stdout, listing.stderr
    held_id = listing.stdout.split("\t", 1)[0]
    # The policy changes before the release: the post is still mitigated as it came in.
    lab_dns.zone.dmarc(STRICT, "v=DMARC1; p=none")
    approved = cli(lab, "held", "approve", mlist.fqdn_listname, held_id, "--as", "mod@x.test")
    assert approved.returncode == 0, approved.stderr
    data = _copy(lab, "m7@example.net", subject)
    _assert_munged(_assert_signed_and_sealed(data, lab_dns, mlist.mail_host), mlist)
