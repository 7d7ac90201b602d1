"""The ``template-fetch`` job: fetch the http(s) template URIs, keep their text.

Mailman fetches a template URI when it renders the notice, and caches the answer for
``cache_life``.  In mtaplugin a notice may be rendered, and a footer added, while Postfix
waits in the SMTP transaction: a web server that takes its five seconds would hold every
post of the list.  So the fetch happens here, in the scheduler, and rendering only reads
what was fetched (:mod:`mtaplugin.notices.sources`):

- a URI with no text yet (just set through REST, Postorius or an import) is fetched at
  the job's next run (every minute);
- a text older than ``[templates] cache_life`` is fetched again;
- a fetch that fails (timeout, too long, refused, an HTTP error, 404 included) is logged
  and keeps the text fetched before; it is tried again after ``retry_after``.  A 404 for
  a URI that never gave a text gives the empty text, as in Mailman ("no such template");
- when a text changes, the lists it decorates reload their snapshots (touching the
  template row moves their generation, by the triggers of migration 0007);
- texts that no template asks for any more are removed.

The cache lives in the database (``template_fetches``), not in the var_dir: every mail
host that shares the database then sends the same text, and a host that starts has it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import jinja2
from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.config.site import TemplatesSettings
from mtaplugin.db import session_scope
from mtaplugin.enums import TemplateScope
from mtaplugin.model import Domain, MailingList, Template, TemplateFetch
from mtaplugin.notices.fetch import FetchError, Limits, NotFound, fetch
from mtaplugin.notices.sandbox import BudgetExceeded
from mtaplugin.notices.sources import expand, is_http, is_jinja, uri_variables
from mtaplugin.notices.templates import environment
from mtaplugin.vocabulary.job import JobContext

log = logging.getLogger(__name__)


@dataclass
class Wanted:
    """One URI to fetch, with the credentials of the first template that names it."""

    username: str
    password: str
    template_ids: set[int] = field(default_factory=set)


def wanted(session: Session) -> dict[str, Wanted]:
    """Every http(s) URI (its variables filled in) that a template needs now."""
    found: dict[str, Wanted] = {}
    rows = session.scalars(
        select(Template).where(Template.uri != "", Template.text == "").order_by(Template.id)
    ).all()
    for row in rows:
        if not is_http(row.uri):
            continue
        for uri in _expansions(session, row):
            want = found.setdefault(uri, Wanted(row.username, row.password))
            want.template_ids.add(row.id)
    return found


def _expansions(session: Session, row: Template) -> Iterable[str]:
    if "$" not in row.uri:
        yield row.uri
        return
    lists: Iterable[MailingList]
    hosts: Iterable[str] = ()
    if row.scope == TemplateScope.list:
        mlist = session.get(MailingList, row.mailing_list_id)
        lists = [mlist] if mlist is not None else []
    elif row.scope == TemplateScope.domain:
        host = session.scalar(select(Domain.mail_host).where(Domain.id == row.domain_id))
        hosts = [host] if host else []
        lists = session.scalars(select(MailingList).where(MailingList.mail_host == host))
    else:
        yield expand(row.uri, {})
        hosts = session.scalars(select(Domain.mail_host))
        lists = session.scalars(select(MailingList))
    for host in list(hosts):
        yield expand(row.uri, uri_variables(None, host, None))
    for mlist in list(lists):
        yield expand(row.uri, uri_variables(mlist, None, None))


def run(ctx: JobContext) -> int:
    return refresh_all(ctx.world.sessions, ctx.world.settings.templates, ctx.now)


def refresh_all(
    sessions: sessionmaker[Session],
    settings: TemplatesSettings,
    now: datetime,
    *,
    force: bool = False,
    templates: set[int] | None = None,
) -> int:
    """Fetch every URI that has no text yet or whose text expired (``force``: every
    one; ``templates``: only the URIs of these template rows, whatever their age -- a URI
    just set through REST or Postorius -- and a failure recorded nowhere, left to the
    job); returns how many were fetched with success."""
    with session_scope(sessions) as session:
        wants = wanted(session)
        if templates is not None:
            wants = {u: w for u, w in wants.items() if w.template_ids & templates}
            force = True
        due = {
            r.uri: r.refresh_at for r in session.scalars(select(TemplateFetch)) if r.uri in wants
        }
        if templates is None:  # (a partial run knows only some of the URIs still wanted)
            session.execute(delete(TemplateFetch).where(TemplateFetch.uri.not_in(list(wants))))
    limits = Limits(settings.fetch_timeout, settings.max_size, settings.allow_hosts)
    fetched = 0
    for uri, want in wants.items():
        if not force and uri in due and due[uri] > now:
            continue
        try:
            text: str | None = fetch(uri, want.username, want.password, limits)
            error = ""
            if text is not None and is_jinja(text):
                _parse(text)
        except NotFound as exc:
            text, error = None, str(exc)
            missing = True
        except FetchError as exc:
            text, error = None, str(exc)
            missing = False
        if text is None and templates is not None:
            # fetched at once after a REST change: a failure changes nothing, and the job
            # tries again at its next run (its own failures are what count)
            log.info("template-fetch: %s: %s; the job tries again", uri, error)
            continue
        with session_scope(sessions) as session:
            if text is not None:
                fetched += 1
            elif store_failure(session, uri, error, missing, now, settings):
                continue
            changed = store(session, uri, text or "", now, settings, error)
            if changed:
                session.execute(
                    update(Template)
                    .where(Template.id.in_(want.template_ids))
                    .values(uri=Template.uri)
                )
    return fetched


def store(
    session: Session,
    uri: str,
    text: str,
    now: datetime,
    settings: TemplatesSettings,
    error: str = "",
) -> bool:
    """Keep ``text`` as what ``uri`` gives (``error``: a first 404, kept for the empty
    text only until the next try, as Mailman does not cache it); whether it changed."""
    row = _row(session, uri, now)
    changed = row.fetched_at is None or row.text != text
    row.text, row.fetched_at, row.attempted_at, row.error = text, now, now, error
    life = settings.retry_after if error else settings.cache_life
    row.refresh_at = now + timedelta(seconds=life)
    log.info("template-fetch: %s: %d characters%s", uri, len(text), "" if changed else ", same")
    return changed


def store_failure(
    session: Session,
    uri: str,
    error: str,
    missing: bool,
    now: datetime,
    settings: TemplatesSettings,
) -> bool:
    """Record a failed fetch; True when the text fetched before stays (False: a first
    404, which gives the empty text, as in Mailman)."""
    row = _row(session, uri, now)
    if missing and row.fetched_at is None:
        log.warning("template-fetch: %s: %s; no text before: the template is empty", uri, error)
        return False
    row.attempted_at, row.error = now, error
    row.refresh_at = now + timedelta(seconds=settings.retry_after)
    if row.fetched_at is None:
        log.warning("template-fetch: %s: %s; nothing fetched yet, next try later", uri, error)
    else:
        log.warning("template-fetch: %s: %s; the text fetched before stays", uri, error)
    return True


def _parse(text: str) -> None:
    """A fetched Jinja2 text must parse, and render within the budget of
    :mod:`mtaplugin.notices.sandbox` (tried once here, without variables): one that does
    not is a failed fetch (the text fetched before stays), not a notice that cannot be
    sent, nor a CPU second spent at every notice before the built-in text goes."""
    try:
        template = environment("en").from_string(text)
    except jinja2.TemplateSyntaxError as exc:
        raise FetchError(f"line {exc.lineno}: {exc.message}") from None
    try:
        template.render()
    except BudgetExceeded as exc:
        raise FetchError(f"over the rendering budget: {exc}") from None
    except Exception:  # a text may need the variables of a real notice
        pass


def _row(session: Session, uri: str, now: datetime) -> TemplateFetch:
    row = session.scalar(select(TemplateFetch).where(TemplateFetch.uri == uri))
    if row is None:
        row = TemplateFetch(uri=uri, text="", error="", refresh_at=now)
        session.add(row)
    return row
