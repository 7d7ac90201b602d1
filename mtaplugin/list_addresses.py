"""The addresses of a list, made from its name and mail host: one definition for the
list row (:class:`~mtaplugin.model.MailingList`) and the values that stand for one."""

from __future__ import annotations

from typing import Protocol


class _Named(Protocol):
    @property
    def list_name(self) -> str: ...

    @property
    def mail_host(self) -> str: ...


class ListAddresses:
    """``posting_address``, ``subaddress(name)`` and the ``-request``, ``-owner``,
    ``-bounces``, ``-join`` and ``-leave`` addresses of a class with ``list_name`` and
    ``mail_host``."""

    @property
    def posting_address(self: _Named) -> str:
        return f"{self.list_name}@{self.mail_host}"

    def subaddress(self: _Named, name: str) -> str:
        return f"{self.list_name}-{name}@{self.mail_host}"

    @property
    def request_address(self: _Named) -> str:
        return ListAddresses.subaddress(self, "request")

    @property
    def owner_address(self: _Named) -> str:
        return ListAddresses.subaddress(self, "owner")

    @property
    def bounces_address(self: _Named) -> str:
        return ListAddresses.subaddress(self, "bounces")

    @property
    def join_address(self: _Named) -> str:
        return ListAddresses.subaddress(self, "join")

    @property
    def leave_address(self: _Named) -> str:
        return ListAddresses.subaddress(self, "leave")
