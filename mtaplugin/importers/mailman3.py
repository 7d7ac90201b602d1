"""A Mailman 3 site (read by :mod:`mtaplugin.importers.mm3rest`) made here.

A list becomes a :class:`Plan` (pure: its REST ``config`` is read with the REST API's own
parsers, as an ``mtaplugin import json`` document would be) and
:func:`mtaplugin.importers.apply.apply` writes it in one transaction.  Domains, site bans,
template URIs and users with their addresses, verification, preferences and password
hashes are written by :func:`apply_site` and :func:`apply_users`, comparing before they
write, so a second run changes nothing.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, TypeVar

import falcon
from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin import passwords
from mtaplugin.api.resources.config import ATTRIBUTES
from mtaplugin.enums import DeliveryMode, DeliveryStatus, SubscriptionMode
from mtaplugin.errors import InvalidInput, NotFound
from mtaplugin.i18n import _
from mtaplugin.importers.mm3rest import ListData, SiteData, UserData, user_id_of
from mtaplugin.importers.plan import HeldPlan, MemberPlan, Plan
from mtaplugin.manage import bans, domains, members
from mtaplugin.manage.alias_domains import AliasRules
from mtaplugin.model import Address, Template, User
from mtaplugin.model.enums import TemplateScope
from mtaplugin.vocabulary.addresses import normalize_email

_E = TypeVar("_E", bound=StrEnum)

#: list settings Mailman serves that are counters or identity, not settings
_IDENTITY = {
    "list_name",
    "mail_host",
    "list_id",
    "fqdn_listname",
    "created_at",
    "post_id",
    "volume",
    "next_digest_number",
    "last_post_at",
    "digest_last_sent_at",
    "posting_address",
    "request_address",
    "owner_address",
    "bounces_address",
    "join_address",
    "leave_address",
    "no_reply_address",
    "member_count",
    "self_link",
    "usenet_watermark",
}
#: counters carried as they are, so digest volumes and numbers go on
_COUNTERS = ("volume", "next_digest_number", "usenet_watermark")
#: the URI schemes mtaplugin fetches templates from
_URI_SCHEMES = ("http:", "https:", "file:")
_PREFERENCES = (
    "acknowledge_posts",
    "hide_address",
    "preferred_language",
    "receive_list_copy",
    "receive_own_postings",
    "delivery_mode",
    "delivery_status",
)


def _when(value: Any) -> datetime | None:
    """Mailman's naive ISO 8601 time (UTC)."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _enum(kind: type[_E], value: Any) -> _E | None:
    try:
        return kind(str(value)) if value is not None else None
    except ValueError:
        return None


