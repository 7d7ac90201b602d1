"""The signed path against the C reference, in one run: messages/s through Postfix +
mtaplugin (a decorated list in the default configuration, ``mtaplugin serve`` with the
built-in archive on, every copy ARC-sealed and DKIM-signed) ÷ Postfix + OpenDKIM (Debian's
opendkim signing the same posts with the same RSA 2048 key); and a lone signed post's
latency ÷ bare Postfix's.

Every path is a private Postfix fed by ``smtp-source`` and delivering to ``smtp-sink``
(mtaplugin/testing/milterbench.py says how), in ``--rounds`` interleaved rounds (each
figure the median, with the lowest and highest round): bare Postfix (the posting
listener's twin without the milter), Postfix + OpenDKIM (relaying the post, signed,
``mtaplugin.testing.opendkim``) and Postfix + mtaplugin with the list's copy signed and
sealed; with ``--variants`` also the same list unsigned and signed without the ARC seal
(``authentication.arc_seal = false``: one RSA signature, as OpenDKIM).

The floor under the signed path, in the same rounds: the no-op pymilter
(``mtaplugin.testing.noop_milter --decorate --sign``) on a Postfix of its own, making a
decorated copy's edits and signing that copy with mtaplugin's own signer and the same key,
sealed (ARC set + DKIM-Signature: three RSA signatures, as mtaplugin) and DKIM only (one,
as OpenDKIM); no lookup, no decision, no database.  What any pymilter that signs reaches
here.

Lone latency: ``--lone`` posts per round, each alone in its SMTP session, from the
client's connect to the copy's arrival at a timestamping sink
(``mtaplugin.testing.benchlatency``): the member's address on bare Postfix and on
Postfix + OpenDKIM (signed), a 1-member list like the measured one (signed and sealed) on
mtaplugin's listener, and the no-op signer's copy (sealed and signed, and DKIM only);
after mtaplugin's worker has archived every post of the rounds (as bare Postfix's lone
posts come once its queue is empty).

Before that, in this process, what one 2 kB copy's ARC set + DKIM signature costs, step by
step: dkimpy as it is (pure-Python RSA), dkimpy with RSA through OpenSSL (the previous
code), mtaplugin's own signer in two passes (ARC set, then DKIM signature: body hash and
header canonicalization twice) and in one pass (both shared), and one pass with an
Ed25519 DKIM signature beside the RSA one (RFC 8463).

    .venv/bin/python bench/vs_opendkim.py [--quick] [--json PATH] [--messages 1000]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from collections.abc import Callable

import dkim
from sqlalchemy import text

from mtaplugin.db import make_engine
from mtaplugin.mailauth import openssl_rsa, signing
from mtaplugin.mailauth.service import install
from mtaplugin.mailauth.signing import SigningKey
from mtaplugin.testing import benchreport, milterbench, noop_journal
from mtaplugin.testing.benchdb import ready_for_mtas
from mtaplugin.testing.benchlatency import Events, LatencySink, lone_post
from mtaplugin.testing.benchreport import Goal, Spread, interleaved, progress
from mtaplugin.testing.milterbench import (
    LIST,
    LIST_DOMAIN,
    LONE_LIST,
    LONE_MEMBER,
    MEMBER,
    OtherMilter,
    Path_,
    bare_port,
    bench_root,
    header,
    lab_pid,
    make_database,
    mtaplugin_lab,
    noop_milter,
    rounds,
)
from mtaplugin.testing.noop_journal import FLOOR_DB
from mtaplugin.testing.opendkim import OpenDKIM

#: the no-op signers (``noop_milter --sign``): name, title, options
NOOPS = (
    ("noop-sealed", "no-op pymilter, decorated, ARC-sealed + DKIM-signed", ()),
    ("noop-dkim", "no-op pymilter, decorated, DKIM-signed (one signature)", ("--dkim-only",)),
    # the required-work floor: each post also committed to a journal before the 250 and
    # drained into a compressed archive + FTS5 index (``--journal`` takes the file after)
    ("noop-journal", "no-op pymilter, decorated, sealed + signed, journal + archiver",
     ("--archiver", "--journal")),
)  # fmt: skip
#: issue 34's goals
GOAL = Goal(">=", 0.8)
GOAL_LATENCY = Goal("<=", 1.2)
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
    pure = openssl_rsa._dkimpy_rsa_sign or saved
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


def signing_rounds(rounds: int, seconds: float) -> list[tuple[str, Spread]]:
    """``signing_steps`` in ``rounds`` interleaved rounds: each step's median and spread."""
    found: dict[str, list[float]] = {}
    for r in range(rounds):
        for name, ms in signing_steps(seconds):
            found.setdefault(name, []).append(ms)
        progress(f"signing steps, round {r + 1}/{rounds}")
    return [(name, Spread.of(values)) for name, values in found.items()]


