"""``list:admin:notice:unrecognized``: a bounce that names no member of the list, sent to
whom ``forward_unrecognized_bounces_to`` says, with the bounce attached."""

from __future__ import annotations

from sqlalchemy.orm import Session

from mtaplugin.i18n import _
from mtaplugin.model import MailingList
from mtaplugin.notices import build
from mtaplugin.notices.templates import rendered


def unrecognized_bounce_notice(session: Session | None, mlist: MailingList, raw: bytes) -> bytes:
    body, title = rendered(
        "list:admin:notice:unrecognized",
        mlist.preferred_language,
        lambda: _("Uncaught bounce notification for {list}").format(list=mlist.fqdn_listname),
        session=session,
        mlist=mlist,
    )
    return build(mlist.owner_address, mlist.owner_address, title, body, attach=raw)
