"""The no-op signing pymilter (``noop_milter --decorate --sign``), the floor bench/
vs_opendkim.py measures beside goal (c): the copy its edits make, applied as an MTA
applies them, carries signatures that dkimpy's verifiers accept against the key served
by a real loopback DNS server; and a lone post goes to its own address."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dkim
import pytest

from mtaplugin.mailauth import signing
from mtaplugin.testing import noop_milter, noop_signer
from mtaplugin.testing.dns import DnsServer
from mtaplugin.vocabulary.draft import AddHeader, ChangeHeader, HeaderOp, InsertHeader, apply_ops

DOMAIN = "lists.bench"
POST = [
    ("From", "member@bench.example"),
    ("To", "bench@lists.bench"),
    ("Subject", "A typical post"),
    ("Date", "Sat, 05 Dec 2026 10:00:00 +0000"),
    ("Message-ID", "<1@bench.example>"),
]
BODY = b"A line of a typical short post.\r\n" * 40


@pytest.fixture(scope="module")
def pem() -> str:
    return signing.generate_private_key()


def _run(
    key_file: Path | None, seal: bool, rcpt: str = "<bench@lists.bench>"
) -> tuple[bytes, list[str]]:
    """Feed POST through the no-op milter's callbacks; (the message its edits make, the
    recipients it leaves)."""
    ops: list[HeaderOp] = []
    body: list[bytes] = []
    recipients = [rcpt]
    attributes: dict[str, Any] = {"to": ("member@bench.example",), "decorate": True,
                                  "lone_to": "member@latency.bench", "seal": seal}  # fmt: skip
    if key_file is not None:
        attributes["key"] = noop_signer.load_key(key_file, DOMAIN, "bench")

    class Recorder(type("Milter", (noop_milter.SameCallbacks,), attributes)):  # type: ignore[misc]
        _protocol = 0

        def addheader(self, name: str, value: str, idx: int = -1) -> None:
            ops.append(AddHeader(name, value) if idx < 0 else InsertHeader(name, value, idx))

        def chgheader(self, name: str, idx: int, value: str) -> None:
            ops.append(ChangeHeader(name, idx, value))

        def replacebody(self, chunk: bytes) -> None:
            body.append(chunk)

        def addrcpt(self, rcpt: str, params: Any = None) -> None:
            recipients.append(rcpt)

        def delrcpt(self, rcpt: str) -> None:
            recipients.remove(rcpt)

    m = Recorder()
    m.envfrom("<member@bench.example>")
    m.envrcpt(rcpt)
    m.data()
    for name, value in POST:
        m.header(name, value)
    m.eoh()
    m.body(BODY)
    m.eom()
    fields = apply_ops(list(POST), ops)
    head = b"".join(f"{k}: {v}".replace("\n", "\r\n").encode() + b"\r\n" for k, v in fields)
    return head + b"\r\n" + b"".join(body), recipients


@pytest.fixture
def key_file(tmp_path: Path, pem: str, dns_server: DnsServer) -> Path:
    dns_server.zone.txt(f"bench._domainkey.{DOMAIN}", signing.txt_value(pem))
    path = tmp_path / "bench.pem"
    path.write_text(pem)
    return path


def test_the_sealed_copy_verifies(key_file: Path, dns_server: DnsServer) -> None:
    message, recipients = _run(key_file, seal=True)
    resolver = dns_server.resolver()
    assert recipients == ["<member@bench.example>"]
    assert b"[bench] A typical post" in message and b"List-Id: <bench.lists.bench>" in message
    assert message.endswith(noop_milter._FOOTER)
    assert dkim.verify(message, dnsfunc=resolver.dkim_dnsfunc)
    cv, sets, _reason = dkim.arc_verify(message, dnsfunc=resolver.dkim_dnsfunc)
    assert cv == b"pass" and len(sets) == 1
    lines = message.split(b"\r\n\r\n")[0].split(b"\r\n")
    names = [line.split(b":")[0] for line in lines if line[:1] not in (b" ", b"\t")]
    assert sorted(names[:4]) == [b"ARC-Authentication-Results", b"ARC-Message-Signature",
                                 b"ARC-Seal", b"DKIM-Signature"]  # fmt: skip


def test_dkim_only_makes_one_signature(key_file: Path, dns_server: DnsServer) -> None:
    message, _recipients = _run(key_file, seal=False)
    assert dkim.verify(message, dnsfunc=dns_server.resolver().dkim_dnsfunc)
    assert message.startswith(b"DKIM-Signature:") and b"ARC-" not in message


def test_a_tampered_copy_fails(key_file: Path, dns_server: DnsServer) -> None:
    message, _recipients = _run(key_file, seal=True)
    tampered = message.replace(b"typical short post", b"typical short pest", 1)
    assert not dkim.verify(tampered, dnsfunc=dns_server.resolver().dkim_dnsfunc)


def test_a_lone_post_goes_to_the_lone_address() -> None:
    _message, recipients = _run(None, seal=True, rcpt="<lone@lists.bench>")
    assert recipients == ["<member@latency.bench>"]


def test_a_folded_subject_is_replaced_whole() -> None:
    raw = b"From: a@b\r\nSubject: one\r\n two\r\nTo: c@d\r\n\r\nbody\r\n"
    copy = noop_signer.decorated_copy(raw, "[x] new", [("List-Id", "<x>")], b"--\r\n")
    assert copy == b"From: a@b\r\nSubject: [x] new\r\nTo: c@d\r\nList-Id: <x>\r\n\r\nbody\r\n--\r\n"
