"""Reading a roster from an LDAP directory with ldap3.

Two shapes of source:

- a **search**: every entry under ``base_dn`` matching ``ldap_filter`` (subtree), read for
  ``mail_attribute`` (and ``name_attribute``), page by page (RFC 2696 paged results);
- a **group**: the ``member_attribute`` values of the entry ``group_dn`` (``member`` of a
  ``groupOfNames``, ``uniqueMember`` of a ``groupOfUniqueNames``); a value that is an
  address is taken as it is, a DN is read for ``mail_attribute`` (and must match
  ``ldap_filter`` when one is set, e.g. to leave out disabled accounts), and a bare uid
  (``memberUid`` of a ``posixGroup``) is looked up under ``base_dn``.

Any answer that is not complete fails the whole read: a server that is down or slow
(``timeout``), a refused bind, a size or time limit hit (a truncated answer), a referral
we do not follow, a missing base or group.
"""

from __future__ import annotations

import contextlib
from typing import Any

import ldap3
from ldap3.core.exceptions import LDAPException
from ldap3.utils.conv import escape_filter_chars

from mtaplugin.errors import InvalidInput
from mtaplugin.i18n import _
from mtaplugin.model import RosterSource
from mtaplugin.roster_sources.directory import DirectoryAnswer, DirectoryEntry, DirectoryError
from mtaplugin.vocabulary.addresses import normalize_email

PAGE = 500
NO_SUCH_OBJECT = 32
PAGED_RESULTS = "1.2.840.113556.1.4.319"


def read(source: RosterSource) -> DirectoryAnswer:
    try:
        conn = _connect(source)
    except LDAPException as exc:
        raise DirectoryError(
            _("LDAP server {url} cannot be reached: {error}").format(url=source.url, error=exc)
        ) from None
    try:
        if source.group_dn:
            return _group(conn, source)
        return _search(conn, source)
    except LDAPException as exc:
        raise DirectoryError(
            _("LDAP server {url} failed: {error}").format(url=source.url, error=exc)
        ) from None
    finally:
        with contextlib.suppress(LDAPException):
            conn.unbind()


def _connect(source: RosterSource) -> Any:
    server = ldap3.Server(source.url, connect_timeout=source.timeout, get_info=ldap3.NONE)
    conn = ldap3.Connection(
        server,
        user=source.bind_dn or None,
        password=source.bind_password or None,
        receive_timeout=source.timeout,
        read_only=True,
        raise_exceptions=False,
        auto_referrals=False,
    )
    if not conn.bind():
        raise DirectoryError(
            _("LDAP server {url} refused the bind as {who}: {error}").format(
                url=source.url, who=source.bind_dn or _("anonymous"), error=_describe(conn)
            )
        )
    return conn


def _describe(conn: Any) -> str:
    result = conn.result or {}
    text = str(result.get("description", "")) or "?"
    message = str(result.get("message", "")).strip()
    return f"{text} ({message})" if message else text


def _check(conn: Any, what: str) -> None:
    """Fail unless the last operation answered success (a size limit answers
    ``sizeLimitExceeded`` with part of the entries: a truncated answer)."""
    code = (conn.result or {}).get("result", -1)
    if code != 0:
        raise DirectoryError(
            _("LDAP {what} did not answer completely: {error}").format(
                what=what, error=_describe(conn)
            )
        )


def _attributes(source: RosterSource) -> list[str]:
    return [a for a in (source.mail_attribute, source.name_attribute) if a]


def _entry(attrs: dict[str, Any], source: RosterSource) -> DirectoryEntry | None:
    mails = attrs.get(source.mail_attribute) or []
    if isinstance(mails, str | bytes):
        mails = [mails]
    if not mails:
        return None
    name: Any = attrs.get(source.name_attribute, "") if source.name_attribute else ""
    if isinstance(name, list):
        name = name[0] if name else ""
    try:
        return DirectoryEntry(normalize_email(_text(mails[0])), _text(name))
    except InvalidInput:
        return None


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _search(conn: Any, source: RosterSource) -> DirectoryAnswer:
    entries: list[DirectoryEntry] = []
    skipped = 0
    cookie: Any = None
    while True:
        conn.search(
            source.base_dn,
            source.ldap_filter or "(objectClass=*)",
            search_scope=ldap3.SUBTREE,
            attributes=_attributes(source),
            paged_size=PAGE,
            paged_cookie=cookie,
            time_limit=source.timeout,
        )
        _check(conn, _("search under {base}").format(base=source.base_dn))
        for item in conn.response or []:
            if item.get("type") != "searchResEntry":
                continue
            entry = _entry(item.get("attributes", {}), source)
            if entry is None:
                skipped += 1
            else:
                entries.append(entry)
        control = (conn.result.get("controls") or {}).get(PAGED_RESULTS)
        cookie = control["value"]["cookie"] if control else None
        if not cookie:
            return DirectoryAnswer(tuple(entries), skipped)


def _group(conn: Any, source: RosterSource) -> DirectoryAnswer:
    what = _("group {dn}").format(dn=source.group_dn)
    conn.search(
        source.group_dn,
        "(objectClass=*)",
        search_scope=ldap3.BASE,
        attributes=[source.member_attribute],
        time_limit=source.timeout,
    )
    _check(conn, what)
    found = [i for i in conn.response or [] if i.get("type") == "searchResEntry"]
    if not found:
        raise DirectoryError(_("LDAP {what} was not found").format(what=what))
    values = found[0].get("attributes", {}).get(source.member_attribute) or []
    if isinstance(values, str | bytes):
        values = [values]
    entries: list[DirectoryEntry] = []
    skipped = 0
    for raw in values:
        value = _text(raw).strip()
        if "@" in value and "=" not in value:
            try:
                entries.append(DirectoryEntry(normalize_email(value)))
            except InvalidInput:
                skipped += 1
            continue
        if "=" not in value:
            # a posixGroup's memberUid: the entry under base_dn with that uid
            if not source.base_dn:
                raise DirectoryError(
                    _("LDAP {what} lists uids ({attr}): the source needs a base_dn").format(
                        what=what, attr=source.member_attribute
                    )
                )
            uid = escape_filter_chars(value)
            conn.search(
                source.base_dn,
                f"(&{source.ldap_filter or '(objectClass=*)'}(uid={uid}))",
                search_scope=ldap3.SUBTREE,
                attributes=_attributes(source),
                time_limit=source.timeout,
            )
        else:
            conn.search(
                value,
                source.ldap_filter or "(objectClass=*)",
                search_scope=ldap3.BASE,
                attributes=_attributes(source),
                time_limit=source.timeout,
            )
        if (conn.result or {}).get("result") == NO_SUCH_OBJECT:
            skipped += 1  # a member DN that no longer exists
            continue
        _check(conn, _("entry {dn}").format(dn=value))
        items = [i for i in conn.response or [] if i.get("type") == "searchResEntry"]
        entry = _entry(items[0].get("attributes", {}), source) if items else None
        if entry is None:
            skipped += 1
        else:
            entries.append(entry)
    return DirectoryAnswer(tuple(entries), skipped)
