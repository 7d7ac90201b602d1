"""What each kind of mail in bench/load.py's mix costs a decision, in CPU, without an MTA:
one command, the figures of docs/benchmarks.md ("The load mix").

On a SQLite database set up as bench/load.py sets up its own (a 5-member list with its
owner and a banned address, ``mtaplugin.testing.loadbench``), one process decides
``--posts`` mails of each kind of the mix with ``ListEngine.decide``, timed with
``time.process_time``: a member's post (accepted, fanned out in place), a nonmember's
(held: the held row, the moderators' notice, the poster on the nonmember roster), a
banned poster's (refused), an email command (``help`` to ``-request``: its reply) and a
bounce (a DSN to ``-bounces`` that names no member: recorded, forwarded to the owner).
Each kind's CPU is printed beside its ratio to a member's post, the baseline of the same
run, and the mix's weighted mean (the CPU a post of bench/load.py costs the milter's
decisions on average).

``--profile KIND`` prints cProfile's top functions of that kind.

    .venv/bin/python bench/profile_mix.py [--posts 500] [--profile nonmember]
"""

from __future__ import annotations

import argparse
import cProfile
import logging
import pstats
import sys
import tempfile
import time
from pathlib import Path

from mtaplugin.db import make_engine, sessionmaker_for
from mtaplugin.engine import ListEngine
from mtaplugin.testing import loadbench
from mtaplugin.vocabulary.envelope import Envelope


def envelope(sender: str, recipients: list[str]) -> Envelope:
    return Envelope(
        mail_from=sender,
        recipients=[f"<{r}>" for r in recipients],
        queue_id="BENCH",
        client_address="127.0.0.1",
        helo="load.client",
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--posts", type=int, default=500, help="mails of each kind")
    parser.add_argument("--profile", choices=sorted(loadbench.MIX), help="cProfile this kind")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="mtaplugin-mix-") as tmp:
        url = f"sqlite:///{Path(tmp) / 'mix.db'}"
        loadbench.setup(url)
        db = make_engine(url)
        engine = ListEngine(sessionmaker_for(db))
        cpu: dict[str, float] = {}
        for kind in loadbench.MIX:
            mails = [loadbench.post("bench", kind, n) for n in range(args.posts)]
            sender, rcpts, raw = loadbench.post("warm", kind, 0)
            first = engine.decide(envelope(sender, rcpts), raw)  # the snapshot, the caches
            profile = cProfile.Profile() if args.profile == kind else None
            start = time.process_time()
            if profile is not None:
                profile.enable()
            for sender, rcpts, raw in mails:
                engine.decide(envelope(sender, rcpts), raw)
            if profile is not None:
                profile.disable()
            cpu[kind] = (time.process_time() - start) / args.posts * 1000
            outcomes = ", ".join(type(o).__name__ for o in first.outcomes)
            print(f"  {kind}: {cpu[kind]:.2f} ms ({type(first).__name__}: {outcomes})", flush=True)
            if profile is not None:
                pstats.Stats(profile).sort_stats("cumulative").print_stats(40)
        engine.close()
        db.dispose()
    base = cpu["member"]
    total = sum(loadbench.MIX.values())
    mean = sum(cpu[k] * share for k, share in loadbench.MIX.items()) / total
    print(f"CPU per decision, {args.posts} of each kind (ratio: ÷ a member's post):")
    for kind, share in loadbench.MIX.items():
        print(f"  {kind:10s} {share:3d} % of the mix  {cpu[kind]:6.2f} ms  {cpu[kind] / base:5.2f}")
    print(f"  the mix's mean: {mean:.2f} ms, {mean / base:.2f} of a member's post")
    return 0


if __name__ == "__main__":
    sys.exit(main())
