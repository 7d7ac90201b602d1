"""List owners: the settings of a list, one Postorius group per page."""

from __future__ import annotations

import falcon

from mtaplugin.model import MailingList
from mtaplugin.web import list_settings
from mtaplugin.web.common import (
    audit,
    find_list,
    gettext,
    redirect_after,
)
from mtaplugin.web.forms import form
from mtaplugin.web.render import form_status, render


class SettingsIndex:
    def on_get(self, req: falcon.Request, resp: falcon.Response, list_id: str) -> None:
        mlist = find_list(req, list_id, "administer")
        render(
            req,
            resp,
            "settings_index.html",
            mlist=mlist,
            groups=list_settings.GROUPS,
        )


class SettingsGroup:
    def _group(self, req: falcon.Request, group: str) -> str:
        if group not in list_settings.GROUPS:
            raise falcon.HTTPNotFound(
                title=gettext(req, "No such settings page"), description=group
            )
        return group

    def _show(
        self,
        req: falcon.Request,
        resp: falcon.Response,
        mlist: MailingList,
        group: str,
        values: dict[str, str],
        errors: dict[str, str],
        message: str = "",
    ) -> None:
        render(
            req,
            resp,
            "settings_group.html",
            status=form_status(errors),
            mlist=mlist,
            group=group,
            title=list_settings.GROUPS[group][0],
            fields=list_settings.fields(group, mlist),
            values=values,
            errors=errors,
            message=message,
            groups=list_settings.GROUPS,
        )

    def on_get(self, req: falcon.Request, resp: falcon.Response, list_id: str, group: str) -> None:
        mlist = find_list(req, list_id, "administer")
        group = self._group(req, group)
        values = {
            f.name: list_settings.shown_value(mlist, f) for f in list_settings.fields(group, mlist)
        }
        self._show(req, resp, mlist, group, values, {})

    def on_post(self, req: falcon.Request, resp: falcon.Response, list_id: str, group: str) -> None:
        mlist = find_list(req, list_id, "administer")
        group = self._group(req, group)
        f = form(req)
        errors, changed = list_settings.apply(mlist, group, f.values)
        if errors:
            # Show what the owner typed, with the errors beside the fields; nothing changed.
            values = list_settings.typed_values(group, f.values)
            self._show(req, resp, mlist, group, values, errors)
            return
        if changed:
            audit(req, mlist, "list.settings", changed=changed)
        message = (
            gettext(req, "Saved: {names}.").format(
                names=", ".join(gettext(req, list_settings.field_of(n).label) for n in changed)
            )
            if changed
            else gettext(req, "Nothing changed.")
        )
        redirect_after(req, resp, f"/lists/{mlist.list_id}/settings/{group}", message)
