"""Notice texts: Jinja2 templates with Mailman's names, overridable and translated.

A notice is found by its Mailman template name (``list:user:notice:welcome``,
``list:admin:action:post``, ...; :data:`NAMES`).  The text comes from, in order:

1. a :class:`~mtaplugin.model.Template` row of the list, then of its domain, then of the
   site (the web UI's template editor, the ``uris`` resources of REST), in the wanted
   language first and then for any language (``language = ''``): its text, or what its
   URI gives (:mod:`mtaplugin.notices.sources`: fetched http(s) text, a ``mailman:``
   URI naming a shipped template, a file);
2. the built-in template ``mtaplugin/notices/templates/<name>.txt``.

Templates are Jinja2, rendered in a sandbox with a budget of loop steps, CPU time and
characters (list owners may write them: :mod:`mtaplugin.notices.sandbox`).  A template
stored with Mailman's ``$variable`` syntax and no ``{{`` is filled in the Mailman way
(:class:`string.Template`), so texts copied from a Mailman site keep working.

The built-in templates are translated through the same Babel catalogs as the code: their
``{% trans %}`` blocks are extracted with Babel's Jinja2 extractor and rendered with the
catalog of the notice's language.  Every render gets the list's variables (Mailman's
names: ``listname``, ``display_name``, ``list_id``, ``request_email``, ``owner_email``,
...; see :func:`list_variables`) plus those of the notice.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import string
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from functools import cache
from typing import Any
from urllib.parse import urlsplit

import jinja2
from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from mtaplugin.enums import TemplateScope
from mtaplugin.i18n import normalize_language, translation, using
from mtaplugin.model import Domain, MailingList, Template
from mtaplugin.notices.sandbox import NoticeSandbox
from mtaplugin.notices.sources import TEMPLATE_DIR, Builtin, resolve, uri_variables
from mtaplugin.notices.wrap import wordwrap

#: the template names mtaplugin uses (Mailman's, plus ``list:user:notice:results`` and
#: ``list:user:notice:help`` for the email command replies, which Mailman builds in code)
log = logging.getLogger(__name__)

NAMES = tuple(sorted(p.name.removesuffix(".txt") for p in TEMPLATE_DIR.glob("*.txt")))


@cache
def environment(language: str) -> NoticeSandbox:
    env = NoticeSandbox(
        loader=jinja2.FileSystemLoader(TEMPLATE_DIR),
        extensions=["jinja2.ext.i18n"],
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=False,
        undefined=jinja2.Undefined,
    )
    env.install_gettext_translations(translation(language), newstyle=True)  # type: ignore[attr-defined]
    # Japanese and Chinese have no spaces to break at: wrap them by display columns.
    env.filters["wordwrap"] = wordwrap
    env.guard_filters()
    return env


def list_variables(mlist: MailingList, listinfo_uri: str = "") -> dict[str, Any]:
    """The variables every notice of ``mlist`` gets, with Mailman's names."""
    return {
        "listname": mlist.fqdn_listname,
        "fqdn_listname": mlist.fqdn_listname,
        "list_name": mlist.list_name,
        "short_listname": mlist.list_name,
        "display_name": mlist.display_name or mlist.list_name,
        "mail_host": mlist.mail_host,
        "domain": mlist.mail_host,
        "list_id": mlist.list_id,
        "description": mlist.description,
        "info": mlist.info,
        "request_email": mlist.request_address,
        "owner_email": mlist.owner_address,
        "join_email": mlist.join_address,
        "leave_email": mlist.leave_address,
        "posting_email": mlist.posting_address,
        "listinfo_uri": listinfo_uri,
    }


def _override(
    session: Session | None, mlist: MailingList | None, name: str, language: str
) -> str | Builtin | None:
    """The text stored for ``name``: list, then domain, then site; exact language first.

    A row whose URI gives nothing now (not fetched yet, a file that cannot be read) is
    passed over for the next one, as Mailman passes over a context whose fetch fails."""
    if session is None:
        return None
    kept = _KEPT.get()
    key = (mlist.id if mlist is not None else None, name, language)
    if kept is not None and key in kept:
        return kept[key]
    found, volatile = _stored(session, mlist, name, language)
    if kept is not None and not volatile:
        kept[key] = found
    return found


