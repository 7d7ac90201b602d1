"""The addresses of a list, made from its name and mail host: one definition for the
list row (:class:`~mtaplugin.model.MailingList`) and the values that stand for one."""

from __future__ import annotations

from typing import Protocol, Self, overload


class _Named(Protocol):
    @property
    def list_name(self) -> str: ...

    @property
    def mail_host(self) -> str: ...


class _Subaddress:
    """A read-only attribute of a :class:`ListAddresses`: its ``-<name>`` address."""

    def __init__(self, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, instance: None, owner: type) -> Self: ...

    @overload
    def __get__(self, instance: _Named, owner: type) -> str: ...

    def __get__(self, instance: _Named | None, owner: type) -> str | Self:
        if instance is None:
            return self
        return ListAddresses.subaddress(instance, self.name)

    def __set__(self, instance: _Named, value: str) -> None:
        raise AttributeError(f"{self.name} address is made from the list's name and mail host")


class ListAddresses:
    """``posting_address`` (``fqdn_listname``), ``subaddress(name)``, the ``-request``,
    ``-owner``, ``-bounces``, ``-join`` and ``-leave`` addresses and ``no_reply_address``
    of a class with ``list_name`` and ``mail_host``."""

    request_address = _Subaddress("request")
    owner_address = _Subaddress("owner")
    bounces_address = _Subaddress("bounces")
    join_address = _Subaddress("join")
    leave_address = _Subaddress("leave")

    @property
    def posting_address(self: _Named) -> str:
        return f"{self.list_name}@{self.mail_host}"

    def subaddress(self: _Named, name: str) -> str:
        return f"{self.list_name}-{name}@{self.mail_host}"

    @property
    def fqdn_listname(self: _Named) -> str:
        return f"{self.list_name}@{self.mail_host}"

    @property
    def no_reply_address(self: _Named) -> str:
        return f"noreply@{self.mail_host}"
