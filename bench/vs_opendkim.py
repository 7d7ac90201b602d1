"""The signed path against the C reference: messages/s through Postfix + mtaplugin (a
decorated list, every copy ARC-sealed and DKIM-signed) ÷ Postfix + OpenDKIM (Debian's
opendkim signing the same posts with the same RSA 2048 key), in one run.

Every path is a private Postfix fed by ``smtp-source`` and delivering to ``smtp-sink``
(bench/milter_ceiling.py says how): bare Postfix (the re-injection listener, no milter),
Postfix + OpenDKIM (relaying the post, signed, ``mtaplugin.testing.opendkim``), Postfix +
mtaplugin with the list's copy signed and sealed, the same list unsigned, and signed
without the ARC seal (``authentication.arc_seal = false``: one RSA signature, as OpenDKIM).

Before that, in this process, what one 2 kB copy's ARC set + DKIM signature costs, step by
step: dkimpy as it is (pure-Python RSA), dkimpy with RSA through OpenSSL (the previous
code), mtaplugin's own signer in two passes (ARC set, then DKIM signature: body hash and
header canonicalization twice) and in one pass (both shared), and one pass with an
Ed25519 DKIM signature beside the RSA one (RFC 8463).

    .venv/bin/python bench/vs_opendkim.py [--quick] [--json PATH] [--messages 1000]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

import dkim

from mtaplugin.mailauth import signing
from mtaplugin.mailauth.service import install
from mtaplugin.mailauth.signing import SigningKey
from mtaplugin.testing import milterbench
from mtaplugin.testing.benchdb import ready_for_mtas
from mtaplugin.testing.milterbench import (
    LIST,
    LIST_DOMAIN,
    MEMBER,
    OtherMilter,
    Path_,
    Row,
    bench_root,
    header,
    lab_pid,
    make_database,
    mtaplugin_lab,
    rounds,
    write_json,
)
from mtaplugin.testing.opendkim import OpenDKIM

GOAL = 0.7
HEADERS = ("from", "to", "subject", "date", "message-id", "mime-version", "content-type",
           "list-id", "list-post", "list-help", "list-subscribe", "list-unsubscribe")  # fmt: skip
RESULTS = "lists.bench; dkim=pass header.d=bench.example; spf=pass smtp.mailfrom=bench.example"


def copy(size: int) -> bytes:
    body = (b"x" * 76 + b"\r\n") * max(1, size // 78)
    return (
        b"Received: from a by b; Thu, 03 Dec 2026 10:00:00 +0000\r\n"
        b"From: member@bench.example\r\nTo: bench@lists.bench\r\n"
        b"Subject: [bench] A typical post\r\nDate: Thu, 03 Dec 2026 10:00:00 +0000\r\n"
        b"Message-ID: <1@bench.example>\r\nMIME-Version: 1.0\r\n"
        b"Content-Type: text/plain; charset=us-ascii\r\nList-Id: <bench.lists.bench>\r\n"
        b"List-Post: <mailto:bench@lists.bench>\r\n"
        b"List-Help: <mailto:bench-request@lists.bench?subject=help>\r\n"
        b"List-Subscribe: <mailto:bench-join@lists.bench>\r\n"
        b"List-Unsubscribe: <mailto:bench-leave@lists.bench>\r\n\r\n" + body
    )


def per_op(fn: Callable[[], object], seconds: float) -> float:
    """CPU milliseconds per call (this process's CPU time: on a shared machine it moves
    much less with the other work than wall time does), over about ``seconds`` of CPU."""
    fn()
    n, start = 0, time.process_time()
    while time.process_time() - start < seconds:
        fn()
        n += 1
    return (time.process_time() - start) / n * 1000


def _dkimpy(raw: bytes, key: SigningKey) -> bytes:
    """The previous code: dkimpy's arc_sign, then its sign."""
    names = signing.include_headers(raw, key.headers)
    sel, dom = key.selector.encode(), key.domain.encode()
    ar = b"Authentication-Results: " + RESULTS.encode() + b"\r\n"
    sealed = ar + raw
    arc = dkim.arc_sign(sealed, sel, dom, key.private_key, b"lists.bench", include_headers=names)
    sealed = b"".join(arc) + sealed
    names = signing.include_headers(sealed, key.headers)
    sig = dkim.sign(sealed, sel, dom, key.private_key, canonicalize=(b"relaxed", b"relaxed"),
                    include_headers=names)  # fmt: skip
    return bytes(sig) + sealed


