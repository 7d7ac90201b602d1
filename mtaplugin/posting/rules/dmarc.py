"""dmarc-mitigation: the list refuses or drops posts whose From: domain asks receivers to
reject or quarantine mail that fails DMARC (``dmarc_mitigate_action`` reject or discard).

As in Mailman it runs first, before ``approved``, so it also meets members and
pre-approved posts: a list cannot deliver such a post without breaking its DMARC.  The
policy was looked up by the engine (:meth:`mtaplugin.mailauth.service.Deliverability.dmarc_policy`)
before the rules run, so the rule itself does no I/O.  munge_from and wrap_message do not
hit here: they are transforms of the members' copy.
"""

from __future__ import annotations

from mtaplugin.enums import Action, DMARCMitigateAction
from mtaplugin.i18n import _
from mtaplugin.mailauth.dmarc import should_mitigate
from mtaplugin.posting.rules.base import Check, Hit, PostContext, SitePolicy
from mtaplugin.posting.snapshot import ListSnapshot

DMARC_MITIGATION = "dmarc-mitigation"
_ACTIONS = {DMARCMitigateAction.reject: Action.reject, DMARCMitigateAction.discard: Action.discard}


def prepare(snapshot: ListSnapshot, site: SitePolicy) -> Check | None:
    """Off unless the list's ``dmarc_mitigate_action`` is reject or discard."""
    return dmarc_mitigation if snapshot.mlist.dmarc_mitigate_action in _ACTIONS else None


def dmarc_mitigation(ctx: PostContext) -> Hit | None:
    action = _ACTIONS.get(ctx.mlist.dmarc_mitigate_action)
    if action is None or not should_mitigate(ctx.mlist, ctx.dmarc, ctx.sender):
        return None
    notice = " ".join(ctx.mlist.dmarc_moderation_notice.split())
    if notice:
        return Hit(DMARC_MITIGATION, action, notice)
    domain = ctx.sender.rpartition("@")[2]
    if ctx.dmarc is not None and ctx.dmarc.dns_error:
        why = _("the DMARC policy of {domain} could not be looked up")
    elif ctx.dmarc is not None and ctx.dmarc.strict:
        why = _("{domain} publishes a DMARC policy of {policy}")
    else:
        why = _("the list mitigates DMARC for {sender}")
    policy = ctx.dmarc.policy if ctx.dmarc is not None else ""
    return Hit(
        DMARC_MITIGATION,
        action,
        _("{why}; {list} cannot deliver this post without breaking it").format(
            why=why.format(domain=domain, policy=policy, sender=ctx.sender),
            list=ctx.mlist.fqdn_listname,
        ),
    )
