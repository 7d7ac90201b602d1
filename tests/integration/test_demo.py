"""`make demo`'s own self-check: the demo list works end to end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_demo_check_posts_and_every_member_gets_a_copy(lab_root: Path) -> None:
    var = lab_root / "demo-var"
    proc = subprocess.run(
        [sys.executable, "-m", "mtaplugin.demo", "--check", "--free-ports", "--var", str(var)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "demo check passed" in proc.stdout
    copies = sorted(p.parent.parent.name for p in (var / "demo" / "maildir").glob("*/new/*"))
    assert copies == ["alice@example.net", "bob@example.net", "carol@example.com"]
