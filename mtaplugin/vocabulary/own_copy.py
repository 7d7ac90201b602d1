"""What the outbox keeps with a post that goes to each member as their own copy: the
record the worker makes each copy from (:mod:`mtaplugin.copies.transforms.personalize`;
a transform context makes it: ``TransformContext.own_copy_info``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class OwnCopyInfo:
    """What the worker needs to make each member's copy (kept with the outbox row)."""

    list_id: str
    listinfo_url: str
    leave_address: str
    #: the post's number (subject prefix ``%d`` was applied already; footers may use it)
    post_number: int = 0
    #: DMARC munge/wrap applies (decided when the post came in)
    should_mitigate: bool = False
    #: a digest: the member's copy gets only its one-click link (the digest has its own
    #: masthead and footer, and is the list's own message: nothing to mitigate)
    digest: bool = False

    def as_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {
            "list_id": self.list_id,
            "listinfo_url": self.listinfo_url,
            "leave_address": self.leave_address,
            "post_number": self.post_number,
            "should_mitigate": self.should_mitigate,
        }
        if self.digest:
            record["digest"] = True
        return record

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> OwnCopyInfo:
        return cls(
            str(record.get("list_id", "")),
            str(record.get("listinfo_url", "")),
            str(record.get("leave_address", "")),
            int(record.get("post_number", 0)),
            bool(record.get("should_mitigate", False)),
            bool(record.get("digest", False)),
        )
