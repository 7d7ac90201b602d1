"""One front end as an end-to-end scenario sees it, whatever MTA is behind it.

The five front ends a mail admin can choose (docs/development.md):

==================  =============================================================
postfix-milter      Postfix, the milter decides during the SMTP dialogue
postfix-debian      the same with Debian's stock Postfix configuration, chrooted
exim-acl            Exim, its ACLs ask the Exim query server during the dialogue
exim-lmtp           Exim without the ACLs: the LMTP front end decides at delivery
exim-pipe           Exim without the ACLs: ``mtaplugin inject`` decides at delivery
sendmail-milter     Sendmail, the milter decides during the SMTP dialogue
==================  =============================================================

An *inline* front end answers the client itself: a refusal is the 5xx or 4xx of the SMTP
dialogue.  The others come after Exim's 250: Exim turns their 5xx (or exit 77) into a
bounce to the sender and their 4xx (or exit 75) into a deferral it retries.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, sessionmaker

from mtaplugin.db import make_engine, sessionmaker_for
from mtaplugin.model import HeldMessage, MailingList
from mtaplugin.testing.exim import EximLab
from mtaplugin.testing.mta import MtaLab, Refused
from mtaplugin.testing.sink import Received
from tests.integration import labs
from tests.integration.labs import DatabaseOutage
from tests.replies import POSTFIX_RELAY_DENIED, SENDMAIL_RELAY_DENIED, Reply

#: the front ends that decide during the SMTP dialogue (the client hears their refusals)
INLINE = ("postfix-milter", "postfix-debian", "exim-acl", "sendmail-milter")
#: how the MTA refuses a domain that holds no list, where it asks mtaplugin which domains
#: it relays (Postfix's relay_domains, Sendmail's access map; the Exim lab relays for
#: 127.0.0.1)
RELAY_DENIED = {
    "postfix-milter": (POSTFIX_RELAY_DENIED, "Relay access denied"),
    "postfix-debian": (POSTFIX_RELAY_DENIED, "Relay access denied"),
    "sendmail-milter": (SENDMAIL_RELAY_DENIED, "Relaying denied"),
}
#: the Exim transport that decides the posts at delivery
TRANSPORTS = {"exim-lmtp": "mtaplugin_lmtp", "exim-pipe": "mtaplugin_pipe"}


@dataclass
class FrontEnd:
    name: str
    lab: MtaLab
    _engine: Engine | None = field(default=None, repr=False)

    @property
    def inline(self) -> bool:
        """Decides during the SMTP dialogue: the client hears the refusal."""
        return self.name in INLINE

    @property
    def relay_denied(self) -> tuple[Reply, str]:
        """The reply and the words of the MTA refusing to relay a domain."""
        return RELAY_DENIED[self.name]

    @property
    def sessions(self) -> sessionmaker[Session]:
        if self._engine is None:
            self._engine = make_engine(self.lab.database_url)
        return sessionmaker_for(self._engine)

    def close(self) -> None:
        if self._engine is not None:
            self._engine.dispose()

    # --- the list database --------------------------------------------------------------
    def make_list(self, *regular: str, **settings: object) -> MailingList:
        """A new list with these regular members and settings (detached, committed)."""
        with self.sessions() as s:
            mlist = labs.make_list(s, *regular, **settings)
            s.expunge(mlist)
        return mlist

    def held(self, mlist: MailingList) -> list[HeldMessage]:
        return labs.held_posts(self.sessions, mlist)

    def outage(self) -> DatabaseOutage:
        return DatabaseOutage(self.lab.database_url)

    # --- the mail ---------------------------------------------------------------------------
    def send(self, mail_from: str, recipients: list[str], message: bytes) -> Refused | None:
        return self.lab.send(mail_from, recipients, message)

    def copies(self, marker: str, address: str) -> int:
        return labs.copies(self.lab, marker, address)

    def waits(self, condition: Callable[[], object], timeout: float = 60) -> None:
        labs.waits(self.lab, condition, timeout)

    def settle(self) -> None:
        """Wait until the MTA has nothing left to deliver (Exim's queue), so that a copy
        too many would have arrived by now."""
        if isinstance(self.lab, EximLab):
            self.lab.exim.wait_queue_empty()

    def bounces_to(self, sender: str) -> list[Received]:
        """The bounces the MTA sent to ``sender`` (null return path)."""
        return [m for m in self.lab.sink.to(sender) if m.mail_from in {"", "<>"}]

    def decided(self, address: str) -> None:
        """Wait until the front end behind Exim has said 250 for ``address`` (Exim logs
        the delivery once the LMTP server answered or the pipe exited)."""
        route = f"R=mtaplugin_lists T={TRANSPORTS[self.name]}"
        self.waits(lambda: self._logged("=>", address, route))

    def list_address_done(self, address: str) -> None:
        """Wait until the MTA has finished with the list address of an accepted post: a
        milter replaced it by the members; Exim's router dropped it as decided in the ACL,
        or handed it to the front end that decided it at delivery."""
        if self.name == "exim-acl":
            self.waits(lambda: self._logged(f"<{address}> R=mtaplugin_decided"))
        elif not self.inline:
            self.decided(address)

    def deferred(self, address: str) -> str:
        """Wait for Exim's deferral of ``address``; the log line."""

        self.waits(lambda: self._logged("==", address, "defer"))
        return self._logged("==", address, "defer")

    def _logged(self, *words: str) -> str:
        """The first line of the MTA's log with all these words in it, or ""."""
        lines = self.lab.mta_log().splitlines()
        return next((x for x in lines if all(w in x for w in words)), "")
