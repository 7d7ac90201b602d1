"""Where the links the web UI mails point: only at addresses the site configured, never at
the request's ``Host:`` (whoever sends ``Host: evil.example`` with a password reset for
someone else would get that person's token mailed as a link to their own server).

- links of no list (password reset, sign-up, one more address, "you already have an
  account"): ``[web] base_url``, which only the site's administrator sets; a domain's
  ``base_url`` is not used, as a domain owner may set it;
- a list's confirmation links: its domain's ``base_url``, else ``[web] base_url``; with
  neither, the confirmation is mailed without a link (the reply to it confirms).

A page that must mail a link and has no address to build it from mails nothing and
stores nothing, and says so (:data:`NO_BASE_URL`).
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin.config import Settings
from mtaplugin.i18n import N_
from mtaplugin.model import Domain, MailingList

#: what a page says when it would have to mail a link and the site has no web address
NO_BASE_URL = N_(
    "This site cannot mail links yet: its administrators have not set its web address "
    "([web] base_url in the configuration)."
)


class NoBaseUrl(Exception):
    """The site has no ``[web] base_url``: no link may be mailed."""


def site_base(settings: Settings) -> str:
    """``[web] base_url`` (without a trailing ``/``); :class:`NoBaseUrl` when unset."""
    if not settings.web.base_url:
        raise NoBaseUrl()
    return settings.web.base_url.rstrip("/")


def list_base(session: Session, settings: Settings, mlist: MailingList) -> str:
    """The list's domain's ``base_url``, else ``[web] base_url``; "" when neither is set."""
    domain_url = session.scalar(select(Domain.base_url).where(Domain.mail_host == mlist.mail_host))
    return (domain_url or settings.web.base_url).rstrip("/")
