"""``list:admin:notice:unrecognized``: a bounce that names no member of the list, sent to
whom ``forward_unrecognized_bounces_to`` says, with the bounce attached."""

from __future__ import annotations

from sqlalchemy.orm import Session

from mtaplugin.i18n import _, using
from mtaplugin.model import MailingList
from mtaplugin.notices import build
from mtaplugin.notices.templates import render


def unrecognized_bounce_notice(session: Session | None, mlist: MailingList, raw: bytes) -> bytes:
    with using(mlist.preferred_language) as lang:
        body = render("list:admin:notice:unrecognized", lang, session=session, mlist=mlist)
        title = _("Uncaught bounce notification for {list}").format(list=mlist.fqdn_listname)
    return build(mlist.owner_address, mlist.owner_address, title, body, attach=raw)
