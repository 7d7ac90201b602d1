"""``/lists/{list}/roster-sources``: the rosters a list reads from LDAP or SQL
(:mod:`mtaplugin.roster_sources`), documented in docs/rosters.md.

Reading a source and asking for a sync: the list's owners (and domain owners, the site
administrator).  Creating, changing or removing one: the site administrator only, as the
connection URL and bind credentials reach systems beyond the list.  ``bind_password`` is
write-only: the answers say ``bind_password_set``, never the password."""

from __future__ import annotations

from typing import Any

import falcon
from sqlalchemy import Engine

from mtaplugin.api import collections
from mtaplugin.api.dialect import Params, iso, no_content, resource
from mtaplugin.api.resources.base import mailing_list, principal, session, url, workflow
from mtaplugin.db import sessionmaker_for
from mtaplugin.manage import members
from mtaplugin.model import MailingList, RosterSource
from mtaplugin.roster_sources import sources
from mtaplugin.roster_sources.sync import sync


def source_entry(req: falcon.Request, mlist: MailingList, source: RosterSource) -> dict[str, Any]:
    body = sources.view(source)
    body["last_sync_at"] = iso(source.last_sync_at)
    body["list_id"] = mlist.list_id
    body["self_link"] = url(req, "lists", mlist.list_id, "roster-sources", source.role.value)
    return resource(body)


class RosterSources:
    def on_get(self, req: falcon.Request, resp: falcon.Response, list: str) -> None:
        mlist = mailing_list(req, list, administer=True)
        Params.of(req).only(collections.PAGING)
        items = [source_entry(req, mlist, s) for s in sources.for_list(session(req), mlist)]
        resp.media = collections.from_list(req, items)


class OneRosterSource:
    def on_get(self, req: falcon.Request, resp: falcon.Response, list: str, role: str) -> None:
        mlist = mailing_list(req, list, administer=True)
        source = sources.get(session(req), mlist, members.parse_role(role))
        resp.media = source_entry(req, mlist, source)

    def on_put(self, req: falcon.Request, resp: falcon.Response, list: str, role: str) -> None:
        """Create the source or change the settings given (PATCH does the same)."""
        mlist = mailing_list(req, list, administer=True)
        principal(req).require_admin()
        p = Params.of(req)
        values = {key: p.raw(key) for key in p.values}
        role_ = members.parse_role(role)
        source = sources.save(session(req), mlist, role_, values, clock=workflow(req).clock)
        resp.media = source_entry(req, mlist, source)

    on_patch = on_put

    def on_delete(self, req: falcon.Request, resp: falcon.Response, list: str, role: str) -> None:
        mlist = mailing_list(req, list, administer=True)
        principal(req).require_admin()
        sources.remove(session(req), mlist, members.parse_role(role))
        no_content(resp)


class RosterSync:
    def on_post(self, req: falcon.Request, resp: falcon.Response, list: str, role: str) -> None:
        """Sync now (``force``, ``dry_run``): the changes made, or why none were."""
        mlist = mailing_list(req, list, administer=True)
        p = Params.of(req)
        p.only({"force", "dry_run"})
        force, dry_run = bool(p.bool("force", False)), bool(p.bool("dry_run", False))
        s = session(req)
        source_id = sources.get(s, mlist, members.parse_role(role)).id
        bind = s.get_bind()
        factory = sessionmaker_for(bind if isinstance(bind, Engine) else bind.engine)
        s.commit()  # the sync opens its own transactions
        report = sync(
            factory,
            source_id,
            workflow(req),
            force=force,
            dry_run=dry_run,
            actor=principal(req).name,
        )
        resp.media = resource(
            {
                "result": report.result,
                "message": report.message,
                "dry_run": report.dry_run,
                "added": report.added,
                "removed": report.removed,
                "refused": report.refused,
                "unchanged": report.unchanged,
                "skipped": report.skipped,
            }
        )
