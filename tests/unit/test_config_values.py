"""mtaplugin.config.values: every setting parsed once into its type (sockets with their
modes, choices, tuples, compiled header checks), and the [rules], [authentication] and
[dns] sections."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from mtaplugin import config, wiring
from mtaplugin.config import InetSocket, UnixSocket, values
from mtaplugin.errors import ConfigError
from mtaplugin.regexes import Pattern
from tests.unit.test_config import load_refused, write


@pytest.mark.parametrize(
    ("value", "expected"), [("1", True), ("yes", True), ("off", False), ("FALSE", False)]
)
def test_boolean_coercion(value: str, expected: bool):
    assert config.coerce("x.flag", values.boolean, value) is expected


def test_boolean_coercion_refuses_other_words():
    with pytest.raises(ConfigError) as info:
        config.coerce("x.flag", values.boolean, "maybe")
    assert info.value.key == "x.flag"


def test_rules_and_authentication_sections(tmp_path: Path):
    from mtaplugin.enums import Action

    path = write(
        tmp_path / "m.toml",
        '[database]\nurl = "sqlite:///x.db"\n'
        '[rules]\nheader_checks = """\nX-Spam-Flag: ^yes\n# a comment\n"""\n'
        'header_match_action = "discard"\n'
        '[authentication]\ntrusted_authserv_ids = "mx1.example.org, MX2.example.org"\n'
        "trust_sasl_senders = true\n",
    )
    settings = config.load(path, environ={})
    engine = wiring.list_engine(wiring.build(settings))
    assert [h for h, _p in engine.site_policy.header_checks] == ["X-Spam-Flag"]
    assert engine.site_policy.header_match_action is Action.discard
    assert engine.auth_policy.trusted_authserv_ids == {"mx1.example.org", "mx2.example.org"}
    assert engine.auth_policy.trust_sasl_senders


@pytest.mark.parametrize(
    ("toml", "key"),
    [
        ('[rules]\nheader_match_action = "bless"\n', "rules.header_match_action"),
        ('[rules]\nheader_checks = "no colon here"\n', "rules.header_checks"),
        ('[rules]\nheader_checks = "Subject: [unclosed"\n', "rules.header_checks"),
        ("[rules]\nmax_autoresponses_per_day = -1\n", "rules.max_autoresponses_per_day"),
        ('[authentication]\ntrust_sasl_senders = "maybe"\n', "authentication.trust_sasl_senders"),
    ],
)
def test_bad_rules_settings_name_the_key(tmp_path: Path, toml: str, key: str):
    assert load_refused(write(tmp_path / "m.toml", toml)).key == key


# --- [dns] --------------------------------------------------------------------------------
def test_dns_defaults_use_the_system_resolver_and_tempfail():
    s = config.load(None, environ={})
    assert s.dns.nameservers == ()
    assert s.dns.port == 53
    assert s.dns.timeout == 2.0
    assert s.dns.cache_size == 4096
    assert s.dns.on_failure == "tempfail"


def test_dns_section_from_file_and_environment(tmp_path: Path):
    path = write(
        tmp_path / "m.toml",
        '[dns]\nnameservers = "127.0.0.1, ::1"\nport = 5353\ntimeout = 0.5\n'
        'cache_size = 10\non_failure = "mitigate"\n',
    )
    s = config.load(path, environ={"MTAPLUGIN_DNS_CACHE_SIZE": "0"})
    assert (s.dns.nameservers, s.dns.port, s.dns.timeout) == (("127.0.0.1", "::1"), 5353, 0.5)
    assert s.dns.cache_size == 0
    assert s.dns.on_failure == "mitigate"
    resolver = wiring.resolver(s)
    assert resolver.nameservers == ("127.0.0.1", "::1")
    assert (resolver.port, resolver.timeout, resolver.cache.size) == (5353, 0.5, 0)


