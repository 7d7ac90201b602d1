"""A domain's alias domain (Mailman's ``alias_domain``): ``list@alias`` is ``list@domain``
at RCPT, in the socketmap lookup and in the Postfix tables, on SQLite and PostgreSQL."""

from __future__ import annotations

from sqlalchemy.orm import Session

from mtaplugin.engine.recipients import resolve
from mtaplugin.lists import roster
from mtaplugin.manage import domains, lists
from mtaplugin.posting.addresses import Subaddress, candidates
from tests.helpers import unique


def aliased(session: Session) -> tuple[str, str, str]:
    host = unique("org") + ".test"
    alias = "lists." + host
    domain = domains.create(session, host)
    domains.update(session, domain, alias_domain=alias)
    name = unique("team")
    lists.create(session, f"{name}@{host}")
    session.flush()
    return host, alias, name


def test_a_list_address_in_the_alias_domain_is_the_list(txn_session: Session) -> None:
    host, alias, name = aliased(txn_session)
    found = roster.lookup_lists(txn_session, candidates(f"{name}@{alias}"))
    assert [f.list_id for f in found] == [f"{name}.{host}"]
    check = resolve(txn_session, f"<{name}-request@{alias}>")
    assert check.list_id == f"{name}.{host}" and check.subaddress is Subaddress.request
    assert check.reply is None
    assert resolve(txn_session, f"{name}@{host}").list_id == f"{name}.{host}"


def test_no_such_list_in_the_alias_domain_is_refused_and_other_domains_pass(
    txn_session: Session,
) -> None:
    _host, alias, _name = aliased(txn_session)
    assert roster.domain_exists(txn_session, alias)
    refused = resolve(txn_session, f"nobody@{alias}")
    assert refused.reply is not None and "5.1.1" in str(refused.reply)
    assert not roster.domain_exists(txn_session, "elsewhere.test")
    assert resolve(txn_session, "someone@elsewhere.test").reply is None
    assert roster.lookup_lists(txn_session, candidates(f"x@sub.{alias}")) == []
