"""A running Mailman 3 site read over its REST API with mailmanclient: everything
``mtaplugin import mailman3`` carries, as the REST API's own JSON (no database here).

Each list is read whole before anything of it is written, so a Mailman that answers
500 or stops answering halfway leaves that list untouched here; the error names the
resource that failed.  Every request has a timeout (mailmanclient sets none).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.error import HTTPError
from urllib.parse import quote, urlsplit, urlunsplit

from mtaplugin.errors import MtapluginError
from mtaplugin.i18n import _

#: a page of a REST collection
PAGE = 500
#: the roles a list's roster has, in the order they are read
ROLES = ("owner", "moderator", "member", "nonmember")


class MailmanUnavailable(MtapluginError):
    """Mailman answered with an error, or not at all: nothing of the list being read was
    written; a rerun picks up from there."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        #: Mailman's HTTP status, None when it did not answer
        self.code = code


@dataclass
class ListData:
    """One list as Mailman serves it."""

    fqdn_listname: str
    list_id: str
    config: dict[str, Any]
    #: (member resource, the member's own preferences), owners first
    members: list[tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=list)
    bans: list[str] = field(default_factory=list)
    header_matches: list[dict[str, Any]] = field(default_factory=list)
    #: the list's template URIs (name, uri, username, password)
    uris: list[dict[str, Any]] = field(default_factory=list)
    #: the held posts, with their text (``msg``)
    held: list[dict[str, Any]] = field(default_factory=list)
    #: the pending (un)subscription requests, as ``lists/{list}/requests`` serves them
    #: (token, token_owner, type, email, display_name, when)
    requests: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class UserData:
    user: dict[str, Any]
    preferences: dict[str, Any]
    preferred_address: str | None
    #: (address resource, the address's own preferences)
    addresses: list[tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=list)


@dataclass
class SiteData:
    """Domains, site bans, site and domain template URIs."""

    version: str
    #: (domain resource, owner emails, domain template URIs)
    domains: list[tuple[dict[str, Any], list[str], list[dict[str, Any]]]] = field(
        default_factory=list
    )
    bans: list[str] = field(default_factory=list)
    uris: list[dict[str, Any]] = field(default_factory=list)