@pytest.mark.parametrize(
    ("toml", "key"),
    [
        ('[dns]\nnameservers = "ns1.example.org"\n', "dns.nameservers"),
        ('[dns]\nnameservers = "127.0.0.1 300.1.1.1"\n', "dns.nameservers"),
        ("[dns]\nport = 0\n", "dns.port"),
        ("[dns]\nport = 65536\n", "dns.port"),
        ("[dns]\ntimeout = 0\n", "dns.timeout"),
        ('[dns]\ntimeout = "fast"\n', "dns.timeout"),
        ("[dns]\ncache_size = -1\n", "dns.cache_size"),
        ('[dns]\non_failure = "ignore"\n', "dns.on_failure"),
        ('[dns]\nresolver = "x"\n', "dns.resolver"),
    ],
)
def test_bad_dns_settings_name_the_key(tmp_path: Path, toml: str, key: str):
    assert load_refused(write(tmp_path / "m.toml", toml)).key == key


def test_authserv_id(tmp_path: Path):
    assert config.load(None, environ={}).authentication.authserv_id == ""
    s = config.load(
        write(tmp_path / "m.toml", '[authentication]\nauthserv_id = "mx1.lists.test"\n'), environ={}
    )
    assert s.authentication.authserv_id == "mx1.lists.test"
    bad = load_refused(write(tmp_path / "b.toml", '[authentication]\nauthserv_id = "a b; c"\n'))
    assert bad.key == "authentication.authserv_id"


# --- sockets ------------------------------------------------------------------------------
def test_every_unix_socket_takes_milter_socket_mode_unless_it_has_its_own(tmp_path: Path):
    s = config.load(None, environ={"MTAPLUGIN_MILTER_SOCKET_MODE": "0o660"})
    for section in (s.milter, s.lookup, s.lmtp, s.exim):
        assert isinstance(section.socket, UnixSocket)
        assert (section.socket.mode, section.socket_mode) == (0o660, 0o660)
    s = config.load(
        write(
            tmp_path / "m.toml",
            "[lookup]\nsocket_mode = 0o600\n[exim]\nsocket_mode = 0o640\n"
            '[lmtp]\nsocket = "unix:/run/l.sock"\nsocket_mode = 0\n',
        ),
        environ={},
    )
    assert s.milter.socket == UnixSocket(str(tmp_path.resolve() / "var" / "milter.sock"), 0o660)
    assert s.lookup.socket.mode == 0o600
    assert s.exim.socket.mode == 0o640
    assert s.lmtp.socket == UnixSocket("/run/l.sock", 0)


def test_every_unix_socket_takes_milter_socket_group_unless_it_has_its_own(tmp_path: Path):
    s = config.load(None, environ={})
    for section in (s.milter, s.lookup, s.lmtp, s.exim):
        assert isinstance(section.socket, UnixSocket)
        assert (section.socket.group, section.socket_group) == ("postfix", "postfix")
    s = config.load(
        write(
            tmp_path / "m.toml",
            '[milter]\nsocket_group = "mail"\n[exim]\nsocket_group = "Debian-exim"\n'
            '[lmtp]\nsocket_group = ""\n',
        ),
        environ={},
    )
    assert s.milter.socket.group == s.lookup.socket.group == s.lmtp.socket.group == "mail"
    assert s.exim.socket.group == "Debian-exim"


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("[milter]\nsocket_mode = 0o666\n", "milter.socket_mode"),
        ("[lookup]\nsocket_mode = 0o662\n", "lookup.socket_mode"),
        ('[exim]\nsocket_mode = "0o777"\n', "exim.socket_mode"),
        ('[milter]\nsocket_group = "post fix"\n', "milter.socket_group"),
    ],
)
def test_a_socket_every_user_could_write_is_refused(tmp_path: Path, text: str, key: str):
    with pytest.raises(ConfigError) as bad:
        config.load(write(tmp_path / "m.toml", text), environ={})
    assert bad.value.key == key


