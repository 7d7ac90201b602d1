"""Editing templates in the web UI: where each one comes from, checking a text before it
is saved, and a preview with sample values.

A text is Jinja2 (rendered in the sandbox) when it holds ``{{`` or ``{%``, else Mailman's
``$variable`` syntax (:func:`~mtaplugin.notices.templates.render_text` decides the same
way).  A post's header and footer are always ``$variable`` texts (Mailman's decorate,
:mod:`mtaplugin.copies.transforms.decorate`), so Jinja2 is refused there.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

import jinja2
from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from mtaplugin.enums import TemplateScope
from mtaplugin.i18n import N_
from mtaplugin.model import Domain, MailingList, Template, TemplateFetch
from mtaplugin.notices.sources import TEMPLATE_DIR, expand, is_http, is_jinja, uri_variables
from mtaplugin.notices.templates import NAMES, environment, list_variables, render_text
from mtaplugin.vocabulary.context import DEFAULT_FOOTER, DEFAULT_HEADER

#: the templates that decorate every post: Mailman's $variables only
DECORATION = {
    "list:member:regular:header": DEFAULT_HEADER,
    "list:member:regular:footer": DEFAULT_FOOTER,
}

#: what a ``${`` that is not ``${name}`` looks like
_BAD_BRACE = re.compile(r"\$\{(?![_a-zA-Z][_a-zA-Z0-9]*\})")


class Source(StrEnum):
    builtin = "built-in"
    list = "list"
    domain = "domain"
    site = "site"


#: the sources' names, translated where they are shown
SOURCE_WORDS = (N_("built-in"), N_("list"), N_("domain"), N_("site"))


class InvalidTemplate(ValueError):
    def __init__(self, line: int, problem: str) -> None:
        super().__init__(f"line {line}: {problem}")
        self.line = line
        self.problem = problem


def check(name: str, text: str) -> None:
    """Refuse a text that would not render: :class:`InvalidTemplate` names the line."""
    if is_jinja(text):
        if name in DECORATION:
            line = next(i for i, ln in enumerate(text.splitlines(), 1) if "{{" in ln or "{%" in ln)
            raise InvalidTemplate(
                line, "a post's header and footer use Mailman's $variables, not {{ }} or {% %}"
            )
        try:
            environment("en").parse(text)
        except jinja2.TemplateSyntaxError as exc:
            raise InvalidTemplate(exc.lineno, exc.message or "syntax error") from None
        return
    found = _BAD_BRACE.search(text)
    if found:
        line = text.count("\n", 0, found.start()) + 1
        raise InvalidTemplate(line, "${ must be followed by a variable name and }")


SAMPLE = {
    "user_email": "ann@example.net",
    "user_address": "ann@example.net",
    "user_delivered_to": "ann@example.net",
    "member": "ann@example.net",
    "user_name": "Ann Example",
    "user_name_or_email": "Ann Example",
    "user_language": "en",
    "subject": "Sample subject",
    "sender_email": "ann@example.net",
    "reasons": "Post by non-member to a members-only list",
    "reason": "Post by non-member to a members-only list",
    "token": "0123456789abcdef",
    "confirm_email": "list-confirm+0123456789abcdef@example.org",
    "count": 3,
    "score": 5.0,
    "verify_url": "https://lists.example.org/account/verify/0123456789abcdef",
    "login_url": "https://lists.example.org/login",
    "reset_url": "https://lists.example.org/reset",
    "expires": "2026-12-07 12:00 UTC",
}

#: the notices about accounts, which belong to no list: only the site's text is used
SITE_ONLY = tuple(n for n in NAMES if n.startswith("site:"))


def sample_variables(mlist: MailingList | None, mail_host: str) -> dict[str, Any]:
    """The values a preview is rendered with: the list's own (or a sample list of the
    domain), and sample values for the notice's (a member Ann, a subject ...)."""
    if mlist is None:
        mlist = MailingList(
            list_name="sample",
            mail_host=mail_host,
            display_name="Sample",
            description="A sample list",
            preferred_language="en",
        )
    found = {**list_variables(mlist), **SAMPLE}
    found.update(real_name=found["display_name"], request_address=found["request_email"])
    found["posting_address"] = found["posting_email"]
    return found