def api_url(url: str) -> str:
    """``url`` with the API version 3.1 (hex user ids) unless it names one."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise MailmanUnavailable(
            _("url: expected the http(s) address of Mailman's REST API, got {url!r}").format(
                url=url
            )
        )
    path = parts.path.rstrip("/")
    if not path.endswith(("/3.0", "/3.1")):
        path += "/3.1"
    return urlunsplit((parts.scheme, parts.netloc, path + "/", "", ""))


def _last(link: str | None) -> str | None:
    return link.rstrip("/").rsplit("/", 1)[-1] if link else None


class Mailman3:
    """Access to one Mailman 3 REST API: read only, but for :meth:`discard_held`."""

    def __init__(self, url: str, user: str, password: str, timeout: float = 30.0) -> None:
        from mailmanclient.restbase.connection import Connection

        def with_timeout(params: dict[str, Any]) -> dict[str, Any]:
            params["timeout"] = timeout
            return params

        self.url = api_url(url)
        self._connection = Connection(self.url, user, password, request_hooks=[with_timeout])

    def get(self, path: str) -> Any:
        """The JSON of ``path`` (relative to the API), or :class:`MailmanUnavailable`."""
        content = self._call(path)
        if isinstance(content, dict):
            content.pop("http_etag", None)
        return content

    def discard_held(self, list_id: str, request_id: int) -> None:
        """Discard a held post in Mailman (``--move-held``: it was taken over here), or
        :class:`MailmanUnavailable` (code 404: it is no longer held there).  The one
        request of the import that changes Mailman."""
        self._call(f"lists/{list_id}/held/{request_id}", {"action": "discard"}, "POST")

    def _call(self, path: str, data: dict[str, str] | None = None, method: str = "GET") -> Any:
        from mailmanclient import MailmanConnectionError

        try:
            _response, content = self._connection.call(path, data, method=method)
        except HTTPError as e:
            raise MailmanUnavailable(
                _("Mailman answered {code} for {path}: {reason}").format(
                    code=e.code, path=path, reason=e.msg
                ),
                e.code,
            ) from None
        except MailmanConnectionError as e:
            raise MailmanUnavailable(
                _("no answer from Mailman at {url} for {path}: {error}").format(
                    url=self.url, path=path, error=_why(str(e.args[-1] if e.args else e))
                )
            ) from None
        return content

    def find(self, path: str) -> Any:
        """Like :meth:`get`, but None for a 404."""
        try:
            return self.get(path)
        except MailmanUnavailable as e:
            if e.code == 404:
                return None
            raise

    def collection(self, path: str) -> Iterator[dict[str, Any]]:
        """Every entry of a REST collection, page by page."""
        page = 1
        sep = "&" if "?" in path else "?"
        while True:
            try:
                body = self.get(f"{path}{sep}count={PAGE}&page={page}")
            except MailmanUnavailable as e:
                if page != 1 or e.code != 500:
                    raise
                # Mailman 3.3.10 under SQLAlchemy 2 fails to page some collections (the
                # bans: "FROM expression ... expected"); they are small: read them whole
                body = self.get(path)
                yield from body.get("entries", []) if isinstance(body, dict) else []
                return
            entries = body.get("entries", []) if isinstance(body, dict) else []
            yield from entries
            total = int(body.get("total_size", 0)) if isinstance(body, dict) else 0
            if page * PAGE >= total or not entries:
                return
            page += 1

    # -- the site ---------------------------------------------------------------------------

    def site(self) -> SiteData:
        system = self.get("system/versions")
        data = SiteData(version=str(system.get("mailman_version", "?")))
        for domain in self.collection("domains"):
            host = domain["mail_host"]
            owners = [
                str(e)
                for owner in self.collection(f"domains/{quote(host)}/owners")
                for e in self._emails_of(owner)
            ]
            uris = list(self._uris(f"domains/{quote(host)}/uris"))
            data.domains.append((domain, owners, uris))
        data.bans = [str(b["email"]) for b in self.collection("bans")]
        data.uris = list(self._uris("uris"))
        return data

    def _emails_of(self, user: dict[str, Any]) -> list[str]:
        user_id = user.get("user_id")
        return [str(a["email"]) for a in self.collection(f"users/{user_id}/addresses")]

    def _uris(self, path: str) -> Iterator[dict[str, Any]]:
        body = self.get(path)
        yield from body.get("entries", []) if isinstance(body, dict) else []

    def lists(self) -> list[str]:
        return [str(m["fqdn_listname"]) for m in self.collection("lists")]

    def users(self, progress: Callable[[int], object] | None = None) -> list[UserData]:
        """Every user with its addresses, and the addresses of nobody as users of None."""
        found: list[UserData] = []
        for user in self.collection("users"):
            user_id = user["user_id"]
            preferences = self.get(f"users/{user_id}/preferences")
            preferred = self.find(f"users/{user_id}/preferred_address")
            data = UserData(user, _own(preferences), str(preferred["email"]) if preferred else None)
            for address in self.collection(f"users/{user_id}/addresses"):
                data.addresses.append((address, self._address_preferences(address)))
            found.append(data)
            if progress is not None:
                progress(1)
        return found

    def loose_addresses(self) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """The addresses of no user, with their own preferences."""
        return [
            (address, self._address_preferences(address))
            for address in self.collection("addresses")
            if not address.get("user")
        ]

    def _address_preferences(self, address: dict[str, Any]) -> dict[str, Any]:
        return _own(self.get(f"addresses/{quote(str(address['email']))}/preferences"))

    def the_list(
        self, fqdn_listname: str, progress: Callable[[int], object] | None = None
    ) -> ListData:
        """Everything of one list: read whole, or :class:`MailmanUnavailable`;
        ``progress`` is called for each membership read."""
        info = self.find(f"lists/{quote(fqdn_listname)}")
        if info is None:
            raise MailmanUnavailable(
                _("lists: Mailman has no list {list}").format(list=fqdn_listname)
            )
        list_id = str(info["list_id"])
        data = ListData(fqdn_listname, list_id, self.get(f"lists/{list_id}/config"))
        for role in ROLES:
            for member in self.collection(f"lists/{list_id}/roster/{role}"):
                member_id = member["member_id"]
                data.members.append((member, _own(self.get(f"members/{member_id}/preferences"))))
                if progress is not None:
                    progress(1)
        data.bans = [str(b["email"]) for b in self.collection(f"lists/{list_id}/bans")]
        body = self.get(f"lists/{list_id}/header-matches")
        data.header_matches = list(body.get("entries", [])) if isinstance(body, dict) else []
        data.uris = list(self._uris(f"lists/{list_id}/uris"))
        data.held = list(self.collection(f"lists/{list_id}/held"))
        for kind in ("subscription", "unsubscription"):
            for request in self.collection(f"lists/{list_id}/requests?request_type={kind}"):
                data.requests.append({"type": kind, **request})
        return data


def _why(error: str) -> str:
    """The reason in the words of the system, without the layers of requests around it."""
    if "timed out" in error.lower():
        return "timed out"
    found = re.search(r"\[Errno -?\d+\] [^'\")]+", error)
    return found[0] if found else error[:200]


def _own(preferences: Any) -> dict[str, Any]:
    """The preferences set at that level (without the links)."""
    if not isinstance(preferences, dict):
        return {}
    return {k: v for k, v in preferences.items() if k not in ("self_link", "http_etag")}


def user_id_of(link_or_id: str | int | None) -> str | None:
    """Mailman's user id (a link, an integer of API 3.0 or hex of 3.1) as 32 hex digits."""
    if link_or_id is None:
        return None
    raw = _last(str(link_or_id)) or ""
    if raw.isdigit() and len(raw) != 32:
        return f"{int(raw):032x}"
    return raw.replace("-", "").lower()
