"""The SQL model (SQLAlchemy 2, typed).  Import models from here."""

from mtaplugin.model.accepted import AcceptedPost
from mtaplugin.model.archive import ArchivedMessage, ArchiveThread, ArchiveWaiting
from mtaplugin.model.archivers import ArchiverHandOff
from mtaplugin.model.auto_responses import AutoResponseRecord
from mtaplugin.model.base import Base
from mtaplugin.model.bounce_events import BounceEvent
from mtaplugin.model.digest_store import DigestEntry, OneLastDigest
from mtaplugin.model.dkim import DkimKey
from mtaplugin.model.domain import Domain, domain_owners
from mtaplugin.model.legacy_links import PipermailNumber
from mtaplugin.model.mailinglist import MailingList
from mtaplugin.model.member import Member
from mtaplugin.model.moderation import AuditEntry, Ban, HeaderMatch, HeldMessage, PendingRequest
from mtaplugin.model.news import NewsArticle, NewsWatermark
from mtaplugin.model.outbox import FilteredPost, OutboxMessage
from mtaplugin.model.rates import PostRate
from mtaplugin.model.roster import RosterKind, RosterSource, RosterSourceMember
from mtaplugin.model.scheduler import JobRun
from mtaplugin.model.template import Template, TemplateFetch
from mtaplugin.model.user import Address, User

# the listener that moves "as_user" memberships with the preferred address
from mtaplugin.model import as_user as _as_user  # noqa: F401  # isort: skip

__all__ = [
    "AcceptedPost",
    "Address",
    "ArchiveThread",
    "ArchiveWaiting",
    "ArchivedMessage",
    "ArchiverHandOff",
    "AuditEntry",
    "AutoResponseRecord",
    "Ban",
    "Base",
    "BounceEvent",
    "DigestEntry",
    "DkimKey",
    "Domain",
    "FilteredPost",
    "HeaderMatch",
    "HeldMessage",
    "JobRun",
    "MailingList",
    "Member",
    "NewsArticle",
    "NewsWatermark",
    "OneLastDigest",
    "OutboxMessage",
    "PendingRequest",
    "PipermailNumber",
    "PostRate",
    "RosterKind",
    "RosterSource",
    "RosterSourceMember",
    "Template",
    "TemplateFetch",
    "User",
    "domain_owners",
]
