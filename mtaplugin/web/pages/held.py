"""The moderation queue of a list: held posts, one at a time or in bulk.

Every action goes through :mod:`mtaplugin.manage.held` (the audit log; an approved post
leaves through the outbox), as the CLI, REST and moderation by reply do.
"""

from __future__ import annotations

import falcon

from mtaplugin.manage import held as held_posts
from mtaplugin.web.forms import form
from mtaplugin.web.pages.common import find_list, gettext, session_of, viewer_of
from mtaplugin.web.render import render
from mtaplugin.web.safe_post import render_post


def _actor(req: falcon.Request) -> str:
    return f"web:{viewer_of(req).name}"


def _parse_ids(req: falcon.Request, values: list[str]) -> list[int]:
    ids: list[int] = []
    for value in values:
        if not value.isdigit():
            raise falcon.HTTPBadRequest(
                title="request_id", description=gettext(req, "not a held post number")
            )
        ids.append(int(value))
    return ids


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
        done = []
        if not ids:
            error = gettext(req, "Select at least one held post.")
        else:
            error = ""
            for held_id in ids:
                done.append(
                    held_posts.act(session, mlist, held_id, action, _actor(req), f.get("reason"))
                )
        posts = held_posts.all_held(session, mlist)
        render(
            req,
            resp,
            "held_queue.html",
            status=falcon.HTTP_400 if error else falcon.HTTP_200,
            mlist=mlist,
            posts=posts,
            done=done,
            error=error,
        )


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
        session = session_of(req)
        result = held_posts.act(
            session, mlist, held_id, f.get("action"), _actor(req), f.get("reason")
        )
        posts = held_posts.all_held(session, mlist)
        render(req, resp, "held_queue.html", mlist=mlist, posts=posts, done=[result])
