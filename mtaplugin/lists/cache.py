"""Per-process snapshots of the lists that receive posts, loaded from SQL.

Reading a list's settings, roles and roster from SQL for every post would cost more than
Postfix spends on the whole message, so each SMTP front-end process keeps a
:class:`~mtaplugin.posting.snapshot.ListSnapshot` per list and reuses it while the list's
``generation`` has not moved.  Database triggers (migration 0002) move the generation on
every change that matters, by any writer, so a snapshot is never stale: the RCPT lookup
that every post needs anyway reads the generation too.
"""

from __future__ import annotations

import threading
from types import MappingProxyType

from sqlalchemy import String, or_, select, type_coerce
from sqlalchemy.orm import Session

from mtaplugin.enums import Action, MemberRole, TemplateScope
from mtaplugin.lists import roster
from mtaplugin.lists.settings import plain
from mtaplugin.model import Address, Ban, Domain, HeaderMatch, MailingList, Member, Template
from mtaplugin.notices.sources import Builtin, resolve, uri_variables
from mtaplugin.posting.atlists import referenced
from mtaplugin.posting.snapshot import ListSnapshot
from mtaplugin.regexes import usable
from mtaplugin.vocabulary.bans import BanList
from mtaplugin.vocabulary.context import Templates
from mtaplugin.vocabulary.snapshot import HeaderRule, Roles
from mtaplugin.vocabulary.topics import compile_topics


def load(session: Session, pk: int) -> ListSnapshot:
    # The list row (with its generation) first: under READ COMMITTED each statement sees
    # its own snapshot, so the roster read after it is at least as new as the generation
    # it is filed under.  A newer roster only causes an early reload, never a stale one.
    mlist = session.scalars(
        select(MailingList).where(MailingList.id == pk).execution_options(populate_existing=True)
    ).one()
    session.expunge(mlist)
    return build(session, mlist)


def build(session: Session, mlist: MailingList) -> ListSnapshot:
    """The snapshot of ``mlist`` as it is now (a released hold reads it too; ``mlist`` is
    left as it is, in its session or not).  The snapshot carries the row's values, copied
    (:mod:`mtaplugin.lists.settings`), not the row."""
    pk = mlist.id
    roles, staff = _roles(session, pk)
    bans = BanList.of(
        session.scalars(
            select(Ban.email).where(or_(Ban.mailing_list_id == pk, Ban.mailing_list_id.is_(None)))
        ),
        f"the bans of list {mlist.list_id}",
    )
    rules: list[HeaderRule] = []
    for hm in session.scalars(
        select(HeaderMatch).where(HeaderMatch.mailing_list_id == pk).order_by(HeaderMatch.position)
    ):
        compiled = usable(hm.pattern, f"the header matches of list {mlist.list_id}")
        if compiled is not None:
            rules.append(
                HeaderRule(hm.header.lower(), compiled, hm.action, f"{hm.header}: {hm.pattern}")
            )
    domain = session.execute(
        select(Domain.id, Domain.base_url).where(Domain.mail_host == mlist.mail_host)
    ).one()
    base_url = domain.base_url
    topics = (
        compile_topics(mlist.topics or [], f"the topics of list {mlist.list_id}")
        if mlist.topics_enabled
        else ()
    )
    regular = tuple(roster.regular_recipients(session, pk))
    return ListSnapshot(
        pk=pk,
        generation=mlist.generation,
        mlist=plain(mlist),
        roles=MappingProxyType(roles),
        regular=regular,
        staff=tuple(staff),
        bans=bans,
        header_matches=tuple(rules),
        listinfo_url=f"{base_url.rstrip('/')}/lists/{mlist.list_id}/" if base_url else "",
        templates=load_templates(session, mlist, domain.id),
        topics=topics,
        topic_choices=MappingProxyType(roster.topic_choices(session, pk) if topics else {}),
        acknowledge=frozenset(roster.acknowledged(session, pk)),
        no_list_copy=frozenset(r.email for r in regular if not r.receive_list_copy),
        digest_members=roster.count_digest_recipients(session, pk),
        at_lists=referenced(mlist),
    )


