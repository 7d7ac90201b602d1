"""DKIM keys of domains: make, show, remove (shared by the CLI and, later, REST).

A new key signs nothing until DNS publishes it: a signature whose key the receivers cannot
find fails DKIM everywhere, which is worse than no signature.  :func:`check` (``mtaplugin
dkim check`` and the hourly ``dkim-check`` job) activates it once its record is seen;
``keygen --activate`` (``create(activate=True)``) is the admin saying it is published."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin.errors import AlreadyExists, InvalidInput, NotFound
from mtaplugin.i18n import _
from mtaplugin.mailauth import signing
from mtaplugin.mailauth.resolver import Resolver
from mtaplugin.manage import domains
from mtaplugin.model import DkimKey
from mtaplugin.model.dkim import DEFAULT_SIGNED_HEADERS


def default_selector(now: datetime | None = None) -> str:
    """A dated selector, so that a new key can be published beside the old one."""
    return f"mtaplugin{(now or datetime.now(UTC)):%Y%m}"


def check_headers(value: str) -> str:
    names = [h.strip() for h in value.replace(",", ":").split(":") if h.strip()]
    bad = [n for n in names if not n.isascii() or not all(c.isalnum() or c == "-" for c in n)]
    if bad:
        raise InvalidInput("headers", _("not a header field name: {value!r}").format(value=bad[0]))
    if "from" not in {n.lower() for n in names}:
        raise InvalidInput("headers", _("From must be signed (RFC 6376 §5.4)"))
    never = [n for n in names if n.lower() in signing._NEVER_SIGN]
    if never:
        raise InvalidInput("headers", _("{name} must not be signed").format(name=never[0]))
    return ":".join(dict.fromkeys(names))


def create(
    session: Session,
    mail_host: str,
    selector: str | None = None,
    algorithm: str = signing.RSA,
    bits: int = 2048,
    headers: str = DEFAULT_SIGNED_HEADERS,
    replace: bool = False,
    *,
    activate: bool = False,
    now: datetime | None = None,
) -> DkimKey:
    """Make and store a new key for the domain; refuses if it has one unless ``replace``
    (the old key stops signing at once).  The new key signs only once activated: by
    :func:`check`, or here with ``activate`` (the admin says DNS publishes it already)."""
    domain = domains.get(session, mail_host)
    chosen = signing.check_selector(selector or default_selector())
    headers = check_headers(headers)
    pem = signing.generate_private_key(algorithm, bits)
    existing = get(session, domain.mail_host, missing_ok=True)
    if existing is not None:
        if not replace:
            raise AlreadyExists(
                "mail_host",
                _("{host} has a DKIM key already (selector {selector}); use --replace").format(
                    host=domain.mail_host, selector=existing.selector
                ),
            )
        session.delete(existing)
        session.flush()
    key = DkimKey(
        domain_id=domain.id,
        selector=chosen,
        private_key=pem,
        signed_headers=headers,
        activated_at=(now or datetime.now(UTC)) if activate else None,
    )
    session.add(key)
    session.flush()
    return key


def get(session: Session, mail_host: str, missing_ok: bool = False) -> DkimKey | None:
    domain = domains.get(session, mail_host)
    key = session.scalar(select(DkimKey).where(DkimKey.domain_id == domain.id))
    if key is None and not missing_ok:
        raise NotFound("mail_host", _("{host} has no DKIM key").format(host=domain.mail_host))
    return key


def remove(session: Session, mail_host: str) -> None:
    key = get(session, mail_host)
    session.delete(key)
    session.flush()


def published(resolver: Resolver, key: DkimKey) -> tuple[bool, str]:
    """Whether DNS serves this key's public half at its selector: (ok, what was found).

    Raises :class:`~mtaplugin.errors.TryLater` when DNS cannot answer."""
    name = f"{key.selector}._domainkey.{key.domain.mail_host}"
    records = resolver.txt(name)
    if not records:
        return False, _("no TXT record at {name}").format(name=name)
    wanted = signing.public_key_b64(key.private_key)
    for record in records:
        tags = dict(
            (k.strip().lower(), "".join(v.split()))
            for k, _eq, v in (part.partition("=") for part in record.split(";"))
            if _eq
        )
        if tags.get("p") == wanted:
            return True, _("{name} publishes this key").format(name=name)
    return False, _("{name} publishes another key: {record}").format(
        name=name, record=records[0][:80]
    )


def check(resolver: Resolver, key: DkimKey, now: datetime) -> tuple[bool, str]:
    """:func:`published`, and a waiting key that DNS publishes is activated (it signs from
    now on).  An active key is never deactivated here: a record that went missing is
    reported, and the admin decides.  Raises :class:`~mtaplugin.errors.TryLater` when DNS
    cannot answer."""
    ok, found = published(resolver, key)
    if ok and key.activated_at is None:
        key.activated_at = now
    return ok, found


def waiting(session: Session) -> list[DkimKey]:
    """The keys that do not sign yet: DNS has not been seen publishing them."""
    return list(
        session.scalars(select(DkimKey).where(DkimKey.activated_at.is_(None)).order_by(DkimKey.id))
    )
