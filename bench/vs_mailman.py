"""End to end against the limit and GNU Mailman 3.3.10, on one private Postfix.

One private Postfix (built from contrib/postfix/, as the labs are) and one counting sink
standing in for the members' servers (``mtaplugin.testing.counting_sink``: a line per
transaction, with the post it carried) serve every system measured here:

* **the limit**: bare Postfix fanning the post out from one queue file, the members
  added where mtaplugin's milter adds them (``mtaplugin.testing.benchlimit``): each post
  is one submission with one ``RCPT TO``, a list address that the cleanup server of the
  limit's listener (no milter) expands to the list's members through Postfix's own
  ``virtual_alias_maps`` (a ``hash:`` table the bench writes).  Before the rounds the
  bench checks in the maillog that each of its posts made one queue file with every
  member.  Signed, the post is ARC-sealed and DKIM-signed by the bench before it is sent
  (as it leaves a signing list manager), so the limit carries the same bytes and Postfix
  does the same work;
* **postfix-rcpt** (context, unsigned, no goal): the limit as it was measured before,
  the members sent as 1 000 ``RCPT TO`` commands in one pipelined transaction, which
  costs Postfix's smtpd and trivial-rewrite more per post than the expansion in cleanup;
* **mtaplugin**: ``mtaplugin serve`` as the milter of the posting listener, in the default
  configuration (the built-in archive on): the post is decided, decorated and expanded in
  place during the SMTP transaction; signed, to the same list in a domain with a DKIM key
  (every copy ARC-sealed and DKIM-signed by mtaplugin);
* **GNU Mailman 3.3.10** (``--systems`` with ``mailman-default``, ``mailman-tuned``; a
  throw-away virtualenv, bench/mailman_runners.py): Postfix hands the post over LMTP,
  Mailman's runners decorate it and submit the copies back over SMTP.  Once on its
  defaults, once tuned as its documentation allows.  Mailman cannot sign, so, as its users
  do, OpenDKIM is the milter of its outgoing listener when signed.

The same list on each (``--members`` members over 50 domains; Mailman's default
decorations), the same posts.  ``--rounds`` interleaved rounds (default 5; the systems
take turns, in alternating order): each round is, per system, unsigned then signed,
``--lone`` lone posts (the median is the round's latency: from the client's connect to
the first member's copy at the sink), a burst of ``--posts`` posts over ``--clients``
sessions (posts/s and copies/s from the first submission to the last copy; the median
latency of its posts), the RSS and PSS of the system's process tree after the burst, and
(unsigned) ``--big-posts`` posts to the ``--big-members`` list until the last copy.  Each
figure is the median of the rounds with the lowest and highest beside it; a ratio is the
median of the per-round ratios.

    .venv/bin/python bench/vs_mailman.py [--quick] [--json PATH] [--posts 30]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from burst import BenchPostfix, Round, Runner, Target
from mailman_runners import Mailman

from mtaplugin.db import make_engine, sessionmaker_for, upgrade
from mtaplugin.mailauth import signing
from mtaplugin.manage import dkim as dkim_keys
from mtaplugin.manage import domains, lists, members
from mtaplugin.testing import benchlimit, benchreport, free_port, wait_for_port
from mtaplugin.testing.benchdb import machine_load, ready_for_mtas, tree_pids
from mtaplugin.testing.benchlatency import Events
from mtaplugin.testing.benchreport import Goal, Spread, interleaved, progress
from mtaplugin.testing.lab import Lab
from mtaplugin.testing.mailman_venv import VERSION as MAILMAN_VERSION
from mtaplugin.testing.opendkim import OpenDKIM
from mtaplugin.testing.postfix import PrivatePostfix

MP_DOMAIN = "lists.mp.bench"
#: the same lists in a domain with a DKIM key: mtaplugin signs and seals every copy
MPS_DOMAIN = "lists.mps.bench"
MM_DOMAIN = "lists.mm.bench"
#: the limit's list addresses, expanded by its cleanup server (``virtual_alias_maps``)
LIMIT_DOMAIN = "limit.bench"
LIMIT_LIST = f"bench@{LIMIT_DOMAIN}"
LIMIT_BIG = f"big@{LIMIT_DOMAIN}"
DOMAINS = 50
POSTER = "m00000@d0.example"
#: issue 23's goals
GOAL_OF_LIMIT = Goal(">=", 0.9)
GOAL_OVER_TUNED = Goal(">=", 5.0)
GOAL_LATENCY = Goal("<=", 1.2)
GOAL_MEMORY = Goal("<=", 0.25)
SYSTEMS = ("limit", "mtaplugin", "postfix-rcpt", "mailman-default", "mailman-tuned")
#: the systems that post to the big list too
BIG = ("limit", "mtaplugin", "mailman-tuned")


def member(i: int) -> str:
    return f"m{i:05d}@d{i % DOMAINS}.example"


def big_member(i: int) -> str:
    return POSTER if i == 0 else f"b{i:05d}@d{i % DOMAINS}.example"


def mailman_tree(mailman: Mailman, signer: OpenDKIM | None) -> Callable[[], list[int]]:
    """Mailman's process tree, and OpenDKIM's when it signs Mailman's copies."""
    return lambda: mailman.tree() + (signer.pids() if signer is not None else [])