_ROLE = {r.value: r for r in MemberRole}
_ACTION = {a.value: a for a in Action}


def _roles(session: Session, pk: int) -> tuple[dict[str, Roles], list[str]]:
    """Each address's roles on list ``pk`` (each with its moderation action), and the
    list's owners and moderators, sorted.

    A big list's roster is read on the first post: the enum columns come as plain text
    (looked up here, not converted row by row), and the members whose roles are the same
    (most of them: a member, with the list's default action) share one mapping."""
    # On the session's connection (Core): plain rows, without the ORM's loading per row.
    rows = (
        session.connection()
        .execute(
            select(
                Address.email,
                type_coerce(Member.role, String),
                type_coerce(Member.moderation_action, String),
            )
            .join(Address, Address.id == Member.address_id)
            .where(Member.mailing_list_id == pk)
        )
        .all()
    )
    roles: dict[str, Roles] = {}
    shared: dict[tuple[str, str | None], Roles] = {}
    staff = []
    for email, role_name, action_name in rows:
        role = _ROLE[role_name]
        action = _ACTION[action_name] if action_name is not None else None
        if role is MemberRole.owner or role is MemberRole.moderator:
            staff.append(email)
        held = roles.get(email)
        if held is None:
            one = shared.get((role_name, action_name))
            if one is None:
                one = shared[(role_name, action_name)] = MappingProxyType({role: action})
            roles[email] = one
        else:
            roles[email] = MappingProxyType({**held, role: action})
    return roles, sorted(set(staff))


HEADER_TEMPLATE = "list:member:regular:header"
FOOTER_TEMPLATE = "list:member:regular:footer"


def load_templates(session: Session, mlist: MailingList, domain_id: int) -> Templates:
    """The list's decoration templates: the list's own, else its domain's, else the
    site's, in the list's language before the language-neutral one; None (the built-in
    default) when none is set.  A row given by URI gives what
    :func:`~mtaplugin.notices.sources.resolve` finds (the text fetched by the
    ``template-fetch`` job, never fetched here); a ``mailman:`` URI the built-in."""
    rows = session.scalars(
        select(Template).where(
            Template.name.in_((HEADER_TEMPLATE, FOOTER_TEMPLATE)),
            Template.language.in_(("", mlist.preferred_language)),
            or_(
                (Template.scope == TemplateScope.list) & (Template.mailing_list_id == mlist.id),
                (Template.scope == TemplateScope.domain) & (Template.domain_id == domain_id),
                Template.scope == TemplateScope.site,
            ),
        )
    ).all()
    order = {TemplateScope.list: 0, TemplateScope.domain: 1, TemplateScope.site: 2}
    candidates = [uri_variables(mlist, None, None)]

    def best(name: str) -> str | None:
        found = sorted(
            (r for r in rows if r.name == name),
            key=lambda r: (order[r.scope], r.language != mlist.preferred_language),
        )
        for row in found:
            text = resolve(session, row, candidates)
            if isinstance(text, Builtin):
                return None
            if text is not None:
                return text
        return None

    return Templates(header=best(HEADER_TEMPLATE), footer=best(FOOTER_TEMPLATE))


class SnapshotCache:
    def __init__(self) -> None:
        self._by_pk: dict[int, ListSnapshot] = {}
        self._lock = threading.Lock()
        self.loads = 0

    def cached(self, pk: int, generation: int) -> ListSnapshot | None:
        """The cached snapshot of list ``pk`` if it is at ``generation`` or newer."""
        with self._lock:
            snap = self._by_pk.get(pk)
        return snap if snap is not None and snap.generation >= generation else None

    def get(self, session: Session, pk: int, generation: int) -> ListSnapshot:
        """The snapshot of list ``pk`` at ``generation`` (or newer), loading it if needed."""
        with self._lock:
            snap = self._by_pk.get(pk)
        if snap is not None and snap.generation >= generation:
            return snap
        snap = load(session, pk)
        with self._lock:
            current = self._by_pk.get(pk)
            if current is None or current.generation <= snap.generation:
                self._by_pk[pk] = snap
            self.loads += 1
        return snap

    def clear(self) -> None:
        with self._lock:
            self._by_pk.clear()