def test_an_inet_socket_is_a_host_and_a_port():
    s = config.load(None, environ={"MTAPLUGIN_LMTP_SOCKET": "inet:2424@[::1]"})
    assert s.lmtp.socket == InetSocket("[::1]", 2424)
    assert str(s.lmtp.socket) == "inet:2424@[::1]"
    assert config.milter_socket_path(s) == s.milter.socket.path  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("unix:/run/x.sock", UnixSocket("/run/x.sock")),
        ("inet:8899@127.0.0.1", InetSocket("127.0.0.1", 8899)),
        ("inet:1@mx.example.org", InetSocket("mx.example.org", 1)),
    ],
)
def test_socket_values(spec: str, expected: object):
    assert values.socket(spec) == expected
    assert str(values.socket(spec)) == spec


@pytest.mark.parametrize("spec", ["unix:", "tcp:1", "inet:0@h", "inet:x@h", "inet:25", 5])
def test_bad_socket_values_say_what_is_expected(spec: object):
    with pytest.raises(ValueError, match=r"expected|port out of range"):
        values.socket(spec)


# --- typed values -------------------------------------------------------------------------
def test_comma_lists_are_tuples_parsed_once(tmp_path: Path):
    s = config.load(
        write(
            tmp_path / "m.toml",
            '[authentication]\ntrusted_authserv_ids = ["MX1.example.org", "mx2.example.org"]\n'
            '[dns]\nnameservers = "192.0.2.1 2001:db8::1"\n',
        ),
        environ={},
    )
    assert s.authentication.trusted_authserv_ids == ("mx1.example.org", "mx2.example.org")
    assert s.dns.nameservers == ("192.0.2.1", "2001:db8::1")
    assert config.load(None, environ={}).authentication.trusted_authserv_ids == ()


def test_choices_are_enums(tmp_path: Path):
    from mtaplugin.enums import Action

    s = config.load(
        None,
        environ={
            "MTAPLUGIN_RULES_HEADER_MATCH_ACTION": "reject",
            "MTAPLUGIN_DNS_ON_FAILURE": "mitigate",
        },
    )
    assert s.rules.header_match_action is Action.reject
    assert s.dns.on_failure is config.DnsFailure.mitigate
    assert config.load(None, environ={}).rules.header_match_action is Action.hold


def test_header_checks_are_compiled_once_and_match_without_case():
    s = config.load(
        None, environ={"MTAPLUGIN_RULES_HEADER_CHECKS": "X-Spam-Flag: ^yes\n\n# c\nSubject: buy"}
    )
    (flag, flag_re), (subject, _subject_re) = s.rules.header_checks
    assert (flag, subject) == ("X-Spam-Flag", "Subject")
    assert isinstance(flag_re, Pattern) and flag_re.search("YES")


def test_the_list_engine_reads_the_typed_settings(tmp_path: Path):
    s = config.load(
        None,
        environ={
            "MTAPLUGIN_DATABASE_URL": f"sqlite:///{tmp_path / 'x.db'}",
            "MTAPLUGIN_REPLIES_MAX_AUTORESPONSES_PER_DAY": "4",
            "MTAPLUGIN_REPLIES_EMAIL_COMMAND_REPLIES_PER_DAY": "6",
            "MTAPLUGIN_TOKENS_PENDING_REQUEST_LIFE": "60",
            "MTAPLUGIN_OUTBOX_EXPAND_IN_PLACE_MAX": "0",
        },
    )
    world = wiring.build(s)
    engine = wiring.list_engine(world)
    assert engine.max_autoresponses_per_day == 4
    assert engine.command_policy.replies_per_day == 6
    assert engine.command_policy.workflow.pending_life.total_seconds() == 60
    assert engine.expand_in_place_max == 0
    assert engine.mailauth is world.mailauth
    assert engine.sessions is world.sessions
    world.close()