def setup_database(url: str, n_members: int, n_big: int) -> signing.SigningKey:
    """mtaplugin's lists in both domains; the signing domain's key, for the limit's post."""
    upgrade(url)
    engine = make_engine(url)
    with sessionmaker_for(engine).begin() as s:
        for domain in (MP_DOMAIN, MPS_DOMAIN):
            domains.create(s, domain)
            mlist = lists.create(s, f"bench@{domain}")
            members.add_many(s, mlist, [(member(i), "") for i in range(n_members)])
        big = lists.create(s, f"big@{MP_DOMAIN}")
        members.add_many(s, big, [(big_member(i), "") for i in range(n_big)])
        key = dkim_keys.create(s, MPS_DOMAIN, "bench", activate=True)
        signer = signing.SigningKey(
            MPS_DOMAIN, "bench", key.private_key.encode(), tuple(key.signed_headers.split(":"))
        )
    engine.dispose()
    return signer


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--members", type=int, default=1000)
    parser.add_argument("--posts", type=int, default=30, help="posts in each burst")
    parser.add_argument("--lone", type=int, default=3, help="lone posts per round")
    parser.add_argument("--clients", type=int, default=4, help="posting SMTP sessions")
    parser.add_argument("--big-members", type=int, default=10_000)
    parser.add_argument("--big-posts", type=int, default=5, help="posts to the big list a round")
    parser.add_argument(
        "--systems",
        default=",".join(SYSTEMS),
        help=f"comma-separated, some of {', '.join(SYSTEMS)} (the limit and mtaplugin always)",
    )
    parser.add_argument("--no-signed", action="store_true", help="skip the signed posts")
    benchreport.add_arguments(parser)
    args = parser.parse_args()
    if args.quick:
        args.members, args.posts, args.lone, args.rounds = 100, 5, 1, min(args.rounds, 3)
        args.big_members, args.big_posts = 500, 2
    systems = [s for s in SYSTEMS if s in {"limit", "mtaplugin", *args.systems.split(",")}]
    if not ready_for_mtas("bench/vs_mailman.py starts a private Postfix", ("postfix",)):
        return 1
    report = benchreport.Report("vs_mailman")
    root = Path(tempfile.mkdtemp(prefix="mtaplugin-bench-vsmm-", dir="/tmp"))
    os.chmod(root, 0o755)
    url = f"sqlite:///{root / 'bench.db'}"
    signer_key = setup_database(url, args.members, args.big_members)
    events = Events(root / "sink.events")
    sink_port = free_port()
    sink = subprocess.Popen(
        [sys.executable, "-m", "mtaplugin.testing.counting_sink", str(sink_port),
         str(events.path)],
        start_new_session=True,
    )  # fmt: skip
    wait_for_port(sink_port)
    lab = Lab(
        root=root / "lab",
        database_url=url,
        name="mtaplugin-vsmm",
        external_sink_port=sink_port,
        env={"MTAPLUGIN_DATABASE_TIMEOUT": "5"},  # the packaged default
    )
    everyone = [member(i) for i in range(args.members)]
    big_list = [big_member(i) for i in range(args.big_members)]
    postfix = BenchPostfix(
        **{f.name: getattr(lab.postfix, f.name) for f in fields(PrivatePostfix)},
        mailman_in_port=free_port(),
        out_port=free_port(),
        limit_port=free_port(),
        rcpt_port=free_port(),
        limit_aliases={LIMIT_LIST: everyone, LIMIT_BIG: big_list},
    )
    lab.postfix = postfix
    mailman = (
        Mailman(root / "mailman", postfix, postfix.out_port, MM_DOMAIN)
        if any(s.startswith("mailman") for s in systems)
        else None
    )
    opendkim = OpenDKIM(root / "opendkim", MM_DOMAIN)
    # The list domains as contrib/postfix/main.cf has them by default (a hash table, here
    # written by the bench), then Mailman's own tables.
    ours = root / "mtaplugin_domains"
    ours.write_text(f"{MP_DOMAIN} OK\n{MPS_DOMAIN} OK\n")
    postfix.relay_domains = f"hash:{ours}"
    postfix.extra_main = {"vsm_out_milters": ""}
    if mailman is not None:
        domains_map, lmtp_map = mailman.maps
        postfix.relay_domains = f"{domains_map}, hash:{ours}"
        postfix.extra_main["transport_maps"] = lmtp_map
    runner = Runner(events, args)
    found: dict[tuple[str, bool], list[Round]] = {}
    big: dict[str, list[float]] = {}
    signedness = [False] if args.no_signed else [False, True]
    timeout = 300.0
    try:
        postfix.write_config()
        subprocess.run(["postmap", "-c", str(postfix.conf), str(ours)], check=True)
        if mailman is not None:
            progress("Mailman: seeding its database and its Postfix maps")
            mailman.seed(POSTER, args.members, args.big_members, member, big_member)
            opendkim.start()
        lab.start()
        targets = {
            ("limit", False): Target(postfix.limit_port, [LIMIT_LIST], LIMIT_LIST, POSTER),
            ("limit", True): Target(postfix.limit_port, [LIMIT_LIST], LIMIT_LIST, POSTER,
                                    signer_key),
            ("postfix-rcpt", False): Target(postfix.rcpt_port, everyone, LIMIT_LIST, POSTER),
            ("mtaplugin", False): Target(postfix.smtp_port, [f"bench@{MP_DOMAIN}"],
                                         f"bench@{MP_DOMAIN}", POSTER),
            ("mtaplugin", True): Target(postfix.smtp_port, [f"bench@{MPS_DOMAIN}"],
                                        f"bench@{MPS_DOMAIN}", POSTER),
        }  # fmt: skip
        bigs = {
            "limit": Target(postfix.limit_port, [LIMIT_BIG], LIMIT_BIG, POSTER),
            "mtaplugin": Target(postfix.smtp_port, [f"big@{MP_DOMAIN}"], f"big@{MP_DOMAIN}",
                                POSTER),
        }  # fmt: skip
        for name in ("mailman-default", "mailman-tuned"):
            for signed in (False, True):
                targets[(name, signed)] = Target(
                    postfix.mailman_in_port, [f"bench@{MM_DOMAIN}"], f"bench@{MM_DOMAIN}", POSTER
                )
            bigs[name] = Target(
                postfix.mailman_in_port, [f"big@{MM_DOMAIN}"], f"big@{MM_DOMAIN}", POSTER
            )
        progress(f"warm-up of the limit and mtaplugin (load {machine_load()})")
        for name in [s for s in systems if not s.startswith("mailman")]:
            for signed in signedness:
                if (name, signed) in targets:
                    runner.warm(targets[(name, signed)], timeout)
            if args.big_posts and name in BIG:
                runner.warm(bigs[name], timeout * 10)
        expected = [args.members] * len(signedness) + [args.big_members] * bool(args.big_posts)
        benchlimit.check_one_queue_file(postfix.maillog, postfix.name, expected)
        progress(f"the limit: one queue file per post, with {expected} recipients (maillog)")
        proc = lab.runner.process
        assert proc is not None
        trees: dict[str, Callable[[], list[int]]] = {
            "limit": list,
            "postfix-rcpt": list,
            "mtaplugin": lambda: tree_pids(proc.pid),
        }
        for r, name in interleaved(args.rounds, systems):
            if name.startswith("mailman"):
                assert mailman is not None
                mailman.start(tuned=name == "mailman-tuned")
            try:
                for signed in signedness if r % 2 == 0 else signedness[::-1]:
                    if (name, signed) not in targets:
                        continue
                    target = targets[(name, signed)]
                    tree = trees.get(name)
                    if name.startswith("mailman"):
                        assert mailman is not None
                        postfix.set_out_milters(opendkim.milter if signed else "")
                        runner.warm(target, timeout)  # (its copies per post, its runners busy)
                        tree = mailman_tree(mailman, opendkim if signed else None)
                    assert tree is not None
                    done = runner.measure(target, tree, timeout)
                    found.setdefault((name, signed), []).append(done)
                    progress(
                        f"round {r + 1}/{args.rounds} {name}{' signed' if signed else ''}: "
                        f"{done.posts_per_s:.2f} posts/s, lone post "
                        f"{done.lone_latency * 1000:.0f} ms, RSS {done.rss_kib / 1024:.0f} MiB"
                    )
                if args.big_posts and name in BIG:
                    if name.startswith("mailman"):
                        runner.warm(bigs[name], timeout * 10)
                    big.setdefault(name, []).append(runner.big(bigs[name]))
                    progress(f"round {r + 1}/{args.rounds} {name}: {args.big_posts} posts to "
                             f"{args.big_members} members in {big[name][-1]:.1f} s")  # fmt: skip
            finally:
                if name.startswith("mailman") and mailman is not None:
                    mailman.stop()
    finally:
        lab.stop()
        if mailman is not None:
            mailman.stop()
            opendkim.stop()
        sink.terminate()
        sink.wait(10)
        if os.environ.get("VSMM_KEEP"):
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    rows(found, big, args, report)
    report.write(args.json)
    return 0


