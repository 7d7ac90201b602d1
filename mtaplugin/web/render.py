"""Jinja2 templates (autoescaped) with the request's language and CSRF token."""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

import falcon
from jinja2 import Environment, FileSystemLoader, select_autoescape

from mtaplugin.i18n import translation
from mtaplugin.web import links
from mtaplugin.web.common import gettext, waiting_of

TEMPLATES = Path(__file__).parent / "templates"


@cache
def environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env


def form_status(error: object) -> str:
    """The status of the answer to a form: 400 Bad Request when it shows what was wrong
    with what was sent (``error``: a message, or the messages by field), else 200."""
    return falcon.HTTP_400 if error else falcon.HTTP_200


def gettext_for(language: str) -> Any:
    return translation(language).gettext


def render(
    req: falcon.Request,
    resp: falcon.Response,
    template: str,
    status: str = falcon.HTTP_200,
    **context: Any,
) -> None:
    ctx = req.context
    language = getattr(ctx, "language", "en")
    web_session = getattr(ctx, "web_session", None)
    flashes: tuple[str, ...] = ()
    if web_session is not None and web_session.flash:
        # Shown once: the page after a redirect says what the action did.
        flashes = web_session.flash
        ctx.web_session = replace(web_session, flash=())
    mlist = context.get("mlist")
    viewer = getattr(ctx, "viewer", None)
    if mlist is not None and viewer is not None and viewer.can_moderate(mlist):
        # The list's menu says how much waits: "Held posts (3)".
        context.setdefault("waiting", waiting_of(req, mlist))
    resp.status = status
    resp.content_type = falcon.MEDIA_HTML
    resp.text = (
        environment()
        .get_template(template)
        .render(
            _=gettext_for(language),
            language=language,
            csrf_token=ctx.web_session.csrf if getattr(ctx, "web_session", None) else "",
            viewer=getattr(ctx, "viewer", None),
            path=req.path,
            flashes=flashes,
            **context,
        )
    )


def render_form(req: falcon.Request, resp: falcon.Response, template: str, **context: Any) -> None:
    """Render the page of a form: with ``context``'s ``error`` (a message, or the messages
    by field) shown, and the status that goes with it (:func:`form_status`)."""
    render(req, resp, template, status=form_status(context.get("error")), **context)


def no_base_url(req: falcon.Request, resp: falcon.Response, page: str, **values: object) -> None:
    """Show ``page`` again, saying that no link can be mailed (the site has no
    ``[web] base_url``): nothing was mailed or stored."""
    error = gettext(req, links.NO_BASE_URL)
    render(req, resp, page, status=falcon.HTTP_503, error=error, **values)
