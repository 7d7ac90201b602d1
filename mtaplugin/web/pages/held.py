"""The moderation queue of a list: held posts, one at a time or in bulk.

Every action goes through :mod:`mtaplugin.manage.held` (the audit log; an approved post
leaves through the outbox), as the CLI, REST and moderation by reply do.
"""

from __future__ import annotations

from collections.abc import Sequence

import falcon

from mtaplugin.archive.safe_post import render_post
from mtaplugin.i18n import N_
from mtaplugin.manage import held as held_posts
from mtaplugin.model import MailingList
from mtaplugin.web.common import (
    actor_of,
    find_list,
    gettext,
    redirect_after,
    session_of,
    workflow_of,
)
from mtaplugin.web.forms import form
from mtaplugin.web.render import render


def _parse_ids(req: falcon.Request, values: list[str]) -> list[int]:
    ids: list[int] = []
    for value in values:
        if not value.isdigit():
            raise falcon.HTTPBadRequest(
                title="request_id", description=gettext(req, "not a held post number")
            )
        ids.append(int(value))
    return ids


def _moderator(req: falcon.Request, mlist: MailingList) -> held_posts.Moderator:
    """The viewer deciding on ``mlist``'s held posts, with the site's clock and archivers."""
    return held_posts.Moderator.of(session_of(req), mlist, actor_of(req), workflow_of(req))


def _queue(mlist: MailingList) -> str:
    return f"/lists/{mlist.list_id}/held"


def _said(req: falcon.Request, done: Sequence[held_posts.Result]) -> list[str]:
    """One line for each action taken: ``Post 7: approve``, ``Posts 3, 4, 5: discard``."""
    by_action: dict[str, list[str]] = {}
    for result in done:
        by_action.setdefault(result.action, []).append(str(result.held_id))
    return [
        (
            gettext(req, "Post {id}: {action}")
            if len(ids) == 1
            else gettext(req, N_("Posts {ids}: {action}"))
        ).format(id=ids[0], ids=", ".join(ids), action=gettext(req, action))
        for action, ids in by_action.items()
    ]


class HeldQueue:
    def on_get(self, req: falcon.Request, resp: falcon.Response, list_id: str) -> None:
        mlist = find_list(req, list_id, "moderate")
        posts = held_posts.all_held(session_of(req), mlist)
        render(req, resp, "held_queue.html", mlist=mlist, posts=posts, done=[])

    def on_post(self, req: falcon.Request, resp: falcon.Response, list_id: str) -> None:
        mlist = find_list(req, list_id, "moderate")
        f = form(req)
        action = f.get("action")
        ids = _parse_ids(req, f.all("request_id"))
        session = session_of(req)
        if not ids:
            render(
                req,
                resp,
                "held_queue.html",
                status=falcon.HTTP_400,
                mlist=mlist,
                posts=held_posts.all_held(session, mlist),
                done=[],
                error=gettext(req, "Select at least one held post."),
            )
            return
        by = _moderator(req, mlist)
        done = [held_posts.act(by, held_id, action, f.get("reason")) for held_id in ids]
        redirect_after(req, resp, _queue(mlist), *_said(req, done))


class HeldPost:
    def on_get(
        self, req: falcon.Request, resp: falcon.Response, list_id: str, held_id: int
    ) -> None:
        mlist = find_list(req, list_id, "moderate")
        post = held_posts.get(session_of(req), mlist, held_id)
        render(
            req,
            resp,
            "held_post.html",
            mlist=mlist,
            post=post,
            reasons=held_posts.reasons_of(post),
            shown=render_post(post.raw),
        )

    def on_post(
        self, req: falcon.Request, resp: falcon.Response, list_id: str, held_id: int
    ) -> None:
        mlist = find_list(req, list_id, "moderate")
        f = form(req)
        result = held_posts.act(_moderator(req, mlist), held_id, f.get("action"), f.get("reason"))
        redirect_after(req, resp, _queue(mlist), *_said(req, [result]))
