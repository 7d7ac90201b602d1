"""The benches' limit check (``mtaplugin.testing.benchlimit``): from a Postfix maillog, the
recipients of each queue file the limit's cleanup wrote, so that a bench stops when its
limit did not fan a post out from one queue file (the lines are Postfix 3.7's, from a
private instance whose limit expanded a 100-member and a 500-member list)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mtaplugin.testing import benchlimit

LOG = b"""\
Dec 05 15:11:07 vsm vsm/limit/smtpd[1]: 07A394749FD: client=localhost[127.0.0.1]
Dec 05 15:11:07 vsm vsm/limitcleanup/cleanup[2]: 07A394749FD: message-id=<vsm-r1-1@d0.example>
Dec 05 15:11:07 vsm vsm/qmgr[3]: 07A394749FD: from=<m0@d0.example>, size=2220, nrcpt=100 (queue active)
Dec 05 15:11:08 vsm vsm/smtp[4]: 07A394749FD: to=<m1@d1.example>, relay=127.0.0.1[127.0.0.1]:2525, status=sent (250 ok)
Dec 05 15:11:19 vsm vsm/cleanup[5]: 870DE474A54: message-id=<vsm-r1-2@d0.example>
Dec 05 15:11:19 vsm vsm/qmgr[3]: 870DE474A54: from=<bench-bounces@lists.mp.bench>, size=2362, nrcpt=101 (queue active)
Dec 05 15:11:15 vsm vsm/limitcleanup/cleanup[2]: 4F267474A19: message-id=<vsm-r1-3@d0.example>
Dec 05 15:11:15 other other/limitcleanup/cleanup[9]: 5A267474A19: message-id=<vsm-r1-4@d0.example>
"""  # noqa: E501


def test_each_queue_file_of_the_limits_cleanup_with_the_recipients_qmgr_found() -> None:
    # mtaplugin's queue file (the default cleanup) and another instance's are not the limit's;
    # the last one has not been taken by qmgr yet
    assert benchlimit.recipients_per_queue_file(LOG, "vsm") == [100, None]
    qmgr = b"Dec 05 15:11:15 vsm vsm/qmgr[3]: 4F267474A19: from=<m0@d0.example>, size=2216, nrcpt=500 (queue active)\n"  # noqa: E501
    assert benchlimit.recipients_per_queue_file(LOG + qmgr, "vsm") == [100, 500]


def test_a_queue_id_reused_by_other_mail_is_not_the_limits() -> None:
    # Postfix reuses a short queue id once its file is removed: here for a non-list message
    reused = b"""\
Dec 05 15:11:09 vsm vsm/qmgr[3]: 07A394749FD: removed
Dec 05 15:11:20 vsm vsm/bare/smtpd[6]: 07A394749FD: client=localhost[127.0.0.1]
Dec 05 15:11:20 vsm vsm/cleanup[5]: 07A394749FD: message-id=<6a39.0003.02d5@vm>
Dec 05 15:11:20 vsm vsm/qmgr[3]: 07A394749FD: from=<s@elsewhere.bench>, size=2371, nrcpt=1 (queue active)
"""  # noqa: E501
    assert benchlimit.recipients_per_queue_file(LOG + reused, "vsm") == [100, None]


def test_the_limits_cleanup_warnings_are_not_queue_files() -> None:
    # seen in a run at load 20: Postfix's cleanup warns when the clocks disagree
    warnings = b"""\
Dec 05 21:59:55 vsm vsm/limitcleanup/cleanup[5]: warning: file system clock is 1 seconds ahead of local clock
Dec 05 21:59:55 vsm vsm/limitcleanup/cleanup[5]: warning: resetting file time stamps - this hurts performance
"""  # noqa: E501
    assert benchlimit.recipients_per_queue_file(LOG + warnings, "vsm") == [100, None]


def test_a_limit_that_made_other_queue_files_stops_the_bench(tmp_path: Path) -> None:
    maillog = tmp_path / "maillog"
    first = b"".join(LOG.splitlines(keepends=True)[:4])
    maillog.write_bytes(first)
    benchlimit.check_one_queue_file(maillog, "vsm", [100])
    # the members split over queue files, or fewer of them in the one queue file
    maillog.write_bytes(LOG)
    with pytest.raises(RuntimeError, match=r"shows 2 \(1 x 100, 1 x None\)"):
        benchlimit.check_one_queue_file(maillog, "vsm", [100])
    maillog.write_bytes(first.replace(b"nrcpt=100", b"nrcpt=99"))
    with pytest.raises(RuntimeError, match=r"shows 1 \(1 x 99\)"):
        benchlimit.check_one_queue_file(maillog, "vsm", [100])