def lone_rounds(
    events: Events, paths: list[tuple[str, int, str, str]], rounds: int, per_round: int
) -> dict[str, list[float]]:
    """``rounds`` interleaved rounds of ``per_round`` lone posts on each (name, port,
    sender, recipient): the median latency of each round, in seconds."""
    found: dict[str, list[float]] = {name: [] for name, *_ in paths}
    n = 0
    for r, (name, port, sender, rcpt) in interleaved(rounds, paths):
        times = []
        for _ in range(per_round):
            n += 1
            times.append(lone_post(events, port, sender, rcpt, f"lone{r}-{n}"))
            time.sleep(0.2)  # let Postfix's delivery end before the next one
        found[name].append(statistics.median(times))
        progress(f"lone posts, round {r + 1}/{rounds} {name}: {found[name][-1] * 1000:.0f} ms")
    return found


def wait_drained(urls: dict[str, str], timeout: float = 600.0) -> None:
    """Until mtaplugin's worker has fanned out every post of the rounds (the journal of
    accepted posts empty: archived), so that a lone post is measured alone and not
    beside the archiving of thousands, as bare Postfix's is once its queue is empty."""
    engines = [make_engine(url) for url in urls.values()]
    start = time.monotonic()
    try:
        while time.monotonic() - start < timeout:
            left = 0
            for engine in engines:
                with engine.connect() as conn:
                    query = "SELECT count(*) FROM accepted_posts WHERE NOT failed"
                    left += conn.execute(text(query)).scalar_one()
            if not left:
                break
            time.sleep(0.5)
        progress(f"the worker drained the rounds' posts in {time.monotonic() - start:.0f} s")
    finally:
        for engine in engines:
            engine.dispose()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    milterbench.add_arguments(parser)
    parser.add_argument("--lone", type=int, default=3, help="lone posts per path and round")
    parser.add_argument(
        "--variants",
        action="store_true",
        help="also the list unsigned and signed without the ARC seal (two more mtaplugin's)",
    )
    benchreport.add_arguments(parser)
    args = milterbench.apply_quick(parser.parse_args())
    if not ready_for_mtas(
        "bench/vs_opendkim.py starts private Postfix instances and OpenDKIM",
        ("smtp-source", "smtp-sink", "postfix", "openssl"),
    ):
        return 1
    report = benchreport.Report("vs_opendkim")
    steps = signing_rounds(args.rounds, 0.2 if args.quick else 0.6)
    with bench_root("mtaplugin-vsodkim-") as (root, sink_port), LatencySink(root / "lat") as lat:
        dbs = {"signed": "rsa"} | ({"plain": None, "dkim-only": "rsa"} if args.variants else {})
        urls: dict[str, str] = {}
        pem = None
        for name, dkim in dbs.items():
            (root / name).mkdir()
            urls[name] = f"sqlite:///{root / name / 'bench.db'}"
            key = make_database(urls[name], dkim=dkim)
            pem = pem or key
        assert pem is not None
        odkim = OpenDKIM(root / "opendkim", domain=MEMBER.split("@")[1], selector="bench")
        odkim.root.mkdir(parents=True)
        odkim.key_file.write_text(pem)  # the same key as the list domain's
        odkim.key_file.chmod(0o600)
        pids: dict[str, int] = {}
        with contextlib.ExitStack() as stack:
            labs = {
                name: stack.enter_context(
                    mtaplugin_lab(
                        root / name,
                        url,
                        sink_port,
                        {"MTAPLUGIN_AUTHENTICATION_ARC_SEAL": "false"}
                        if name == "dkim-only"
                        else None,
                        latency_transport=lat.transport,
                    )
                )
                for name, url in urls.items()
            }
            stack.enter_context(odkim)
            lab = labs["signed"]
            # its own copy of the list database: Postfix's sqlite: lookups set no busy
            # timeout, and the signed lab's archive writes would fail them
            (root / "odkim-db").mkdir()
            odkim_url = f"sqlite:///{root / 'odkim-db' / 'bench.db'}"
            make_database(odkim_url)
            other = OtherMilter(root / "p-odkim", odkim_url, sink_port, "bench-odkim",
                                odkim.milter)  # fmt: skip
            others = {"odkim": other}
            for name, _title, more in NOOPS:
                sock, pid = stack.enter_context(noop_milter(
                    root / name, "same", True, "--sign", str(odkim.key_file),
                    "--lone-to", LONE_MEMBER, *more,
                    *([str(root / name / FLOOR_DB)] if "--journal" in more else [])))  # fmt: skip
                others[name] = OtherMilter(root / f"p-{name}", odkim_url, sink_port,
                                           f"bench-{name}", sock)  # fmt: skip
                pids[name] = pid
            for o in others.values():
                o.postfix.extra_main["transport_maps"] = lat.transport
                o.postfix.start()
                stack.callback(o.postfix.stop)
            floors = {  # made now: the archivers' start is not in their CPU
                name: noop_journal.Floor(root / name / FLOOR_DB, pids[name])
                for name, _t, more in NOOPS
                if "--journal" in more
            }
            paths = [
                Path_("bare Postfix", lab.postfix, bare_port(lab), MEMBER),
                other.path(
                    "Postfix + OpenDKIM (signing)",
                    pid=odkim.process.pid if odkim.process else None,
                ),
            ]
            paths += [others[name].path(title, pid=pids[name]) for name, title, _ in NOOPS]
            for name, title in (
                ("plain", "Postfix + mtaplugin, decorated, unsigned"),
                ("dkim-only", "Postfix + mtaplugin, decorated, DKIM-signed, no ARC seal"),
                ("signed", "Postfix + mtaplugin, decorated, ARC-sealed + DKIM-signed"),
            ):
                if name in labs:
                    it = labs[name]
                    paths.append(Path_(title, it.postfix, it.smtp_port, LIST, lab_pid(it)))
            rounds(paths, args.rounds, args.messages, args.clients, args.size)
            wait_drained(urls)
            latency = lone_rounds(
                lat.events,
                [
                    ("bare Postfix", bare_port(lab), LONE_MEMBER, LONE_MEMBER),
                    ("Postfix + OpenDKIM", other.postfix.smtp_port, LONE_MEMBER, LONE_MEMBER),
                    *(
                        (title, others[name].postfix.smtp_port, LONE_MEMBER, LONE_LIST)
                        for name, title, _ in NOOPS
                    ),
                    ("mtaplugin signed and sealed", lab.smtp_port, LONE_MEMBER, LONE_LIST),
                ],
                args.rounds,
                args.lone,
            )
            for floor in floors.values():  # the archive caught up, the CPU since
                floor.settle()
    what = (
        f"{args.messages} messages of {args.size} bytes x {args.rounds} interleaved rounds, "
        f"{args.clients} sessions, unix sockets, SQLite, archive on, RSA 2048"
    )
    print(header("vs_opendkim", what))
    print("  one 2 kB copy's ARC set + DKIM signature, CPU time in this process:")
    first = steps[0][1].median
    for name, ms in steps:
        report.add(f"sign + seal 2 kB, CPU: {name}", ms, "ms", baseline=steps[0][0],
                   ratio=ms.median / first)  # fmt: skip
    bare, odkim_path, ours = paths[0], paths[1], paths[-1]
    noops = paths[2 : 2 + len(NOOPS)]
    report.add(f"{bare.name}, delivered", bare.delivered_s, "msg/s")
    for p in paths[1:]:
        report.add(f"{p.name}, delivered", p.delivered_s, "msg/s", baseline="bare Postfix",
                   ratio=Spread.ratios(p.delivered, bare.delivered))  # fmt: skip
        if p.cpu_pid is not None:
            report.add(f"{p.name}, CPU per message", p.cpu, "ms")
    report.add(
        "mtaplugin signed and sealed ÷ Postfix + OpenDKIM, delivered/s",
        ours.delivered_s,
        "msg/s",
        baseline=f"Postfix + OpenDKIM {odkim_path.delivered_s.text(0)}/s",
        ratio=Spread.ratios(ours.delivered, odkim_path.delivered),
        goal=GOAL,
        key="signed",
    )
    report.add(
        "mtaplugin signed and sealed ÷ Postfix + OpenDKIM, accepted/s",
        ours.accepted_s,
        "msg/s",
        baseline=f"Postfix + OpenDKIM {odkim_path.accepted_s.text(0)}/s",
        ratio=Spread.ratios(ours.accepted, odkim_path.accepted),
    )
    for p in noops:  # the floor: what any pymilter that signs reaches here
        report.add(
            f"floor: {p.name} ÷ Postfix + OpenDKIM, delivered/s",
            p.delivered_s,
            "msg/s",
            baseline=f"Postfix + OpenDKIM {odkim_path.delivered_s.text(0)}/s",
            ratio=Spread.ratios(p.delivered, odkim_path.delivered),
        )
    for (name, title, _more), p in zip(NOOPS, noops, strict=True):
        if name in floors:
            floors[name].rows(report, title, p.sent + args.rounds * args.lone)
    lone_ms = {name: [s * 1000 for s in values] for name, values in latency.items()}
    bare_lone = f"bare Postfix {Spread.of(lone_ms['bare Postfix']).text(1)} ms"
    report.add(
        "signed lone latency ÷ bare Postfix's (connect to the copy at the sink)",
        Spread.of(lone_ms["mtaplugin signed and sealed"]),
        "ms",
        baseline=bare_lone,
        ratio=Spread.ratios(lone_ms["mtaplugin signed and sealed"], lone_ms["bare Postfix"]),
        goal=GOAL_LATENCY,
        key="signed-latency",
    )
    for name in ["Postfix + OpenDKIM", *(title for _n, title, _m in NOOPS)]:
        report.add(
            f"floor: {name}, lone latency ÷ bare Postfix's",
            Spread.of(lone_ms[name]),
            "ms",
            baseline=bare_lone,
            ratio=Spread.ratios(lone_ms[name], lone_ms["bare Postfix"]),
        )
    report.write(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
