"""mtaplugin.posting.verdict and replies: replies and verdicts that cannot be mis-built."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mtaplugin.posting.verdict import (
    PermanentReply,
    Reject,
    TempFail,
    TemporaryReply,
    permanent,
    temporary,
)


def test_reply_str():
    assert str(PermanentReply(550, "5.1.1", "no such list")) == "550 5.1.1 no such list"
    assert str(TemporaryReply(451, "4.3.0", "later")) == "451 4.3.0 later"


@pytest.mark.parametrize(
    ("code", "enhanced"),
    [
        (550, "4.1.1"),  # a 5xx code with a 4xx enhanced code
        (451, "5.3.0"),  # a 4xx code with a 5xx enhanced code
        (250, "2.0.0"),  # not a failure
        (600, "5.0.0"),
        (399, "4.0.0"),
        (550, "5.1"),
        (550, "5.1.1000"),
        (550, "x.1.1"),
        (550, "3.1.1"),
    ],
)
@pytest.mark.parametrize("kind", [PermanentReply, TemporaryReply])
def test_mismatched_or_malformed_replies_are_refused(
    kind: type[PermanentReply | TemporaryReply], code: int, enhanced: str
):
    with pytest.raises(ValueError):
        kind(code, enhanced, "text")  # type: ignore[arg-type]


@pytest.mark.parametrize("text", ["two\nlines", "carriage\rreturn", "crlf\r\n"])
def test_reply_text_must_be_one_line(text: str):
    with pytest.raises(ValueError, match="one line"):
        PermanentReply(550, "5.7.1", text)
    with pytest.raises(ValueError, match="one line"):
        TemporaryReply(451, "4.7.1", text)


@pytest.mark.parametrize(
    ("make", "kind", "good", "other_code", "wrong_class"),
    [
        # (the factory, its reply type, a good (code, enhanced), another code of the class,
        # a code and an enhanced code of the other class)
        (permanent, PermanentReply, (550, "5.7.1"), 552, (451, "4.7.1", "5xx")),
        (temporary, TemporaryReply, (451, "4.3.0"), 452, (550, "5.3.0", "4xx")),
    ],
    ids=["permanent", "temporary"],
)
def test_the_reply_factories(
    make: Any, kind: type, good: tuple[int, str], other_code: int, wrong_class: tuple[int, str, str]
):
    code, enhanced = good
    r = make(enhanced, "text")
    assert isinstance(r, kind)
    assert (r.code, r.enhanced, r.text) == (code, enhanced, "text")
    assert make(enhanced, "text", code=other_code).code == other_code
    wrong_code, wrong_enhanced, needed = wrong_class
    with pytest.raises(ValueError, match=needed):
        make(enhanced, "text", code=wrong_code)
    with pytest.raises(ValueError):
        make(wrong_enhanced, "text")


def test_reject_needs_5xx_and_tempfail_needs_4xx():
    assert Reject(permanent("5.7.1", "no")).reply.code == 550
    assert TempFail(temporary("4.3.0", "later")).reply.code == 451
    with pytest.raises(ValueError):
        Reject(temporary("4.3.0", "later"))  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        TempFail(permanent("5.7.1", "no"))  # type: ignore[arg-type]


def test_reply_is_frozen():
    r = permanent("5.7.1", "no")
    with pytest.raises(AttributeError):
        r.code = 250  # type: ignore[misc]


_MISBUILT = """
from mtaplugin.posting.replies import PermanentReply, TemporaryReply, permanent, temporary
from mtaplugin.posting.verdict import Reject, TempFail
PermanentReply(451, "4.3.0", "a 4xx refusal")
TemporaryReply(550, "5.7.1", "a 5xx tempfail")
permanent("4.3.0", "x", code=451)
temporary("5.7.1", "x", code=550)
Reject(TemporaryReply(451, "4.3.0", "x"))
TempFail(PermanentReply(550, "5.7.1", "x"))
"""


@pytest.mark.skipif(
    shutil.which("mypy", path=str(Path(sys.executable).parent)) is None,
    reason="mypy is not installed",
)
def test_the_type_checker_refuses_a_misbuilt_reply(tmp_path: Path):
    """A 4xx refusal or a 5xx tempfail is a type error, not only a ValueError at run time."""
    probe = tmp_path / "probe.py"
    probe.write_text(_MISBUILT)
    mypy = str(Path(sys.executable).parent / "mypy")
    done = subprocess.run(
        [
            mypy,
            "--strict",
            "--follow-imports=silent",
            "--cache-dir",
            str(tmp_path / "cache"),
            str(probe),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    errors = [line for line in done.stdout.splitlines() if str(probe) in line and "error" in line]
    assert len(errors) == 6, done.stdout
    assert all("arg-type" in line for line in errors), done.stdout
