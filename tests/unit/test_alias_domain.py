"""A domain's alias domain (Mailman's ``alias_domain``): ``list@alias`` is ``list@domain``
at RCPT, in the socketmap lookup and in the Postfix tables, on SQLite and PostgreSQL; and
which alias a domain may take (mtaplugin.manage.alias_domains, finding H3): the site
admin's call, a domain owner's only from the allow-list, and never another tenant's
domain, a public suffix or one of the site's own mail domains."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin import config, passwords
from mtaplugin.engine.recipients import resolve
from mtaplugin.errors import InvalidInput
from mtaplugin.lists import roster
from mtaplugin.manage import domains, lists, users
from mtaplugin.manage.alias_domains import AliasRules, postfix_handles
from mtaplugin.model import AuditEntry, Domain
from mtaplugin.model.base import utcnow
from mtaplugin.posting.addresses import Subaddress, candidates
from mtaplugin.web.app import create_web_app
from tests.helpers import unique
from tests.unit import webclient
from tests.unit.webclient import CHEAP_PASSWORDS

ADMIN = AliasRules(site_admin=True)


def aliased(session: Session) -> tuple[str, str, str]:
    host = unique("org") + ".test"
    alias = "lists." + host
    domain = domains.create(session, host)
    domains.update(session, domain, alias_domain=alias, rules=ADMIN)
    name = unique("team")
    lists.create(session, f"{name}@{host}")
    session.flush()
    return host, alias, name


def test_a_list_address_in_the_alias_domain_is_the_list(txn_session: Session) -> None:
    host, alias, name = aliased(txn_session)
    found = roster.lookup_lists(txn_session, candidates(f"{name}@{alias}"))
    assert [f.list_id for f in found] == [f"{name}.{host}"]
    check = resolve(txn_session, f"<{name}-request@{alias}>", utcnow())
    assert check.list_id == f"{name}.{host}" and check.subaddress is Subaddress.request
    assert check.reply is None
    assert resolve(txn_session, f"{name}@{host}", utcnow()).list_id == f"{name}.{host}"


def test_no_such_list_in_the_alias_domain_is_refused_and_other_domains_pass(
    txn_session: Session,
) -> None:
    _host, alias, _name = aliased(txn_session)
    assert roster.domain_exists(txn_session, alias)
    refused = resolve(txn_session, f"nobody@{alias}", utcnow())
    assert refused.reply is not None and "5.1.1" in str(refused.reply)
    assert not roster.domain_exists(txn_session, "elsewhere.test")
    assert resolve(txn_session, "someone@elsewhere.test", utcnow()).reply is None
    assert roster.lookup_lists(txn_session, candidates(f"x@sub.{alias}")) == []


# --- who may set which alias (H3) -----------------------------------------------------------
def two_tenants(session: Session) -> tuple[Domain, Domain]:
    """Two domains of the site; the second has an alias already."""
    mine = domains.create(session, unique("mine") + ".test")
    theirs = domains.create(session, unique("theirs") + ".test")
    domains.update(session, theirs, alias_domain="lists." + theirs.mail_host, rules=ADMIN)
    return mine, theirs


def refused(session: Session, domain: Domain, value: str, rules: AliasRules) -> str:
    """The reason ``value`` is refused; the domain keeps its alias (and description)."""
    before = (domain.alias_domain, domain.description)
    with pytest.raises(InvalidInput) as err:
        domains.update(session, domain, description="changed", alias_domain=value, rules=rules)
    assert err.value.field == "alias_domain"
    assert (domain.alias_domain, domain.description) == before
    return err.value.problem


def test_a_domain_owner_may_not_set_an_alias_outside_the_allow_list(txn_session: Session):
    mine, _theirs = two_tenants(txn_session)
    owner = AliasRules(site_admin=False)
    for value in ("gmail.com", "lists." + mine.mail_host):
        assert "only the site administrator" in refused(txn_session, mine, value, owner)
    allowed = AliasRules(site_admin=False, owner_aliases=frozenset({"lists." + mine.mail_host}))
    assert "only the site administrator" in refused(txn_session, mine, "gmail.com", allowed)
    domains.update(txn_session, mine, alias_domain="Lists." + mine.mail_host, rules=allowed)
    assert mine.alias_domain == "lists." + mine.mail_host
    # the value it has is no change; clearing is the domain's own business
    domains.update(txn_session, mine, alias_domain=mine.alias_domain, rules=owner)
    domains.update(txn_session, mine, alias_domain="", rules=owner)
    assert mine.alias_domain is None


@pytest.mark.parametrize("who", ["site admin", "allowed owner"])
def test_nobody_takes_another_tenants_domain_a_public_suffix_or_the_sites_own(
    txn_session: Session, who: str
):
    mine, theirs = two_tenants(txn_session)
    site_own = frozenset({"mail.site.test", "site.test"})
    bad = {
        theirs.mail_host: "already a domain or an alias",
        theirs.alias_domain or "": "already a domain or an alias",
        "com": "public suffix",
        "co.uk": "public suffix",
        "github.io": "public suffix",
        "localhost": "public suffix",
        "mail.site.test": "site's own mail domains",
        "site.test": "site's own mail domains",
        mine.mail_host: "the domain itself",
        "not a domain": "not a valid domain name",
    }
    rules = AliasRules(
        site_admin=who == "site admin",
        owner_aliases=frozenset(bad) if who == "allowed owner" else frozenset(),
        site_domains=site_own,
    )
    for value, why in bad.items():
        assert why in refused(txn_session, mine, value, rules), value


def test_the_rules_of_the_settings(tmp_path: Path):
    settings = config.load(
        environ={
            "MTAPLUGIN_SITE_SITE_OWNER": "postmaster@Host.Example",
            "MTAPLUGIN_DOMAINS_OWNER_ALIASES": "lists.a.test, LISTS.b.test",
            "MTAPLUGIN_DOMAINS_SITE_MAIL_DOMAINS": "mx.example",
        }
    )
    rules = AliasRules.of(settings, site_admin=False)
    assert rules.owner_aliases == {"lists.a.test", "lists.b.test"}
    assert rules.site_domains == {"mx.example", "host.example"}
    assert not rules.site_admin and AliasRules.of(settings, site_admin=True).site_admin


def test_a_new_domain_may_not_be_another_domains_alias(txn_session: Session):
    _mine, theirs = two_tenants(txn_session)
    with pytest.raises(InvalidInput) as err:
        domains.create(txn_session, theirs.alias_domain or "")
    assert err.value.field == "mail_host" and "already a domain or an alias" in err.value.problem


@pytest.mark.skipif(shutil.which("postmap") is None, reason="needs Postfix's postconf/postmap")
def test_the_domains_postfix_delivers_or_relays_are_the_sites_own(
    txn_session: Session, tmp_path: Path
):
    """mydestination (literal, with $myhostname expanded), a virtual_alias_domains table
    (asked with postmap -q) and relay_domains, read from a real Postfix configuration."""
    (tmp_path / "vdomains").write_text("hosted.test anything\n")
    (tmp_path / "main.cf").write_text(
        "compatibility_level = 3.6\n"
        "myhostname = mx.box.test\n"
        "mydestination = $myhostname, localhost.box.test\n"
        f"virtual_alias_domains = hash:{tmp_path}/vdomains\n"
        "virtual_mailbox_domains = mailboxes.test\n"
        "relay_domains = backup.test\n"
    )
    subprocess.run(
        ["postmap", "-c", str(tmp_path), f"hash:{tmp_path}/vdomains"], check=True, timeout=30
    )
    assert postfix_handles(tmp_path, "mx.box.test") == "mydestination"
    assert postfix_handles(tmp_path, "localhost.box.test") == "mydestination"
    assert postfix_handles(tmp_path, "hosted.test") == "virtual_alias_domains"
    assert postfix_handles(tmp_path, "mailboxes.test") == "virtual_mailbox_domains"
    assert postfix_handles(tmp_path, "backup.test") == "relay_domains"
    assert postfix_handles(tmp_path, "lists.elsewhere.test") is None
    assert postfix_handles(tmp_path / "missing", "mx.box.test") is None
    # mtaplugin's own tables (its socketmap, its tables directory) are not asked
    assert postfix_handles(tmp_path, "hosted.test", (f"{tmp_path}/vdomains",)) is None
    mine, _theirs = two_tenants(txn_session)
    rules = AliasRules(site_admin=True, postfix=tmp_path)
    why = refused(txn_session, mine, "hosted.test", rules)
    assert "virtual_alias_domains" in why
    domains.update(txn_session, mine, alias_domain="lists.elsewhere.test", rules=rules)
    assert mine.alias_domain == "lists.elsewhere.test"


# --- the web domain page --------------------------------------------------------------------
def test_the_web_domain_page_sets_the_alias_as_the_rules_say(
    module_sessions: sessionmaker[Session], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The site admin sets an alias domain (not another tenant's); a domain owner only one
    of [domains] owner_aliases; the refusal names alias_domain and nothing changes."""
    monkeypatch.setattr(passwords, "PASSWORDS", CHEAP_PASSWORDS)
    site = webclient.make_site(module_sessions, tmp_path / "var")
    other = unique("other") + ".test"
    allowed = "lists." + site.host
    with site.sessions.begin() as s:
        domains.update(s, domains.create(s, other), alias_domain="lists." + other, rules=ADMIN)
        boss = users.add_user(s, f"boss@{site.host}", webclient.PASSWORD)
        mine = domains.get(s, site.host)
        mine.owners.append(boss)
        users.add_user(s, "root@site.test", webclient.PASSWORD, site_admin=True)
    settings = config.load(
        environ={
            "MTAPLUGIN_SITE_SECRET_KEY": webclient.SECRET,
            "MTAPLUGIN_SITE_VAR_DIR": str(tmp_path / "var"),
            "MTAPLUGIN_DOMAINS_OWNER_ALIASES": f"{allowed}, lists.{other}",
        }
    )
    site = dataclasses.replace(site, app=create_web_app(settings, module_sessions))

    def alias_of(host: str) -> str | None:
        with site.sessions() as s:
            return domains.get(s, host).alias_domain

    owner = site.client()
    owner.login(f"boss@{site.host}")
    page = owner.get(f"/domains/{site.host}")
    assert 'name="alias_domain"' in page.text and allowed in page.text
    for bad, why in (("gmail.com", "only the site administrator"), (f"lists.{other}", "already")):
        answer = owner.post(f"/domains/{site.host}", {"op": "alias", "alias_domain": bad})
        assert answer.status_code == 400 and "alias_domain:" in answer.text and why in answer.text
        assert alias_of(site.host) is None
    done = owner.post(f"/domains/{site.host}", {"op": "alias", "alias_domain": allowed})
    assert done.status_code == 200 and alias_of(site.host) == allowed
    admin = site.client()
    admin.login("root@site.test")
    for bad in (other, "co.uk"):
        answer = admin.post(f"/domains/{site.host}", {"op": "alias", "alias_domain": bad})
        assert answer.status_code == 400 and "alias_domain:" in answer.text
    assert alias_of(site.host) == allowed
    admin.post(f"/domains/{site.host}", {"op": "alias", "alias_domain": "lists.example.org"})
    assert alias_of(site.host) == "lists.example.org"
    with site.sessions() as s:
        audit = s.scalars(select(AuditEntry).where(AuditEntry.action == "domain.alias")).all()
        assert [e.detail["alias_domain"] for e in audit][-2:] == [allowed, "lists.example.org"]
