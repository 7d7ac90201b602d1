"""What bench/load.py keeps of a round over 1 % 4xx (mtaplugin/testing/loadevidence.py): the
phase's own lines of Postfix's log and of mtaplugin's, and one line that says which reply,
how many, at which stage Postfix gave it, and what mtaplugin wrote meanwhile."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from mtaplugin.testing import loadevidence
from mtaplugin.testing.loadbench import Phase, Result

SOCK = "unix:/tmp/mtaplugin-load-x/lab/milter.sock"
BEFORE_PHASE = (
    "Dec 05 21:12:40 mtaplugin-bench mtaplugin-bench/cleanup[7001]: warning: milter "
    f"{SOCK}: can't read SMFIC_BODYEOB reply packet header: Broken pipe\n"
)
PHASE = (
    "Dec 05 21:12:55 mtaplugin-bench mtaplugin-bench/cleanup[7257]: warning: milter "
    f"{SOCK}: can't read SMFIC_BODYEOB reply packet header: Connection reset by peer\n"
    "Dec 05 21:12:55 mtaplugin-bench mtaplugin-bench/cleanup[7257]: 4A1B2C3D4E5: "
    "milter-reject: END-OF-MESSAGE from localhost[127.0.0.1]: 4.7.1 Service unavailable - "
    "try again later; from=<m1@members.load> to=<team@lists.load> proto=ESMTP helo=<x>\n"
    "Dec 05 21:12:56 mtaplugin-bench mtaplugin-bench/smtpd/smtpd[27758]: warning: connect "
    f"to Milter service {SOCK}: Connection refused\n"
    "Dec 05 21:12:56 mtaplugin-bench mtaplugin-bench/smtpd/smtpd[27758]: NOQUEUE: "
    "milter-reject: CONNECT from localhost[127.0.0.1]: 451 4.7.1 Service unavailable - try "
    "again later; proto=SMTP\n"
    "Dec 05 21:12:57 mtaplugin-bench mtaplugin-bench/smtpd/smtpd[27833]: warning: connect "
    f"to Milter service {SOCK}: Connection refused\n"
    "Dec 05 21:12:57 mtaplugin-bench mtaplugin-bench/smtpd/smtpd[27833]: NOQUEUE: "
    "milter-reject: CONNECT from localhost[127.0.0.1]: 451 4.7.1 Service unavailable - try "
    "again later; proto=SMTP\n"
    "Dec 05 21:12:57 mtaplugin-bench mtaplugin-bench/cleanup[7300]: 5B1B2C3D4E6: "
    "milter-reject: END-OF-MESSAGE from localhost[127.0.0.1]: 5.7.1 banned@senders.load "
    "may not post; from=<banned@senders.load> to=<team@lists.load> proto=ESMTP helo=<x>\n"
)
OURS = (
    "2026-12-05 21:12:55,001 mtaplugin.decision INFO decision queue_id=4A1B2C3D4E5 ...\n"
    "Fatal Python error: Segmentation fault\n\n"
    "2026-12-05 21:12:56,404 mtaplugin.supervisor ERROR milter exited with -11; "
    "restarting in 1 s\n"
)
TEMPFAIL = "451 4.7.1 Service unavailable - try again later"


def test_a_bad_round_keeps_its_own_lines_and_names_the_reply_the_stage_and_the_crash(
    tmp_path: Path,
) -> None:
    maillog, ours = tmp_path / "maillog", tmp_path / "mtaplugin.log"
    maillog.write_text(BEFORE_PHASE)
    ours.write_text("2026-12-05 21:12:40,000 mtaplugin.supervisor INFO serving: ...\n")
    lab = SimpleNamespace(
        postfix=SimpleNamespace(maillog=maillog),
        runner=SimpleNamespace(log_file=ours),
        process=None,
    )
    since = loadevidence.mark(lab)  # type: ignore[arg-type]
    with open(maillog, "a") as f:
        f.write(PHASE)
    with open(ours, "a") as f:
        f.write(OURS)
    phase = Phase("m3", 4, 1.0)
    phase.results = [
        Result("member", 0, 250, "250 2.0.0 Ok", 0.1, 0.0, 0.2),
        Result("member", 1, 451, TEMPFAIL, 0.1, 0.0, 1.5),
        Result("command", 2, 451, TEMPFAIL, 0.1, 0.0, 2.5),
        Result("banned", 3, 550, "550 5.7.1 banned", 0.1, 0.0, 2.6),
        Result("member", 4, -1, "not offered", 0.0, 3.0),
    ]

    folder, line = loadevidence.keep(lab, phase, since, tmp_path / "kept", "run-m3")  # type: ignore[arg-type]

    assert folder == tmp_path / "kept" / "run-m3"
    assert line.startswith("2 of 4 posts 4xx or unanswered, at 1.5-2.5 s into the phase")
    assert f"replies: 2x '{TEMPFAIL}'" in line
    assert "Postfix's milter 4xx lines by stage: CONNECT 2, END-OF-MESSAGE 1" in line
    assert "2x 'smtpd: warning: connect to Milter service unix:/tmp/LAB/lab/milter.sock" in line
    assert "1x 'Fatal Python error: Segmentation fault'" in line
    assert "milter exited with -N" in line
    kept_log = (folder / "postfix.log").read_text()
    assert "Broken pipe" not in kept_log  # before the phase
    assert "Connection reset by peer" in kept_log
    assert "exited with -11" in (folder / "mtaplugin.log").read_text()
    replies = (folder / "replies.tsv").read_text().splitlines()
    assert replies[1:] == [f"member\t1\t451\t{TEMPFAIL}\t1.500\t0.100",
                           f"command\t2\t451\t{TEMPFAIL}\t2.500\t0.100"]  # fmt: skip
    assert (folder / "classification.txt").read_text() == line + "\n"


def test_a_log_line_s_kind_leaves_out_what_differs_from_one_line_to_the_next() -> None:
    a, b = PHASE.splitlines()[2], PHASE.splitlines()[4]
    assert loadevidence.kind_of(a) == loadevidence.kind_of(b)
    assert loadevidence.kind_of(a) == (
        "smtpd: warning: connect to Milter service unix:/tmp/LAB/lab/milter.sock: Connection "
        "refused"
    )
