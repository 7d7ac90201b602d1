"""What every resource needs: the session, the principal, URLs, and the list in the path."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote

import falcon
from sqlalchemy.orm import Session

from mtaplugin.api.auth import Principal
from mtaplugin.api.dialect import not_found
from mtaplugin.errors import NotFound
from mtaplugin.i18n import _
from mtaplugin.manage import lists
from mtaplugin.manage.subscriptions import DEFAULTS, WorkflowSettings
from mtaplugin.model import MailingList


def session(req: falcon.Request) -> Session:
    return req.context.session  # type: ignore[no-any-return]


def workflow(req: falcon.Request) -> WorkflowSettings:
    """The subscription workflow's settings (lifetimes, site owner, clock)."""
    found: WorkflowSettings = getattr(req.context, "workflow", DEFAULTS)
    return found


def principal(req: falcon.Request) -> Principal:
    return req.context.principal  # type: ignore[no-any-return]


_PLAIN = re.compile(r"[A-Za-z0-9@+._:-]*")


def url(req: falcon.Request, *parts: str | int) -> str:
    """An absolute URL under this request's API version, built from the request."""
    path = "/".join(p if _PLAIN.fullmatch(p) else quote(p, safe="@+.-_:") for p in map(str, parts))
    return f"{req.context.base}/{path}"


def mailing_list(req: falcon.Request, key: str, administer: bool = False) -> MailingList:
    """The list named by list_id or fqdn_listname, if the principal may see it."""
    try:
        mlist = lists.get(session(req), key)
    except NotFound:
        raise not_found(_("No such list: {name}").format(name=key)) from None
    principal(req).check_list(mlist, administer=administer)
    return mlist


@dataclass(frozen=True)
class ListRef:
    """What a read of a list's sub-resource needs of the list: not its ~100 settings."""

    id: int
    list_id: str
    list_name: str
    mail_host: str
    generation: int

    @property
    def fqdn_listname(self) -> str:
        return f"{self.list_name}@{self.mail_host}"


def list_ref(req: falcon.Request, key: str) -> ListRef:
    """Like :func:`mailing_list` (read access), with four columns."""
    from sqlalchemy import select

    name = key.strip().lower()
    cols = select(
        MailingList.id,
        MailingList.list_id,
        MailingList.list_name,
        MailingList.mail_host,
        MailingList.generation,
    )
    if "@" in name:
        local, _at, host = name.partition("@")
        query = cols.where(MailingList.list_name == local, MailingList.mail_host == host)
    else:
        query = cols.where(MailingList.list_id == name)
    row = session(req).execute(query).one_or_none()
    if row is None:
        raise not_found(_("No such list: {name}").format(name=key))
    ref = ListRef(*row)
    principal(req).check_list(ref)  # type: ignore[arg-type]
    return ref


class WholeOrPart:
    """A list's settings resource written by PUT (every field given) or PATCH (some):
    both call ``_write`` with ``complete`` saying which."""

    def _write(self, req: falcon.Request, resp: falcon.Response, list: str, complete: bool) -> None:
        raise NotImplementedError

    def on_put(self, req: falcon.Request, resp: falcon.Response, list: str) -> None:
        self._write(req, resp, list, complete=True)

    def on_patch(self, req: falcon.Request, resp: falcon.Response, list: str) -> None:
        self._write(req, resp, list, complete=False)