# --- renamed keys -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("old", "new", "raw", "read"),
    [
        ("outbound.port", "outbox.port", 2525, lambda s: s.outbox.port),
        ("lmtp.max_message_size", "lmtp.max_bytes", 1000, lambda s: s.lmtp.max_bytes),
        (
            "rules.max_autoresponses_per_day",
            "replies.max_autoresponses_per_day",
            3,
            lambda s: s.replies.max_autoresponses_per_day,
        ),
        (
            "rules.email_command_replies_per_day",
            "replies.email_command_replies_per_day",
            3,
            lambda s: s.replies.email_command_replies_per_day,
        ),
        (
            "rules.pending_request_life",
            "tokens.pending_request_life",
            60,
            lambda s: s.tokens.pending_request_life,
        ),
        (
            "rules.moderator_request_life",
            "tokens.moderator_request_life",
            60,
            lambda s: s.tokens.moderator_request_life,
        ),
    ],
)
def test_an_old_key_is_read_with_a_warning_naming_the_new_one(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    old: str,
    new: str,
    raw: int,
    read: Callable[[config.Settings], object],
):
    assert config.RENAMED[old] == new

    def toml(key: str, value: int) -> str:
        section, _dot, name = key.partition(".")
        return f"[{section}]\n{name} = {value}\n"

    with caplog.at_level("WARNING", logger="mtaplugin.config"):
        s = config.load(write(tmp_path / "old.toml", toml(old, raw)), environ={})
    assert read(s) == raw
    assert any(old in r.message and new in r.message for r in caplog.records)

    caplog.clear()
    with caplog.at_level("WARNING", logger="mtaplugin.config"):
        s = config.load(write(tmp_path / "new.toml", toml(new, raw)), environ={})
    assert read(s) == raw
    assert not caplog.records

    env_old = "MTAPLUGIN_" + old.replace(".", "_").upper()
    with caplog.at_level("WARNING", logger="mtaplugin.config"):
        s = config.load(None, environ={env_old: str(raw)})
    assert read(s) == raw
    assert any(env_old in r.message and new in r.message for r in caplog.records)


def test_the_new_name_wins_over_the_old_one(tmp_path: Path):
    path = write(
        tmp_path / "m.toml",
        "[outbox]\nport = 2626\n[outbound]\nport = 2525\nhost = 'relay.test'\n"
        "[lmtp]\nmax_bytes = 10\nmax_message_size = 20\n",
    )
    s = config.load(path, environ={})
    assert (s.outbox.port, s.outbox.host, s.lmtp.max_bytes) == (2626, "relay.test", 10)
    s = config.load(path, environ={"MTAPLUGIN_OUTBOUND_PORT": "1", "MTAPLUGIN_OUTBOX_PORT": "2"})
    assert s.outbox.port == 2


def test_an_unknown_key_in_an_old_section_is_refused(tmp_path: Path):
    err = load_refused(write(tmp_path / "m.toml", "[outbound]\nhots = 'x'\n"))
    assert err.key == "outbound.hots"


@pytest.mark.parametrize(
    ("raw", "kept"),
    [
        ("", ""),
        ("https://lists.example.org/", "https://lists.example.org"),
        ("http://h:8001", "http://h:8001"),
    ],
)
def test_web_base_url_is_an_http_address(raw: str, kept: str):
    assert config.coerce("web.base_url", values.base_url, raw) == kept


@pytest.mark.parametrize(
    "raw",
    [
        "lists.example.org",
        "ftp://x.example",
        "https://x.example/?a=1",
        "https://x/#f",
        "https://x y",
    ],
)
def test_web_base_url_refuses_anything_else(raw: str):
    with pytest.raises(ConfigError) as info:
        config.coerce("web.base_url", values.base_url, raw)
    assert info.value.key == "web.base_url"


def test_forwarded_allow_ips_takes_addresses_and_networks():
    parse = values.ip_networks
    assert config.coerce("w.f", parse, "127.0.0.1, ::1 10.0.0.0/8") == (
        "127.0.0.1",
        "::1",
        "10.0.0.0/8",
    )
    with pytest.raises(ConfigError):
        config.coerce("w.f", parse, "127.0.0.1, *")