def _stored(
    session: Session, mlist: MailingList | None, name: str, language: str
) -> tuple[str | Builtin | None, bool]:
    """What :func:`_override` finds, and whether it may change with no template row
    changed (a ``file:`` URI met on the way: the file is read each time, never kept)."""
    scopes = [Template.scope == TemplateScope.site]
    if mlist is not None:
        scopes.append(
            (Template.scope == TemplateScope.list) & (Template.mailing_list_id == mlist.id)
        )
        domain_id = select(Domain.id).where(Domain.mail_host == mlist.mail_host).scalar_subquery()
        scopes.append((Template.scope == TemplateScope.domain) & (Template.domain_id == domain_id))
    # One indexed query per notice (uq_templates_key leads with scope; the table is small).
    rows = session.scalars(
        select(Template).where(
            Template.name == name, Template.language.in_([language, ""]), or_(*scopes)
        )
    ).all()
    rank = {TemplateScope.list: 0, TemplateScope.domain: 1, TemplateScope.site: 2}
    candidates = [uri_variables(mlist, None, language)]
    if mlist is not None and mlist.preferred_language != language:
        candidates.append(uri_variables(mlist, None, None))
    volatile = False
    for row in sorted(rows, key=lambda r: (rank[r.scope], r.language != language)):
        if not row.text and not row.uri:
            continue
        volatile = volatile or (not row.text and urlsplit(row.uri or "").scheme.lower() == "file")
        found = resolve(session, row, candidates)
        if found is not None:
            return found, volatile
    return None, volatile


def is_mailman_syntax(text: str) -> bool:
    """A stored text in Mailman's ``$variable`` syntax (no Jinja2 at all)."""
    return "{{" not in text and "{%" not in text and "$" in text


def render_text(text: str, language: str, variables: dict[str, Any]) -> str:
    """Render a stored template text (Jinja2, or Mailman's ``$variable`` syntax)."""
    if is_mailman_syntax(text):
        return string.Template(text).safe_substitute(
            {k: "" if v is None else str(v) for k, v in variables.items()}
        )
    return compiled(text, language).render(variables)


@functools.lru_cache(maxsize=256)
def compiled(text: str, language: str) -> jinja2.Template:
    """A stored text compiled once per process (a mass subscription renders the same
    welcome ten thousand times); the sandbox's budget applies to each render."""
    return environment(language).from_string(text)


#: (list id or None, template name, language) -> what :func:`_override` found
Overrides = dict[tuple[int | None, str, str], "str | Builtin | None"]

#: the overrides found, while a caller that renders many notices of one list in one
#: transaction (a mass subscription), or of one list version (a decision: the list
#: snapshot's own), asks for them to be kept with :func:`overrides_kept`
_KEPT: ContextVar[Overrides | None] = ContextVar("mtaplugin_kept_overrides", default=None)


@contextlib.contextmanager
def overrides_kept(kept: Overrides | None = None) -> Iterator[None]:
    """Within: each list's stored template texts are looked up once per name and language
    and kept in ``kept`` (a new dict when None), for a caller that changes no template
    meanwhile.  A decision passes its list snapshot's: a template row changed moves the
    generation of the lists it serves (migration 0007), so the next decision has a new
    snapshot.  A text read from a ``file:`` URI is never kept."""
    token = _KEPT.set({} if kept is None else kept)
    try:
        yield
    finally:
        _KEPT.reset(token)


def notice_values(
    mlist: MailingList | None, listinfo_uri: str, language: str, variables: dict[str, Any]
) -> dict[str, Any]:
    """What a notice of ``mlist`` is rendered with: the list's variables, the notice's
    ``variables``, and ``language``."""
    values = {**(list_variables(mlist, listinfo_uri) if mlist is not None else {}), **variables}
    values.setdefault("language", language)
    return values


def chosen_text(
    session: Session | None, mlist: MailingList | None, name: str, language: str
) -> tuple[str | None, str, str]:
    """What renders notice ``name`` in ``language``: the stored text (None: there is none),
    and the built-in template's name and language (for no text, or one that fails)."""
    text = _override(session, mlist, name, language)
    if isinstance(text, Builtin):
        return None, text.name, text.language or language
    return text, name, language


def builtin(name: str, language: str) -> jinja2.Template:
    """The shipped template ``name`` in ``language``."""
    if name not in NAMES:
        raise KeyError(f"no template named {name!r}")
    return environment(language).get_template(f"{name}.txt")


def render(
    name: str,
    language: str | None,
    *,
    session: Session | None = None,
    mlist: MailingList | None = None,
    listinfo_uri: str = "",
    **variables: Any,
) -> str:
    """The text of notice ``name`` in ``language`` (the stored override, else the built-in)."""
    lang = normalize_language(language)
    values = notice_values(mlist, listinfo_uri, lang, variables)
    text, shipped, shipped_lang = chosen_text(session, mlist, name, lang)
    if text is not None:
        try:
            return render_text(text, lang, values)
        except Exception as exc:  # TemplateError, SecurityError, OverflowError (range) ...
            # A stored text that cannot render (written through REST or an import, or
            # fetched): the notice still goes out, with the built-in text.
            log.warning("template %s of %s: %s; the built-in text is sent", name, mlist, exc)
    return builtin(shipped, shipped_lang).render(values)


def rendered(
    name: str, language: str | None, title: Callable[[], str], **values: Any
) -> tuple[str, str]:
    """The notice ``name`` rendered in ``language`` (:func:`render` with ``values``) and
    its subject, ``title()`` read in that language."""
    with using(language) as lang:
        return render(name, lang, **values), title()
