"""A list's roster sources: their settings, checked one by one (a bad value is refused
naming its field, and nothing is stored), and what may be shown of them (never the bind
password: only whether one is set)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.orm import Session

from mtaplugin.clock import Clock, system_clock
from mtaplugin.enums import MemberRole
from mtaplugin.errors import InvalidInput, NotFound
from mtaplugin.i18n import _
from mtaplugin.model import MailingList, RosterSource
from mtaplugin.model.roster import RosterKind
from mtaplugin.roster_sources.directory import DirectoryAnswer, DirectoryError, scrub

TEXT_FIELDS = (
    "url",
    "bind_dn",
    "base_dn",
    "ldap_filter",
    "group_dn",
    "member_attribute",
    "mail_attribute",
    "name_attribute",
    "query",
)
#: field -> (least, most)
INT_FIELDS: Mapping[str, tuple[int, int]] = {
    "timeout": (1, 600),
    "interval": (0, 30 * 86400),
    "max_removals": (0, 1_000_000),
    "max_removal_percent": (0, 100),
}
#: the least scheduler interval (seconds) other than 0 (on demand only)
MIN_INTERVAL = 60
WRITABLE = frozenset({"kind", "bind_password", "enabled", *TEXT_FIELDS, *INT_FIELDS})


def for_list(session: Session, mlist: MailingList) -> list[RosterSource]:
    return list(
        session.scalars(
            select(RosterSource)
            .where(RosterSource.mailing_list_id == mlist.id)
            .order_by(RosterSource.role)
        )
    )


def find(session: Session, mlist: MailingList, role: MemberRole) -> RosterSource | None:
    return session.scalar(
        select(RosterSource).where(
            RosterSource.mailing_list_id == mlist.id, RosterSource.role == role
        )
    )


def get(session: Session, mlist: MailingList, role: MemberRole) -> RosterSource:
    source = find(session, mlist, role)
    if source is None:
        raise NotFound(
            "role",
            _("{list} has no roster source for its {role}s").format(
                list=mlist.fqdn_listname, role=role.value
            ),
        )
    return source


def remove(session: Session, mlist: MailingList, role: MemberRole) -> None:
    """Forget the source; the members it added stay, as if added by hand."""
    session.delete(get(session, mlist, role))
    session.flush()


def _parse(values: Mapping[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(values) - WRITABLE)
    if unknown:
        raise InvalidInput(
            unknown[0], _("unknown roster source setting {name!r}").format(name=unknown[0])
        )
    parsed: dict[str, Any] = {}
    for key, value in values.items():
        if key == "kind":
            try:
                parsed[key] = RosterKind(str(value).strip().lower())
            except ValueError:
                raise InvalidInput(
                    key, _("unknown source kind {value!r}; choose ldap or sql").format(value=value)
                ) from None
        elif key == "enabled":
            if isinstance(value, bool):
                parsed[key] = value
            elif str(value).strip().lower() in {"true", "yes", "1", "on"}:
                parsed[key] = True
            elif str(value).strip().lower() in {"false", "no", "0", "off"}:
                parsed[key] = False
            else:
                raise InvalidInput(key, _("not a yes/no value: {value!r}").format(value=value))
        elif key in INT_FIELDS:
            least, most = INT_FIELDS[key]
            try:
                number = int(str(value).strip())
            except ValueError:
                raise InvalidInput(key, _("not a number: {value!r}").format(value=value)) from None
            if not least <= number <= most:
                raise InvalidInput(
                    key,
                    _("{value} is out of range ({least} to {most})").format(
                        value=number, least=least, most=most
                    ),
                )
            if key == "interval" and 0 < number < MIN_INTERVAL:
                raise InvalidInput(
                    key,
                    _("sync at most once a minute ({least} seconds), or 0 for on demand only")
                    .format(least=MIN_INTERVAL),
                )  # fmt: skip
            parsed[key] = number
        else:
            parsed[key] = str(value).strip() if key != "bind_password" else str(value)
    return parsed


def _check(state: dict[str, Any]) -> None:
    """The combination must make a source that can be asked."""
    url = state["url"]
    if not url:
        raise InvalidInput("url", _("a roster source needs a url"))
    if state["kind"] is RosterKind.ldap:
        if not url.lower().startswith(("ldap://", "ldaps://")):
            raise InvalidInput("url", _("an LDAP url starts with ldap:// or ldaps://"))
        if not state["group_dn"] and not state["base_dn"]:
            raise InvalidInput("base_dn", _("an LDAP source needs a base_dn or a group_dn"))
        text = state["ldap_filter"]
        if text and not _balanced(text):
            raise InvalidInput("ldap_filter", _("not an LDAP filter: {value!r}").format(value=text))
        if not state["mail_attribute"]:
            raise InvalidInput("mail_attribute", _("an LDAP source needs a mail_attribute"))
        if state["group_dn"] and not state["member_attribute"]:
            raise InvalidInput("member_attribute", _("a group needs its member_attribute"))
    else:
        try:
            make_url(url)
        except (ArgumentError, ValueError):
            # (the value is not repeated: it may hold a password)
            raise InvalidInput(
                "url", _("not a database URL (dialect+driver://user@host/database)")
            ) from None
        query = state["query"]
        if not query:
            raise InvalidInput("query", _("an SQL source needs a query"))
        if query.split(None, 1)[0].lower() not in {"select", "with"}:
            raise InvalidInput("query", _("the query must be one SELECT"))


def _balanced(text: str) -> bool:
    if not (text.startswith("(") and text.endswith(")")):
        return False
    depth = 0
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth < 0:
            return False
    return depth == 0


def _lift_password(state: dict[str, Any]) -> None:
    """A password written into an SQL URL is kept apart, as the bind password, so that the
    URL can be shown."""
    if state["kind"] is not RosterKind.sql:
        return
    url = make_url(state["url"])
    if url.password:
        state["bind_password"] = str(url.password)
        bare = URL.create(
            url.drivername, url.username, None, url.host, url.port, url.database, url.query
        )
        state["url"] = bare.render_as_string(hide_password=False)


def save(
    session: Session,
    mlist: MailingList,
    role: MemberRole,
    values: Mapping[str, Any],
    *,
    clock: Clock = system_clock,
) -> RosterSource:
    """Create the list's source for ``role`` or change it; a bad value raises
    :class:`InvalidInput` naming its field, and nothing is stored."""
    parsed = _parse(values)
    source = find(session, mlist, role)
    if source is None and "kind" not in parsed:
        raise InvalidInput("kind", _("a new roster source needs its kind (ldap or sql)"))
    state: dict[str, Any] = {name: "" for name in TEXT_FIELDS}
    state.update(
        kind=None, bind_password="", enabled=True, member_attribute="member",
        mail_attribute="mail", timeout=30, interval=3600, max_removals=10,
        max_removal_percent=10,
    )  # fmt: skip
    if source is not None:
        state.update({name: getattr(source, name) for name in state})
    state.update(parsed)
    _check(state)
    _lift_password(state)
    if source is None:
        source = RosterSource(mailing_list_id=mlist.id, role=role, created_at=clock())
        session.add(source)
    for name, value in state.items():
        setattr(source, name, value)
    session.flush()
    return source


def view(source: RosterSource) -> dict[str, Any]:
    """What REST, the web and the CLI show: every setting but the bind password."""
    body: dict[str, Any] = {
        "role": source.role.value,
        "kind": source.kind.value,
        **{name: getattr(source, name) for name in TEXT_FIELDS},
        **{name: getattr(source, name) for name in INT_FIELDS},
        "enabled": source.enabled,
        "bind_password_set": bool(source.bind_password),
        "last_sync_at": source.last_sync_at,
        "last_result": source.last_result,
        "last_message": source.last_message,
        "last_added": source.last_added,
        "last_removed": source.last_removed,
    }
    return body


def read(source: RosterSource) -> DirectoryAnswer:
    """Ask the source's directory for its whole roster (the LDAP or SQL reader, loaded
    when asked); raises :class:`~mtaplugin.roster_sources.directory.DirectoryError`."""
    if source.kind is RosterKind.ldap:
        from mtaplugin.roster_sources import ldap

        reader = ldap.read
    else:
        from mtaplugin.roster_sources import sql

        reader = sql.read
    try:
        return reader(source)
    except DirectoryError as exc:
        raise DirectoryError(scrub(str(exc), source.bind_password)) from None