def _bool(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


_MAILMAN_DURATION = re.compile(r"^(\d+)d(\d+(?:\.\d+)?)s$")


def mailman_duration(value: Any) -> Any:
    """Mailman serves a duration with seconds as ``1d43200.0s``; here that is ``1d43200s``
    (whole seconds).  Anything else unchanged."""
    if isinstance(value, str):
        match = _MAILMAN_DURATION.match(value.strip())
        if match:
            return f"{match[1]}d{round(float(match[2]))}s"
    return value


def settings_of(config: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    """The list's columns from Mailman's ``config``, each read with the REST API's parser;
    a setting this side does not have, or refuses, is a note."""
    settings: dict[str, Any] = {}
    for name, value in sorted(config.items()):
        if name in _IDENTITY or name == "http_etag":
            continue
        if name == "moderator_password":
            # a passlib hash (Mailman serves the hash); kept when it can be checked here
            if isinstance(value, str) and value:
                if passwords.PASSWORDS.identify(value) is None:
                    notes.append(_("moderator_password: a hash this side cannot check; not set"))
                else:
                    settings[name] = value
            continue
        if name not in ATTRIBUTES.writable:
            notes.append(
                _("{name} = {value!r}: no such setting here, not carried").format(
                    name=name, value=value
                )
            )
            continue
        try:
            values = list(value) if isinstance(value, list) else [mailman_duration(value)]
            settings.update(ATTRIBUTES.parse({name: values}, complete=False))
        except falcon.HTTPError as e:
            notes.append(
                _("{name} = {value!r} refused here ({why}); the default is kept").format(
                    name=name, value=value, why=e.description
                )
            )
    for name in _COUNTERS:
        if isinstance(config.get(name), int):
            settings[name] = config[name]
    return settings


def _member(member: dict[str, Any], prefs: dict[str, Any], notes: list[str]) -> MemberPlan | None:
    email = str(member.get("email", ""))
    try:
        plan = MemberPlan(
            normalize_email(email, "email"),
            members.parse_role(str(member.get("role", "member"))),
            display_name=str(member.get("display_name") or ""),
        )
    except InvalidInput as e:
        notes.append(_("member {email!r} not carried: {why}").format(email=email, why=e.problem))
        return None
    action = member.get("moderation_action")
    if action is not None:
        plan.moderation_action = members.parse_action(str(action))
    plan.delivery_mode = _enum(DeliveryMode, prefs.get("delivery_mode"))
    plan.delivery_status = _enum(DeliveryStatus, prefs.get("delivery_status"))
    language = prefs.get("preferred_language")
    plan.language = str(language) if language else None
    for flag in ("acknowledge_posts", "receive_own_postings", "hide_address", "receive_list_copy"):
        setattr(plan, flag, _bool(prefs.get(flag)))
    plan.bounce_score = int(member.get("bounce_score") or 0)
    plan.last_bounce_received = _when(member.get("last_bounce_received"))
    plan.subscription_mode = _enum(SubscriptionMode, member.get("subscription_mode"))
    plan.user_id = user_id_of(member.get("user"))
    return plan


def plan(data: ListData) -> Plan:
    """What ``data`` should become here (pure)."""
    result = Plan(normalize_email(data.fqdn_listname, "list"))
    result.settings = settings_of(data.config, result.notes)
    for member, prefs in data.members:
        wanted = _member(member, prefs, result.notes)
        if wanted is not None:
            result.members.append(wanted)
    result.bans = list(data.bans)
    for match in data.header_matches:
        action = match.get("action")
        result.header_matches.append(
            (
                str(match.get("header", "")),
                str(match.get("pattern", "")),
                members.parse_action(str(action)) if action else None,
            )
        )
    for uri in data.uris:
        if _carried_uri(uri, result.notes):
            result.template_uris[str(uri["name"])] = (
                str(uri["uri"]),
                str(uri.get("username") or ""),
                str(uri.get("password") or ""),
            )
    for held in data.held:
        result.held.append(
            HeldPlan(
                str(held.get("message_id") or ""),
                str(held.get("sender") or ""),
                str(held.get("subject") or ""),
                str(held.get("reason") or ""),
                str(held.get("msg") or "").encode("utf-8", "surrogateescape"),
                _when(held.get("hold_date")),
            )
        )
    if data.held:
        result.notes.append(
            _(
                "{n} held post(s) copied: moderate them here after switching, and discard "
                "them in Mailman"
            ).format(n=len(data.held))
        )
    if data.requests:
        result.notes.append(
            _(
                "{n} pending subscription or unsubscription request(s) stay in Mailman: decide "
                "them there before switching"
            ).format(n=data.requests)
        )
    return result


def _carried_uri(uri: dict[str, Any], notes: list[str]) -> bool:
    if str(uri.get("uri", "")).lower().startswith(_URI_SCHEMES):
        return True
    notes.append(
        _("template {name}: {uri} is not an http, https or file URI; not carried").format(
            name=uri.get("name"), uri=uri.get("uri")
        )
    )
    return False


# -- the site: domains, site bans, site and domain templates --------------------------------


def _set_uris(
    session: Session,
    scope: TemplateScope,
    uris: list[dict[str, Any]],
    changes: list[str],
    *,
    domain_id: int | None = None,
    mailing_list_id: int | None = None,
    where: str,
) -> None:
    for entry in uris:
        if not _carried_uri(entry, changes):
            continue
        name = str(entry["name"])
        wanted = (
            str(entry["uri"]),
            str(entry.get("username") or ""),
            str(entry.get("password") or ""),
        )
        set_template_uri(session, scope, name, wanted, changes, where, domain_id, mailing_list_id)


def set_template_uri(
    session: Session,
    scope: TemplateScope,
    name: str,
    wanted: tuple[str, str, str],
    changes: list[str],
    where: str,
    domain_id: int | None = None,
    mailing_list_id: int | None = None,
) -> None:
    """The template ``name`` of that scope fetched from ``wanted`` (uri, user, password)."""
    row = session.scalar(
        select(Template).where(
            Template.scope == scope,
            Template.domain_id.is_(None) if domain_id is None else Template.domain_id == domain_id,
            Template.mailing_list_id.is_(None)
            if mailing_list_id is None
            else Template.mailing_list_id == mailing_list_id,
            Template.name == name,
            Template.language == "",
        )
    )
    if row is None:
        row = Template(scope=scope, domain_id=domain_id, mailing_list_id=mailing_list_id, name=name)
        session.add(row)
    elif (row.uri, row.username, row.password) == wanted and not row.text:
        return
    row.uri, row.username, row.password = wanted
    row.text = ""
    changes.append(
        _("{where}: template {name} from {uri}").format(where=where, name=name, uri=wanted[0])
    )


def apply_site(session: Session, site: SiteData, hosts: set[str] | None = None) -> list[str]:
    """Domains (all, or those in ``hosts``), their owners and templates, site bans and
    site templates; what changed, in words."""
    changes: list[str] = []
    for domain, owners, uris in site.domains:
        host = str(domain["mail_host"]).lower()
        if hosts is not None and host not in hosts:
            continue
        try:
            row = domains.get(session, host)
        except NotFound:
            row = domains.create(session, host)
            changes.append(_("created the domain {host}").format(host=host))
        description = str(domain.get("description") or "")
        alias = str(domain.get("alias_domain") or "")
        if row.description != description or (row.alias_domain or "") != alias:
            # the import is the site admin's (the CLI): any alias the checks allow
            rules = AliasRules.for_site_admin()
            domains.update(session, row, description=description, alias_domain=alias, rules=rules)
            changes.append(_("{host}: description and alias domain set").format(host=host))
        for email in owners:
            if normalize_email(email) not in {a.email for u in row.owners for a in u.addresses}:
                domains.add_owner(session, row, email, by_site_admin=True)
                changes.append(_("{host}: owner {email}").format(host=host, email=email))
        _set_uris(session, TemplateScope.domain, uris, changes, domain_id=row.id, where=host)
    if hosts is None:
        for email in site.bans:
            if bans.find(session, None, email) is None:
                bans.add(session, None, email)
                changes.append(_("banned {address} on every list").format(address=email))
        _set_uris(session, TemplateScope.site, site.uris, changes, where=_("site"))
    session.flush()
    return changes


# -- users and their addresses --------------------------------------------------------------


def _preferences(row: User | Address | Any, prefs: dict[str, Any]) -> bool:
    changed = False
    for key in _PREFERENCES:
        if key not in prefs:
            continue
        value: Any = prefs[key]
        if key == "delivery_mode":
            value = _enum(DeliveryMode, value)
        elif key == "delivery_status":
            value = _enum(DeliveryStatus, value)
        elif key == "preferred_language":
            value = str(value) if value else None
        else:
            value = _bool(value)
        if getattr(row, key) != value:
            setattr(row, key, value)
            changed = True
    return changed


def _same_time(old: datetime | None, new: datetime | None) -> bool:
    if old is None or new is None:
        return old is new
    return old.replace(tzinfo=None) == new.astimezone(UTC).replace(tzinfo=None)


def apply_user(session: Session, data: UserData, notes: list[str]) -> bool:
    """Make one Mailman user here; whether anything changed."""
    user_id = user_id_of(data.user.get("user_id")) or ""
    emails = [normalize_email(str(a["email"])) for a, _p in data.addresses]
    user = session.scalar(select(User).where(User.user_id == user_id))
    if user is None and emails:
        user = session.scalar(
            select(User).join(Address, Address.user_id == User.id).where(Address.email.in_(emails))
        )
    changed = False
    if user is None:
        user = User(user_id=user_id)
        session.add(user)
        changed = True
    password = data.user.get("password")
    # A password set here, or rehashed at a log-in here (argon2), stays: the person has
    # used mtaplugin since; a carried hash follows Mailman's on the next run.
    kept = bool(user.password) and not passwords.needs_update(user.password or "")
    if isinstance(password, str) and password and user.password != password and not kept:
        if passwords.PASSWORDS.identify(password) is None:
            notes.append(
                _("user {email}: a password hash this side cannot check; set a new one").format(
                    email=emails[0] if emails else user_id
                )
            )
        else:
            user.password = password
            changed = True
    wanted: dict[str, Any] = {
        "display_name": str(data.user.get("display_name") or ""),
        "is_server_owner": bool(data.user.get("is_server_owner")),
    }
    for key, value in wanted.items():
        if getattr(user, key) != value:
            setattr(user, key, value)
            changed = True
    created = _when(data.user.get("created_on"))
    if created is not None and not _same_time(user.created_on, created):
        user.created_on = created
        changed = True
    changed |= _preferences(user, data.preferences)
    session.flush()
    for resource, prefs in data.addresses:
        changed |= _address(session, user, resource, prefs, notes)
    if data.preferred_address:
        address = session.scalar(
            select(Address).where(Address.email == normalize_email(data.preferred_address))
        )
        if (
            address is not None
            and address.user_id == user.id
            and user.preferred_address_id != address.id
        ):
            user.preferred_address_id = address.id
            changed = True
    session.flush()
    return changed


def apply_address(
    session: Session, resource: dict[str, Any], prefs: dict[str, Any], notes: list[str]
) -> bool:
    """An address of no user in Mailman (a nonmember who posted, say): its verification
    state and preferences, so that a list import does not take it for verified."""
    return _address(session, None, resource, prefs, notes)


def _address(
    session: Session,
    user: User | None,
    resource: dict[str, Any],
    prefs: dict[str, Any],
    notes: list[str],
) -> bool:
    email = normalize_email(str(resource["email"]))
    address = session.scalar(select(Address).where(Address.email == email))
    changed = False
    if address is None:
        address = Address(email=email, original_email=str(resource.get("original_email") or email))
        session.add(address)
        changed = True
    if user is not None:
        if address.user_id not in (None, user.id):
            notes.append(
                _("{email} belongs to another user here; left with that user").format(email=email)
            )
            return changed
        if address.user_id != user.id:
            address.user_id = user.id
            changed = True
    display_name = str(resource.get("display_name") or "")
    if address.display_name != display_name:
        address.display_name = display_name
        changed = True
    verified = _when(resource.get("verified_on"))
    if not _same_time(address.verified_on, verified):
        address.verified_on = verified
        changed = True
    registered = _when(resource.get("registered_on"))
    if registered is not None and not _same_time(address.registered_on, registered):
        address.registered_on = registered
        changed = True
    changed |= _preferences(address, prefs)
    return changed