def signing_steps(seconds: float) -> list[tuple[str, float]]:
    pem = signing.generate_private_key()
    key = SigningKey(LIST_DOMAIN, "bench", pem.encode(), HEADERS)
    ed_pem = signing.generate_private_key(signing.ED25519)
    from mtaplugin.model import DkimKey

    ed = signing._signing_key(LIST_DOMAIN, DkimKey(selector="ed", private_key=ed_pem,
                                                   signed_headers=":".join(HEADERS)))  # fmt: skip
    raw = copy(2000)
    saved = dkim.RSASSA_PKCS1_v1_5_sign
    pure = signing._dkimpy_rsa_sign or saved
    dkim.RSASSA_PKCS1_v1_5_sign = pure
    steps = [("dkimpy, pure-Python RSA", per_op(lambda: _dkimpy(raw, key), seconds))]
    install()
    steps.append(
        ("dkimpy, RSA through OpenSSL (before)", per_op(lambda: _dkimpy(raw, key), seconds))
    )
    steps.append((
        "own signer, two passes (ARC set, then DKIM)",
        per_op(lambda: signing.dkim_sign(
            signing.arc_seal(raw, key, "lists.bench", RESULTS), key), seconds),
    ))  # fmt: skip
    steps.append((
        "own signer, one pass (body hash, header canonicalization shared)",
        per_op(lambda: signing.seal_and_sign(raw, key, "lists.bench", RESULTS), seconds),
    ))  # fmt: skip
    steps.append((
        "own signer, one pass, + Ed25519 DKIM beside RSA",
        per_op(lambda: signing.seal_and_sign(raw, key, "lists.bench", RESULTS, also=(ed,)),
               seconds),
    ))  # fmt: skip
    return steps


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    milterbench.add_arguments(parser)
    args = milterbench.parse_arguments(parser)
    if not ready_for_mtas(
        "bench/vs_opendkim.py starts private Postfix instances and OpenDKIM",
        ("smtp-source", "smtp-sink", "postfix", "openssl"),
    ):
        return 1
    steps = signing_steps(1.0 if args.quick else 3.0)
    with bench_root("mtaplugin-vsodkim-") as (root, sink_port):
        url, pem = make_database(root / "signed", decorated=True, dkim="rsa")
        dkim_url, _ = make_database(root / "dkim-only", decorated=True, dkim="rsa")
        plain_url, _ = make_database(root / "plain", decorated=True, dkim=None)
        assert pem is not None
        odkim = OpenDKIM(root / "opendkim", domain=MEMBER.split("@")[1], selector="bench")
        odkim.root.mkdir(parents=True)
        odkim.key_file.write_text(pem)  # the same key as the list domain's
        odkim.key_file.chmod(0o600)
        with (
            mtaplugin_lab(root / "signed", url, sink_port) as lab,
            mtaplugin_lab(root / "plain", plain_url, sink_port) as plain,
            mtaplugin_lab(
                root / "dkim-only",
                dkim_url,
                sink_port,
                {"MTAPLUGIN_AUTHENTICATION_ARC_SEAL": "false"},
            ) as dkim_only,
            odkim,
        ):
            other = OtherMilter(root / "p-odkim", url, sink_port, "bench-odkim", odkim.milter)
            try:
                other.postfix.start()
                paths = [
                    Path_("bare Postfix", lab.postfix, lab.postfix.reinject_port, MEMBER),
                    other.path(
                        "Postfix + OpenDKIM (signing)",
                        pid=odkim.process.pid if odkim.process else None,
                    ),
                    Path_(
                        "Postfix + mtaplugin, decorated, unsigned",
                        plain.postfix,
                        plain.smtp_port,
                        LIST,
                        lab_pid(plain),
                    ),
                    Path_(
                        "Postfix + mtaplugin, decorated, DKIM-signed, no ARC seal",
                        dkim_only.postfix,
                        dkim_only.smtp_port,
                        LIST,
                        lab_pid(dkim_only),
                    ),
                    Path_(
                        "Postfix + mtaplugin, decorated, ARC-sealed + DKIM-signed",
                        lab.postfix,
                        lab.smtp_port,
                        LIST,
                        lab_pid(lab),
                    ),
                ]
                rounds(paths, args.rounds, args.messages, args.clients, args.size,
                       lambda s: print(s, file=sys.stderr))  # fmt: skip
            finally:
                other.postfix.stop()
    what = (
        f"{args.messages} messages of {args.size} bytes x {args.rounds} rounds, "
        f"{args.clients} sessions, unix sockets, SQLite, RSA 2048"
    )
    print(header("vs_opendkim", what))
    print("  one 2 kB copy's ARC set + DKIM signature, CPU time in this process:")
    rows: list[Row] = []
    first = steps[0][1]
    for name, ms in steps:
        print(f"    {name:68} {ms:7.3f} ms  ({first / ms:5.1f}x dkimpy as it is)")
        rows.append(Row(f"sign + seal 2 kB, CPU: {name}", ms, "ms", steps[0][0], ms / first))
    bare_del = paths[0].best[1]
    odkim_acc, odkim_del = paths[1].best
    print(f"  {'path':58} {'accepted/s':>10} {'delivered/s':>11} {'÷ bare':>7} {'÷ OpenDKIM':>10}"
          f" {'milter CPU ms/msg':>17}")  # fmt: skip
    for p in paths:
        acc, dlv = p.best
        print(f"  {p.name:58} {acc:10.1f} {dlv:11.1f} {dlv / bare_del:7.2f} "
              f"{dlv / odkim_del:10.2f} {p.milter_cpu_ms:17.2f}")  # fmt: skip
        rows.append(Row(f"{p.name}, delivered", dlv, "msg/s", "bare Postfix", dlv / bare_del))
        if p.milter_pid is not None:
            rows.append(Row(f"{p.name}, milter CPU per message", p.milter_cpu_ms, "ms", ""))
    ours = paths[-1].best[1] / odkim_del
    rows.append(Row("mtaplugin signed ÷ OpenDKIM, delivered", paths[-1].best[1], "msg/s",
                    "Postfix + OpenDKIM, delivered", ours, f">= {GOAL}", ours >= GOAL))  # fmt: skip
    print(f"  mtaplugin signed ÷ Postfix + OpenDKIM: {ours:.2f} delivered, "
          f"{paths[-1].best[0] / odkim_acc:.2f} accepted (goal >= {GOAL})")  # fmt: skip
    write_json(args.json, "vs_opendkim", rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