def preview(name: str, text: str, language: str, variables: dict[str, Any]) -> str:
    check(name, text)
    if name in DECORATION:
        return string.Template(text).safe_substitute({k: str(v) for k, v in variables.items()})
    return render_text(text, language, variables)


def builtin_text(name: str) -> str:
    """What a template says when nobody changed it (the shipped file)."""
    if name in DECORATION:
        return DECORATION[name]
    return (TEMPLATE_DIR / f"{name}.txt").read_text(encoding="utf-8")


@dataclass(frozen=True)
class Entry:
    """Where template ``name`` comes from for a list or a domain."""

    name: str
    source: Source
    #: the row that gives it (None: the built-in)
    row: Template | None
    #: this page's own row (the list's on a list page, the domain's on a domain page)
    own: Template | None
    #: for an http(s) URI: when it was last fetched, and the last error
    fetched_at: datetime | None = None
    error: str = ""
    #: languages with a template of their own (this page edits the one for all languages)
    languages: tuple[str, ...] = ()

    @property
    def uri(self) -> str:
        return self.row.uri if self.row is not None and not self.row.text else ""


def _own_scope(mlist: MailingList | None, domain: Domain | None) -> TemplateScope:
    if mlist is not None:
        return TemplateScope.list
    return TemplateScope.domain if domain is not None else TemplateScope.site


def entries(session: Session, mlist: MailingList | None, domain: Domain | None) -> list[Entry]:
    """Every template, with its source, for ``mlist`` (or for ``domain`` when None; the
    site's when both are None)."""
    scopes = [Template.scope == TemplateScope.site]
    if domain is not None:
        scopes.append((Template.scope == TemplateScope.domain) & (Template.domain_id == domain.id))
    if mlist is not None:
        scopes.append(
            (Template.scope == TemplateScope.list) & (Template.mailing_list_id == mlist.id)
        )
    every = session.scalars(select(Template).where(or_(*scopes))).all()
    rows = [r for r in every if r.language == ""]
    rank = {TemplateScope.list: 0, TemplateScope.domain: 1, TemplateScope.site: 2}
    own_scope = _own_scope(mlist, domain)
    variables = uri_variables(mlist, domain.mail_host if domain is not None else None, None)
    found = []
    for name in NAMES:
        if name in SITE_ONLY and (mlist is not None or domain is not None):
            continue
        mine = sorted(
            (r for r in rows if r.name == name and (r.text or r.uri)), key=lambda r: rank[r.scope]
        )
        own = next((r for r in mine if r.scope == own_scope), None)
        languages = tuple(sorted({r.language for r in every if r.name == name and r.language}))
        if not mine:
            found.append(Entry(name, Source.builtin, None, None, languages=languages))
            continue
        row = mine[0]
        fetched_at, error = None, ""
        if not row.text and is_http(row.uri):
            fetch = session.scalar(
                select(TemplateFetch).where(TemplateFetch.uri == expand(row.uri, variables))
            )
            if fetch is not None:
                fetched_at, error = fetch.fetched_at, fetch.error
            else:
                error = "not fetched yet (the template-fetch job runs every minute)"
        found.append(Entry(name, Source(row.scope.value), row, own, fetched_at, error, languages))
    return found


def save(
    session: Session, mlist: MailingList | None, domain: Domain | None, name: str, text: str
) -> Template:
    """Keep ``text`` as the list's (or the domain's) own template ``name``, after
    :func:`check`; a URI set before gives way to it."""
    check(name, text)
    row = own_row(session, mlist, domain, name)
    if row is None:
        row = Template(
            scope=_own_scope(mlist, domain),
            mailing_list_id=mlist.id if mlist is not None else None,
            domain_id=domain.id if mlist is None and domain is not None else None,
            name=name,
            language="",
        )
        session.add(row)
    row.text, row.uri, row.username, row.password = text, "", "", ""
    return row


def own_row(
    session: Session, mlist: MailingList | None, domain: Domain | None, name: str
) -> Template | None:
    if mlist is not None:
        where = (Template.scope == TemplateScope.list) & (Template.mailing_list_id == mlist.id)
    elif domain is not None:
        where = (Template.scope == TemplateScope.domain) & (Template.domain_id == domain.id)
    else:
        where = (Template.scope == TemplateScope.site) & Template.domain_id.is_(None)
    return session.scalar(
        select(Template).where(where, Template.name == name, Template.language == "")
    )
