"""One message to a command address (:class:`CommandMail`), what the commands read and
collect, and the site's policy for them (:class:`CommandPolicy`).  The dispatcher
(:mod:`mtaplugin.commands.dispatch`) builds it; each command module takes it."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy.orm import Session

from mtaplugin.commands import parse
from mtaplugin.mailauth.identity import SenderIdentity
from mtaplugin.manage.subscriptions import WorkflowSettings
from mtaplugin.model import MailingList
from mtaplugin.vocabulary.envelope import Envelope, Post


@dataclass(frozen=True)
class CommandPolicy:
    workflow: WorkflowSettings = field(default_factory=WorkflowSettings)
    #: body lines read for commands (Mailman's email_commands_max_lines)
    max_lines: int = 10
    #: replies to one sender per list per day
    replies_per_day: int = 10


@dataclass
class CommandMail:
    """One message to a command address, with what the commands collect."""

    session: Session
    mlist: MailingList
    subaddress: str
    extension: str
    post: Post
    envelope: Envelope
    identity: SenderIdentity
    policy: CommandPolicy
    #: the engine's clock when the message came
    now: datetime
    #: where replies go: the From: address, else the envelope sender
    sender: str = ""
    language: str = "en"
    #: the shipped language the message asked for (Accept-Language, Content-Language)
    asked_language: str | None = None
    results: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    #: a reply is sent only when something needs saying
    must_reply: bool = False
    #: commands already run in this message (one join per message, as in Mailman)
    done: set[str] = field(default_factory=set)
    #: the message's command lines (a moderator's decision is read from them)
    lines: parse.CommandLines | None = None

    @property
    def authenticated_sender(self) -> bool:
        """The reply address is the From: address and the MTA authenticated it."""
        return self.identity.authenticated and self.identity.address == self.sender

    def say(self, text: str) -> None:
        self.results.append(text)
        self.must_reply = True
