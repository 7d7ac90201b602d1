"""Where a stored template's text comes from (a :class:`~mtaplugin.model.Template` row).

A row holds either its own ``text`` (written in the web UI, or imported) or a ``uri``
(REST ``uris``, which Postorius writes):

- ``http:``/``https:``: the text the ``template-fetch`` job last fetched
  (:class:`~mtaplugin.model.TemplateFetch`); nothing is fetched here, so rendering a notice
  or decorating a post never waits for a web server.  Not fetched yet, or never with
  success: the row gives nothing and the next one (domain, site, built-in) is used, as
  Mailman does when a fetch fails.
- ``mailman:``: one of the shipped templates (Mailman's ``mailman:///$listname/$language/
  list:member:regular:footer.txt``): :class:`Builtin`.
- ``file:``: the file's text (site administrators only; REST refuses it to others).

URIs are first filled in with Mailman's variables (:func:`uri_variables`).
"""

from __future__ import annotations

import logging
import string
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from sqlalchemy import select
from sqlalchemy.orm import Session

from mtaplugin.i18n import available_languages
from mtaplugin.model import MailingList, Template, TemplateFetch

log = logging.getLogger(__name__)

TEMPLATE_DIR = Path(__file__).parent / "templates"
BUILTIN_NAMES = frozenset(p.name.removesuffix(".txt") for p in TEMPLATE_DIR.glob("*.txt"))

#: Mailman's file names that are not a template's own name
ALIASES = {
    "list:member:generic:footer": "list:member:regular:footer",
    "list:member:generic:header": "list:member:regular:header",
}


#: URI variables for checking a URI before it is saved
SAMPLE_URI_VARIABLES = {
    "list_id": "list.example.org",
    "listname": "list@example.org",
    "domain_name": "example.org",
    "language": "en",
}


@dataclass(frozen=True)
class Builtin:
    """A shipped template, named by a ``mailman:`` URI; ``language`` None: the notice's."""

    name: str
    language: str | None = None


def uri_variables(
    mlist: MailingList | None, mail_host: str | None, language: str | None
) -> dict[str, str]:
    """What Mailman fills into a template URI: ``$list_id``, ``$listname`` (the posting
    address), ``$domain_name``, ``$language`` for a list; ``$domain_name`` for a domain."""
    found: dict[str, str] = {}
    if mlist is not None:
        found.update(
            list_id=mlist.list_id,
            listname=mlist.fqdn_listname,
            domain_name=mlist.mail_host,
            language=language or mlist.preferred_language,
        )
    elif mail_host is not None:
        found["domain_name"] = mail_host
    return found


def expand(uri: str, variables: dict[str, str]) -> str:
    return string.Template(uri).safe_substitute(variables) if "$" in uri else uri


def is_jinja(text: str) -> bool:
    """Whether a text is Jinja2 (else Mailman's $variables)."""
    return "{{" in text or "{%" in text


def is_http(uri: str) -> bool:
    return urlsplit(uri).scheme.lower() in ("http", "https")


def parse_mailman(uri: str) -> Builtin | None:
    """The shipped template a ``mailman:`` URI names (None: none).

    Like Mailman: one to three path parts, ``[list/][language/]file``; a two-part path's
    first part is a language when it is one, else a list (fqdn or list-id).  The list part
    only chose, in Mailman, the list's template directory on disk: mtaplugin keeps list
    templates in the database, so here it only means "the list's language"."""
    split = urlsplit(uri)
    parts = [unquote(p) for p in (split.netloc + "/" + split.path).split("/") if p]
    if not 1 <= len(parts) <= 3:
        return None
    name = parts[-1].removesuffix(".txt")
    name = ALIASES.get(name, name)
    if name not in BUILTIN_NAMES:
        return None
    language: str | None = None
    if len(parts) == 3:
        language = parts[1]
    elif len(parts) == 2 and parts[0] in available_languages():
        language = parts[0]
    if language is not None and language not in available_languages():
        return None
    return Builtin(name, language)


def fetched_text(session: Session, uri: str) -> str | None:
    """The text last fetched from ``uri`` (None: never fetched with success)."""
    row = session.execute(
        select(TemplateFetch.text, TemplateFetch.fetched_at).where(TemplateFetch.uri == uri)
    ).first()
    if row is None or row.fetched_at is None:
        return None
    return str(row.text)


def resolve(
    session: Session, row: Template, candidates: list[dict[str, str]]
) -> str | Builtin | None:
    """The text of ``row`` (a :class:`Builtin` for ``mailman:``; None: nothing now).

    ``candidates``: the URI variables to try, in order (the notice's language, then the
    list's)."""
    if row.text or not row.uri:
        return row.text
    scheme = urlsplit(row.uri).scheme.lower()
    for variables in candidates or [{}]:
        uri = expand(row.uri, variables)
        if scheme in ("http", "https"):
            text = fetched_text(session, uri)
        elif scheme == "mailman":
            return parse_mailman(uri)
        elif scheme == "file":
            try:
                text = Path(unquote(urlsplit(uri).path)).read_text(encoding="utf-8")
            except OSError as exc:
                log.warning("template %s: cannot read %s: %s", row.name, uri, exc)
                text = None
        else:
            return None
        if text is not None:
            return text
    return None
