"""The import contract (``.importlinter``, drawn in docs/architecture.md): every package of
``mtaplugin/`` imports only the layers below it, and no packages (nor modules of one
package) import each other in a circle.  import-linter reads the code's own imports,
top-level and function-local alike."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.helpers import ROOT

CONTRACT = ROOT / ".importlinter"


def lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` over the ``mtaplugin`` package found in ``tree``."""
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from importlinter.cli import lint_imports_command;"
            " sys.exit(lint_imports_command())",
            str(CONTRACT),
            "--no-cache",
        ],
        cwd=tree,
        env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_every_package_keeps_to_its_layer_and_nothing_imports_in_a_circle() -> None:
    done = lint_imports(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Contracts: 2 kept, 0 broken." in done.stdout, done.stdout


def test_a_new_upward_import_breaks_the_contract(tmp_path: Path) -> None:
    """The contract is no formality: a copy of the tree where the archive (a side service)
    imports the web front end fails, naming the file and line."""
    shutil.copytree(
        ROOT / "mtaplugin", tmp_path / "mtaplugin", ignore=shutil.ignore_patterns("locale")
    )
    archive = tmp_path / "mtaplugin" / "archive" / "urls.py"
    archive.write_text(archive.read_text() + "\nfrom mtaplugin.web import render  # upward\n")
    done = lint_imports(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "mtaplugin.archive is not allowed to import mtaplugin.web" in done.stdout, done.stdout
    assert "mtaplugin.archive.urls -> mtaplugin.web.render" in done.stdout, done.stdout


def test_a_new_package_must_be_given_a_layer(tmp_path: Path) -> None:
    shutil.copytree(
        ROOT / "mtaplugin", tmp_path / "mtaplugin", ignore=shutil.ignore_patterns("locale")
    )
    (tmp_path / "mtaplugin" / "newthing").mkdir()
    (tmp_path / "mtaplugin" / "newthing" / "__init__.py").write_text('"""A new package."""\n')
    done = lint_imports(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "mtaplugin.newthing" in done.stdout, done.stdout
