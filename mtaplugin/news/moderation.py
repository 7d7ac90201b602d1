"""Moderated newsgroups (``newsgroup_moderation``, as in Mailman 2.1):

- ``none``: the group is not moderated; articles go to it as they are.
- ``open_moderated``: the group is moderated and the *list* is its moderation: the news
  server mails every article posted to the group to the list (INN's ``moderators`` file
  names the list's posting address), the list's usual rules decide, and each post the list
  accepts goes to the group with ``Approved: <posting address>``.
- ``moderated``: the same, and the list holds every post for its moderators (the
  ``news-moderation`` rule); the posts they approve go to the group with the header.

So the ``Approved:`` header is given to every post the list sends to the group of a list
whose group is moderated (either kind): that post got through the list's moderation, by
the rules (open_moderated) or by a moderator's release or an approved post (moderated).
"""

from __future__ import annotations

from mtaplugin.enums import NewsgroupModeration
from mtaplugin.model import MailingList


def approved_by(mlist: MailingList) -> str | None:
    """The value of the ``Approved:`` header of the list's posts to its newsgroup (the
    ``approved_by`` of :func:`mtaplugin.news.outgoing.article_for`), or None: no header
    (and any ``Approved:`` the post carries is removed, as Mailman does)."""
    if mlist.newsgroup_moderation is NewsgroupModeration.none:
        return None
    return mlist.fqdn_listname
