"""DKIM keys of domains: make, show, remove (shared by the CLI and, later, REST).

A new key signs nothing until DNS publishes it: a signature whose key the receivers cannot
find fails DKIM everywhere, which is worse than no signature.  :func:`check` (``mtaplugin
dkim check`` and the hourly ``dkim-check`` job) activates it once its record is seen;
``keygen --activate`` (``create(activate=True)``) is the admin saying it is published."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session, object_session

from mtaplugin.clock import system_clock
from mtaplugin.errors import AlreadyExists, InvalidInput, NotFound
from mtaplugin.i18n import _
from mtaplugin.mailauth import signing
from mtaplugin.mailauth.resolver import Resolver
from mtaplugin.manage import domains
from mtaplugin.model import DkimKey
from mtaplugin.model.dkim import DEFAULT_SIGNED_HEADERS


def session_of(key: DkimKey) -> Session:
    found = object_session(key)
    assert found is not None, "a stored key"
    return found


def default_selector(now: datetime) -> str:
    """A dated selector, so that a new key can be published beside the old one."""
    return f"mtaplugin{now:%Y%m}"


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
    """Make and store a new key for the domain; refuses if it has one of ``algorithm``
    unless ``replace``.  A key of the other algorithm stays: the domain then signs with
    both (RSA and Ed25519 side by side, RFC 8463; only the RSA key ARC-seals).

    The new key signs only once activated: by :func:`check` (DNS publishes it), or here
    with ``activate`` (the admin says DNS publishes it already).  A replaced key that signs
    goes on signing until then (a rollover: its selector stays published meanwhile); a
    replaced key that was still waiting is dropped.  ``now`` is the caller's clock (the
    machine's time when left out)."""
    now = now or system_clock()
    domain = domains.get(session, mail_host)
    # A domain signs with one key per algorithm: a key of the other algorithm is left
    # alone (an Ed25519 key signs beside the RSA one, RFC 8463).
    existing = [k for k in keys(session, domain.mail_host) if algorithm_of(k) == algorithm]
    if existing and not replace:
        raise AlreadyExists(
            "mail_host",
            _("{host} has a DKIM key already (selector {selector}); use --replace").format(
                host=domain.mail_host, selector=existing[-1].selector
            ),
        )
    kept = [k for k in existing if k.active and not activate]
    taken = {k.selector for k in kept}
    if selector:
        chosen = signing.check_selector(selector)
        if chosen in taken:
            raise InvalidInput(
                "selector",
                _(
                    "{selector} is the selector of the key that signs now; the new key needs "
                    "a selector of its own, so that both records can be published"
                ).format(selector=chosen),
            )
    else:
        chosen = _free_selector(default_selector(now), taken)
    headers = check_headers(headers)
    pem = signing.generate_private_key(algorithm, bits)
    for old in existing:
        if old not in kept:
            session.delete(old)
    session.flush()
    key = DkimKey(
        domain_id=domain.id,
        selector=chosen,
        private_key=pem,
        signed_headers=headers,
        activated_at=now if activate else None,
        created_at=now,
    )
    session.add(key)
    session.flush()
    return key


def algorithm_of(key: DkimKey) -> str:
    """``rsa`` or ``ed25519``."""
    return signing.key_algorithm(key.private_key)


def _free_selector(base: str, taken: set[str]) -> str:
    chosen, n = base, 1
    while chosen in taken:
        n += 1
        chosen = f"{base}-{n}"
    return chosen


def keys(session: Session, mail_host: str) -> list[DkimKey]:
    """The domain's keys, oldest first: one, or two during a rollover."""
    domain = domains.get(session, mail_host)
    return list(
        session.scalars(select(DkimKey).where(DkimKey.domain_id == domain.id).order_by(DkimKey.id))
    )


def get(session: Session, mail_host: str, missing_ok: bool = False) -> DkimKey | None:
    """The domain's newest key: the replacement waiting for DNS during a rollover."""
    found = keys(session, mail_host)
    if not found and not missing_ok:
        host = domains.get(session, mail_host).mail_host
        raise NotFound("mail_host", _("{host} has no DKIM key").format(host=host))
    return found[-1] if found else None


def signing_key(session: Session, mail_host: str) -> DkimKey | None:
    """The domain's key that signs now, if any."""
    active = [k for k in keys(session, mail_host) if k.active]
    return active[-1] if active else None


def remove(session: Session, mail_host: str) -> None:
    """Remove every key of the domain (its mail is no longer signed)."""
    get(session, mail_host)
    for key in keys(session, mail_host):
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
    now on, and the key it replaces is removed).  An active key is never deactivated here:
    a record that went missing is reported, and the admin decides.  Raises
    :class:`~mtaplugin.errors.TryLater` when DNS cannot answer."""
    ok, found = published(resolver, key)
    if ok and key.activated_at is None:
        key.activated_at = now
        # the rollover is over: the key it replaces (of its algorithm) stops signing
        for other in session_of(key).scalars(
            select(DkimKey).where(DkimKey.domain_id == key.domain_id, DkimKey.id != key.id)
        ):
            if algorithm_of(other) == algorithm_of(key):
                session_of(key).delete(other)
        session_of(key).flush()
    return ok, found


def waiting(session: Session) -> list[DkimKey]:
    """The keys that do not sign yet: DNS has not been seen publishing them."""
    return list(
        session.scalars(select(DkimKey).where(DkimKey.activated_at.is_(None)).order_by(DkimKey.id))
    )
