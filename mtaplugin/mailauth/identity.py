"""Who the post is from, and what backs that.

Membership is decided from the From: address alone.  Whether that address is *authentic*
is a separate question, answered here from signals the receiving MTA already computed:

- the topmost ``Authentication-Results`` headers (above the first ``Received:`` the
  receiving MTA did not add) whose authserv-id is one the site trusts
  (``authentication.trusted_authserv_ids``), read by
  :func:`mtaplugin.mailauth.results.read_trusted` when our own checks are off: a DKIM
  pass whose ``header.d`` is aligned with the From: domain, an SPF pass whose domain is
  aligned with it, or a DMARC pass for it.  Alignment is relaxed (RFC 7489 §3.1,
  :func:`mtaplugin.mailauth.dmarc.aligned`).
- our own checks, when ``authentication.verify_incoming`` runs them
  (:attr:`mtaplugin.mailauth.results.AuthResults.signals`, passed in as ``verified``):
  then no header of the post is read;
- SMTP AUTH: the client logged in (the MTA's ``{auth_authen}`` macro) as the From: address;
  or, when ``authentication.trust_sasl_senders`` says the MTA enforces sender login maps
  (Postfix ``reject_sender_login_mismatch``), the client logged in as anyone **and** the
  From: address is the envelope sender (MAIL FROM).  Postfix's check ties the login to
  the MAIL FROM address only, never to the From: header, so the From: must be that
  address for the login to vouch for it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from mtaplugin.mailauth.results import read_trusted
from mtaplugin.vocabulary import addresses
from mtaplugin.vocabulary.envelope import Envelope, Post


@dataclass(frozen=True)
class AuthenticationPolicy:
    trusted_authserv_ids: frozenset[str] = frozenset()
    trust_sasl_senders: bool = False


@dataclass(frozen=True)
class SenderIdentity:
    address: str
    #: what backs the From: address, e.g. ("dkim:example.org", "spf:example.org")
    signals: tuple[str, ...] = ()

    @property
    def authenticated(self) -> bool:
        return bool(self.signals)


def identify(
    post: Post,
    envelope: Envelope,
    policy: AuthenticationPolicy,
    verified: Iterable[str] | None = None,
) -> SenderIdentity:
    """Who the post is from and what backs it.  ``verified``: signals of our own checks
    (:attr:`mtaplugin.mailauth.results.AuthResults.signals`) when they ran
    (``verify_incoming``): they alone then speak for DKIM/SPF/DMARC, and no header of the
    post is read.  None: the checks did not run, and a trusted verifier's topmost headers
    speak instead."""
    sender = post.from_address
    if not sender:
        return SenderIdentity("")
    from_domain = addresses.split(sender)[1]
    signals: list[str] = list(verified or ())
    if verified is None and policy.trusted_authserv_ids and post.get("Authentication-Results"):
        believed = read_trusted(
            post, from_domain, policy.trusted_authserv_ids, envelope.local_received
        )
        if believed is not None:
            signals.extend(believed.signals)
    user = envelope.auth_user.strip().lower()
    vouched = policy.trust_sasl_senders and _is_envelope_sender(sender, envelope)
    if user and (user == sender or vouched):
        signals.append(f"sasl:{user}")
    return SenderIdentity(sender, tuple(dict.fromkeys(signals)))


def _is_envelope_sender(sender: str, envelope: Envelope) -> bool:
    """The From: address is the MAIL FROM address (the one a sender login map checks)."""
    mail_from = envelope.mail_from.strip().strip("<>").strip().lower()
    return bool(mail_from) and mail_from == sender
