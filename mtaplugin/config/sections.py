"""The settings file's sections gathered into one value, :class:`Settings`, and
:data:`SECTIONS`, the sections by name.

Each section is a frozen dataclass with typed values, in the module for what it is about:
:mod:`~mtaplugin.config.listeners` (what mtaplugin listens on), :mod:`~mtaplugin.config.mail`
(the mail in and out) and :mod:`~mtaplugin.config.site` (the database, the site, the rules).
Each field's ``metadata["parse"]`` is the parser of :mod:`mtaplugin.config.values` that
turns the file's or the environment's value into the field's type
(:mod:`~mtaplugin.config.fields`); without one, the kind of the default decides (bool,
int, float, str).  The comment above a field is its documentation
(docs/reference/configuration.md follows it).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from mtaplugin.config.listeners import (
    ApiSettings,
    EximSettings,
    LmtpSettings,
    LookupSettings,
    MilterSettings,
    WebSettings,
)
from mtaplugin.config.mail import (
    ArchiversSettings,
    AuthenticationSettings,
    BouncesSettings,
    DnsSettings,
    NntpSettings,
    OutboxSettings,
)
from mtaplugin.config.site import (
    DatabaseSettings,
    DomainsSettings,
    RepliesSettings,
    RetentionSettings,
    RulesSettings,
    SiteSettings,
    TemplatesSettings,
    TokensSettings,
)


@dataclass(frozen=True)
class Settings:
    database: DatabaseSettings = field(default_factory=DatabaseSettings)
    milter: MilterSettings = field(default_factory=MilterSettings)
    lookup: LookupSettings = field(default_factory=LookupSettings)
    lmtp: LmtpSettings = field(default_factory=LmtpSettings)
    exim: EximSettings = field(default_factory=EximSettings)
    api: ApiSettings = field(default_factory=ApiSettings)
    web: WebSettings = field(default_factory=WebSettings)
    outbox: OutboxSettings = field(default_factory=OutboxSettings)
    nntp: NntpSettings = field(default_factory=NntpSettings)
    archivers: ArchiversSettings = field(default_factory=ArchiversSettings)
    site: SiteSettings = field(default_factory=SiteSettings)
    rules: RulesSettings = field(default_factory=RulesSettings)
    replies: RepliesSettings = field(default_factory=RepliesSettings)
    tokens: TokensSettings = field(default_factory=TokensSettings)
    authentication: AuthenticationSettings = field(default_factory=AuthenticationSettings)
    dns: DnsSettings = field(default_factory=DnsSettings)
    bounces: BouncesSettings = field(default_factory=BouncesSettings)
    retention: RetentionSettings = field(default_factory=RetentionSettings)
    templates: TemplatesSettings = field(default_factory=TemplatesSettings)
    domains: DomainsSettings = field(default_factory=DomainsSettings)
    #: the file these settings came from, if any
    source: str | None = None


#: the sections of the file, by name
SECTIONS: dict[str, type] = {
    f.name: f.default_factory  # type: ignore[misc]
    for f in dataclasses.fields(Settings)
    if f.name != "source"
}
