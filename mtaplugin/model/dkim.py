"""The DKIM key of a domain: what signs and ARC-seals every copy that leaves its lists."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column, relationship

from mtaplugin.model.base import Base, UTCDateTime, utcnow

if TYPE_CHECKING:
    from mtaplugin.model.domain import Domain

#: the header fields signed by default, separated by colons (From is also oversigned)
DEFAULT_SIGNED_HEADERS = (
    "From:Sender:Reply-To:To:Cc:Subject:Date:Message-ID:In-Reply-To:References:"
    "MIME-Version:Content-Type:Content-Transfer-Encoding:List-Id:List-Help:List-Subscribe:"
    "List-Unsubscribe:List-Unsubscribe-Post:List-Post:List-Owner:List-Archive:Precedence"
)


class DkimKey(Base):
    __tablename__ = "dkim_keys"

    id: Mapped[int] = mapped_column(primary_key=True)
    #: a domain has one key, or two during a rollover: the one that signs and its
    #: replacement waiting for DNS (activating it removes the other)
    domain_id: Mapped[int] = mapped_column(ForeignKey("domains.id", ondelete="CASCADE"), index=True)
    #: the DNS label under _domainkey (s= of the signature)
    selector: Mapped[str] = mapped_column(String(63))
    #: PEM: PKCS#1 "RSA PRIVATE KEY" for RSA, PKCS#8 "PRIVATE KEY" for Ed25519
    private_key: Mapped[str] = mapped_column(Text)
    #: header field names to sign, separated by colons (h= of the signature)
    signed_headers: Mapped[str] = mapped_column(Text, default=DEFAULT_SIGNED_HEADERS)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    #: when ``mtaplugin dkim check`` (or its hourly job) saw the public key in DNS, or
    #: ``keygen --activate`` said it is published; None: waiting, not used for signing (a
    #: signature whose key DNS does not serve fails at every receiver)
    activated_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)

    domain: Mapped[Domain] = relationship(back_populates="dkim_keys")

    @property
    def active(self) -> bool:
        return self.activated_at is not None

    def __repr__(self) -> str:
        return f"<DkimKey {self.selector} domain_id={self.domain_id}>"
