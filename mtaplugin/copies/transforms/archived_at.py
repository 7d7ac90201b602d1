"""The archive's fields of a post (RFC 5064 ``Archived-At``, RFC 2369 ``List-Archive``).

For a list that archives (``archive_policy`` not ``never``) and a post that does not ask
otherwise (``X-No-Archive: yes``, ``Archive: no``):

- a post without a Message-ID gets one made from its content
  (:func:`mtaplugin.archive.hashing.content_message_id`), the same in every copy of it, so
  that the members' copy and the archive name the same post;
- with ``include_rfc2369_headers`` and a web address for the list (the domain's
  ``base_url``), ``List-Archive: <{base}/archive/{list_id}/>`` and
  ``Archived-At: <{base}/archive/{list_id}/message/{HASH}/>``, HASH being Mailman's hash of
  the Message-ID (as Mailman's ``rfc_2369`` handler adds them, under the same setting);
  and one of each for every external archiver the list hands its posts to that has
  addresses (HyperKitty, mail-archive.com: :func:`archive_links`).

The step runs in the archive copy's sequence, so the members' copy, a member's own copy
(made from the archive copy), the digest and the archive itself carry the same fields.
"""

from __future__ import annotations

from mtaplugin import archivers
from mtaplugin.archive import urls
from mtaplugin.archive.hashing import content_message_id, message_id_hash
from mtaplugin.archive.reading import canonical_id, decoded
from mtaplugin.archivers import hyperkitty, mail_archive
from mtaplugin.enums import ArchivePolicy
from mtaplugin.posting.transform_context import TransformContext
from mtaplugin.vocabulary.draft import Draft


def asks_not_to_be_archived(draft: Draft) -> bool:
    if decoded(draft.get("X-No-Archive")).lower().startswith("yes"):
        return True
    return decoded(draft.get("Archive")).lower().startswith("no")


def archived(ctx: TransformContext, draft: Draft) -> bool:
    """Whether the archive keeps this post."""
    return ctx.mlist.archive_policy is not ArchivePolicy.never and not asks_not_to_be_archived(
        draft
    )


def archive_fields(ctx: TransformContext, draft: Draft) -> None:
    mlist = ctx.mlist
    if not archived(ctx, draft):
        return
    message_id = canonical_id(decoded(draft.get("Message-ID")))
    if not message_id:
        message_id = content_message_id(draft.fields, draft.body, mlist.mail_host)
        if draft.has("Message-ID"):
            draft.set("Message-ID", message_id)
        else:
            # Before the list's fields, which a second pass removes and appends again: the
            # archive copy of the archive copy is the archive copy.
            at = next(
                (i for i, (k, _v) in enumerate(draft.fields) if k.lower() == "list-id"),
                len(draft.fields),
            )
            draft.fields.insert(at, ("Message-ID", message_id))
    if not mlist.include_rfc2369_headers:
        return
    links = archive_links(ctx, message_id_hash(message_id))
    if not links:
        return
    draft.remove("List-Archive", "Archived-At")
    for list_url, _permalink in links:
        if list_url:
            draft.append("List-Archive", f"<{list_url}>")
    for _list_url, link in links:
        if link:
            draft.append("Archived-At", f"<{link}>")


def archive_links(ctx: TransformContext, hashed: str) -> list[tuple[str | None, str | None]]:
    """(``List-Archive``, ``Archived-At``) of each archiver that keeps the list's posts
    and has addresses: the built-in archive (when the domain has a web address), then the
    site's external archivers the list hands its posts to (Mailman adds one of each per
    enabled archiver)."""
    mlist = ctx.mlist
    links: list[tuple[str | None, str | None]] = []
    base = urls.web_base(ctx.listinfo_url, mlist.list_id)
    if base and archivers.builtin_on(mlist):
        links.append(
            (urls.list_archive(base, mlist.list_id), urls.permalink(base, mlist.list_id, hashed))
        )
    site = ctx.archivers
    if site is None:
        return links
    for name in archivers.handed_to(mlist, site):
        if name == archivers.MAIL_ARCHIVE:
            links.append(
                (mail_archive.list_url(site, mlist), mail_archive.permalink(site, mlist, hashed))
            )
        elif name == archivers.HYPERKITTY:
            address = mlist.posting_address
            links.append(
                (
                    hyperkitty.list_url(hyperkitty.web_url(site), address),
                    hyperkitty.permalink(hyperkitty.web_url(site), address, hashed),
                )
            )
    return links