def rows(
    found: dict[tuple[str, bool], list[Round]],
    big: dict[str, list[float]],
    args: argparse.Namespace,
    report: benchreport.Report,
) -> None:
    print(
        f"\nvs_mailman: load {machine_load()}; {args.members} members over {DOMAINS} domains, "
        f"bursts of {args.posts} posts over {args.clients} sessions, {args.rounds} interleaved "
        f"rounds, lone latency the median of {args.lone} a round; GNU Mailman {MAILMAN_VERSION}"
    )

    def get(system: str, signed: bool, what: str) -> list[float]:
        return [float(getattr(r, what)) for r in found.get((system, signed), [])]

    for signed in sorted({s for _n, s in found}):
        label = "signed" if signed else "unsigned"
        systems = [n for n in SYSTEMS if (n, signed) in found]
        mailmans = [n for n in systems if n.startswith("mailman")]
        for n in systems:
            report.add(f"{label} {n}: posts/s", Spread.of(get(n, signed, "posts_per_s")), "posts/s")
            report.add(f"{label} {n}: copies/s", Spread.of(get(n, signed, "copies_per_s")),
                       "copies/s")  # fmt: skip
        ours = get("mtaplugin", signed, "posts_per_s")
        limit = get("limit", signed, "posts_per_s")
        report.add(f"{label}: mtaplugin ÷ the limit (bare Postfix fanning the post out from one "
                   "queue file, the members added by its cleanup), posts/s", Spread.of(ours),
                   "posts/s", baseline=f"the limit {Spread.of(limit).text()}/s",
                   ratio=Spread.ratios(ours, limit), goal=GOAL_OF_LIMIT, limit=True)  # fmt: skip
        if "postfix-rcpt" in systems:
            rcpt = get("postfix-rcpt", signed, "posts_per_s")
            report.add(f"{label}: mtaplugin ÷ Postfix receiving {args.members} RCPT TO (the "
                       "members sent by the client, not a limit), posts/s", Spread.of(ours),
                       "posts/s", baseline=f"postfix-rcpt {Spread.of(rcpt).text()}/s",
                       ratio=Spread.ratios(ours, rcpt))  # fmt: skip
            report.add(f"{label}: the limit ÷ Postfix receiving {args.members} RCPT TO, posts/s",
                       Spread.of(limit), "posts/s",
                       baseline=f"postfix-rcpt {Spread.of(rcpt).text()}/s",
                       ratio=Spread.ratios(limit, rcpt))  # fmt: skip
        for n in mailmans:
            theirs = get(n, signed, "posts_per_s")
            report.add(f"{label}: mtaplugin ÷ {n}, posts/s", Spread.of(ours), "posts/s",
                       baseline=f"{n} {Spread.of(theirs).text()}/s",
                       ratio=Spread.ratios(ours, theirs),
                       goal=GOAL_OVER_TUNED if n == "mailman-tuned" else None)  # fmt: skip
        for what, text in (("lone_latency", "lone post"), ("burst_latency", "in the burst")):
            for n in systems:
                report.add(f"{label} {n}: connect → first copy, {text}",
                           Spread.of([t * 1000 for t in get(n, signed, what)]), "ms")  # fmt: skip
        ours_t, limit_t = (
            get("mtaplugin", signed, "lone_latency"),
            get("limit", signed, "lone_latency"),
        )
        report.add(f"{label}: mtaplugin lone latency ÷ the limit's",
                   Spread.of([t * 1000 for t in ours_t]), "ms",
                   baseline=f"the limit {Spread.of([t * 1000 for t in limit_t]).text(1)} ms",
                   ratio=Spread.ratios(ours_t, limit_t), goal=GOAL_LATENCY)  # fmt: skip
        for what in ("rss_kib", "pss_kib"):
            mine = [k / 1024 for k in get("mtaplugin", signed, what)]
            unit = what[:3].upper()
            report.add(f"{label} mtaplugin: {unit} of its process tree", Spread.of(mine), "MiB")
            for n in mailmans:
                theirs = [k / 1024 for k in get(n, signed, what)]
                report.add(f"{label}: mtaplugin {unit} ÷ {n}", Spread.of(mine), "MiB",
                           baseline=f"{n} {Spread.of(theirs).text(0)} MiB",
                           ratio=Spread.ratios(mine, theirs), goal=GOAL_MEMORY)  # fmt: skip
    for n, seconds in big.items():
        if n == "limit":
            report.add(f"{args.big_posts} posts to {args.big_members} members, the limit: "
                       "until the last copy", Spread.of(seconds), "s")  # fmt: skip
        elif "limit" in big:
            report.add(f"{args.big_posts} posts to {args.big_members} members, {n} ÷ the limit: "
                       "time until the last copy", Spread.of(seconds), "s",
                       baseline=f"the limit {Spread.of(big['limit']).text(1)} s",
                       ratio=Spread.ratios(seconds, big["limit"]))  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
