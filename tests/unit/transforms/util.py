"""Helpers for the transform tests: a list with Mailman's defaults, the corpus."""

from __future__ import annotations

import email
from email.message import Message
from email.policy import compat32
from pathlib import Path
from typing import Any

from mtaplugin.model import MailingList
from mtaplugin.transforms import TransformContext

CORPUS = Path(__file__).resolve().parents[2] / "corpus"


def make_list(**settings: Any) -> MailingList:
    """A MailingList (not in any session) with every column at its default."""
    mlist = MailingList()
    for column in MailingList.__table__.columns:
        default = column.default
        if default is None or column.key in settings:
            continue
        value = default.arg
        if callable(value):
            value = value(None)
        setattr(mlist, column.key, value)
    values: dict[str, Any] = {
        "list_name": "team",
        "mail_host": "lists.example.org",
        "list_id": "team.lists.example.org",
        "display_name": "Team",
        "subject_prefix": "[Team] ",
    }
    values.update(settings)
    for key, value in values.items():
        setattr(mlist, key, value)
    return mlist


def context(**kwargs: Any) -> TransformContext:
    settings = kwargs.pop("settings", {})
    return TransformContext(make_list(**settings), **kwargs)


def corpus(name: str) -> bytes:
    return (CORPUS / name).read_bytes()


def corpus_names() -> list[str]:
    return sorted(p.name for p in CORPUS.glob("*.eml"))


def parse(raw: bytes) -> Message:
    return email.message_from_bytes(raw, policy=compat32)
