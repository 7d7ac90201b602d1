"""The dmarc-mitigation rule, the mitigation decision, and the engine-side service that
looks policies up (against a real loopback DNS server) and seals copies."""

from __future__ import annotations

from collections.abc import Iterator

import dkim
import pytest
from sqlalchemy.orm import Session

from mtaplugin.enums import Action, DMARCMitigateAction, MemberRole
from mtaplugin.errors import TryLater
from mtaplugin.mailauth import signing
from mtaplugin.mailauth.dmarc import DmarcPolicy, should_mitigate
from mtaplugin.mailauth.service import Deliverability, KeyCache, SealInfo
from mtaplugin.manage import dkim as dkim_keys
from mtaplugin.manage import domains, lists
from mtaplugin.posting.rules.dmarc import dmarc_mitigation
from mtaplugin.posting.verdict import Refused
from mtaplugin.testing.dns import DnsServer
from tests.unit.test_rules import ctx, decide, new_list, raw, snap

STRICT = DmarcPolicy("example.com", "example.com", "reject", "reject", True)
RELAXED = DmarcPolicy("example.com", "example.com", "none", "none", True)


@pytest.fixture(scope="module")
def dns() -> Iterator[DnsServer]:
    server = DnsServer().start()
    yield server
    server.stop()


def _ctx(action: DMARCMitigateAction, policy: DmarcPolicy | None, **settings: object):
    mlist = new_list(dmarc_mitigate_action=action, **settings)
    context = ctx(snapshot=snap(mlist))
    context.dmarc = policy
    return context


@pytest.mark.parametrize(
    ("action", "expected"),
    [(DMARCMitigateAction.reject, Action.reject), (DMARCMitigateAction.discard, Action.discard)],
)
def test_the_rule_refuses_or_drops_a_strict_domain(action, expected):
    hit = dmarc_mitigation(_ctx(action, STRICT))
    assert hit is not None and hit.action is expected and hit.rule == "dmarc-mitigation"
    assert "example.com publishes a DMARC policy of reject" in hit.reason


@pytest.mark.parametrize(
    ("action", "policy"),
    [
        (DMARCMitigateAction.reject, RELAXED),
        (DMARCMitigateAction.reject, None),
        (DMARCMitigateAction.munge_from, STRICT),  # a transform, not a decision
        (DMARCMitigateAction.no_mitigation, STRICT),
    ],
)
def test_the_rule_misses(action, policy):
    assert dmarc_mitigation(_ctx(action, policy)) is None


def test_dmarc_addresses_and_the_lists_own_notice():
    context = _ctx(
        DMARCMitigateAction.reject,
        None,
        dmarc_addresses=["^.*@example\\.com$"],
        dmarc_moderation_notice="Ask   the owner.",
    )
    hit = dmarc_mitigation(context)
    assert hit is not None and hit.reason == "Ask the owner."


def test_the_rule_runs_before_approval_and_membership():
    # Mailman applies it before `approved`: even a moderator's post cannot go out unmitigated
    mlist = new_list(dmarc_mitigate_action=DMARCMitigateAction.reject)
    owner = snap(mlist, roles={"ann@example.com": {MemberRole.owner: None}})
    outcome = decide(raw(extra={"Approved": "x"}), owner, dmarc=STRICT)
    assert isinstance(outcome, Refused) and "dmarc-mitigation" in outcome.reply.text


def test_munge_is_decided_from_the_policy_or_the_kept_flag():
    mlist = new_list(dmarc_mitigate_action=DMARCMitigateAction.munge_from)
    assert should_mitigate(mlist, STRICT, "ann@example.com")
    assert not should_mitigate(mlist, RELAXED, "ann@example.com")
    assert should_mitigate(mlist, True, "ann@example.com")  # a held post's
    assert not should_mitigate(mlist, False, "ann@example.com")
    mlist.anonymous_list = True
    assert not should_mitigate(mlist, STRICT, "ann@example.com")


def test_policy_is_looked_up_only_when_a_list_mitigates(dns: DnsServer):
    dns.zone.dmarc("strict.example", "v=DMARC1; p=reject")
    service = Deliverability(dns.resolver())
    quiet = new_list()
    munging = new_list(dmarc_mitigate_action=DMARCMitigateAction.munge_from)
    before = len(dns.zone.queries)
    assert service.dmarc_policy("a@strict.example", [quiet]) is None
    assert len(dns.zone.queries) == before  # no list mitigates: no lookup at all
    policy = service.dmarc_policy("a@strict.example", [quiet, munging])
    assert policy is not None and policy.strict


def test_dns_failure_is_try_later_or_mitigation(dns: DnsServer):
    dns.zone.servfail("_dmarc.broken.example")
    munging = new_list(dmarc_mitigate_action=DMARCMitigateAction.munge_from)
    with pytest.raises(TryLater):
        Deliverability(dns.resolver()).dmarc_policy("a@broken.example", [munging])
    policy = Deliverability(dns.resolver(), on_failure="mitigate").dmarc_policy(
        "a@broken.example", [munging]
    )
    assert policy is not None and policy.dns_error and policy.strict
    dns.zone.heal()


@pytest.fixture
def signed_domain(session: Session, dns: DnsServer) -> str:
    domains.create(session, "sealed.example")
    lists.create(session, "team@sealed.example")
    key = dkim_keys.create(session, "sealed.example", activate=True)
    session.flush()
    dns.zone.dkim("sealed.example", key.selector, signing.txt_value(key.private_key))
    return "sealed.example"


def test_seal_signs_and_arc_seals_with_the_domains_key(
    session: Session, dns: DnsServer, signed_domain: str
):
    service = Deliverability(dns.resolver(), authserv_id="lists.sealed.example")
    message = raw(sender="ann@example.com", to=f"team@{signed_domain}")
    results = "mx.example; dkim=pass header.d=example.com"
    out = service.seal(session, SealInfo(signed_domain, results), message)
    assert out.endswith(message)
    resolver = dns.resolver()
    assert dkim.verify(out, dnsfunc=resolver.dkim_dnsfunc)
    cv, _sets, reason = dkim.arc_verify(out, dnsfunc=resolver.dkim_dnsfunc)
    assert cv == b"pass", reason
    assert b"ARC-Authentication-Results: i=1; lists.sealed.example;" in out
    # a domain without a key: the copy goes as it is
    domains.create(session, "plain.example")
    session.flush()
    assert service.seal(session, SealInfo("plain.example"), message) == message


def test_the_key_cache_reads_sql_once_per_ttl(session: Session, signed_domain: str):
    now = [0.0]
    cache = KeyCache(ttl=30, clock=lambda: now[0])
    first = cache.get(session, signed_domain)
    assert first is not None
    dkim_keys.remove(session, signed_domain)
    session.flush()
    assert cache.get(session, signed_domain) == first  # still within the TTL
    now[0] = 31
    assert cache.get(session, signed_domain) is None


def test_seal_info_round_trips_through_the_outbox_record():
    info = SealInfo("lists.example", "mx; dkim=pass")
    assert SealInfo.from_record(info.as_record()) == info
    assert SealInfo.from_record(None) is None
    assert SealInfo.from_record({"personalize": 1}) is None
