"""MTAs that conflict with Postfix (Exim, Sendmail), run from their Debian package files.

``apt-get download`` fetches the packages, ``dpkg -x`` extracts them into a private tree
under :data:`CACHE` (one per package version, reused by later runs).  The libraries the
binary needs that the system lacks are fetched the same way, and the binary's RPATH is
pointed at them (with ``patchelf``, itself only extracted): a setuid binary re-executed by
an unprivileged process (Exim does that) ignores ``LD_LIBRARY_PATH``.  Nothing is
installed into the system.  Needs root and the network
to a Debian mirror the first time.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

CACHE = Path(os.environ.get("MTAPLUGIN_MTA_CACHE", "/var/cache/mtaplugin-mta"))
# usr/lib/news: INN's own libraries (libinn, libinnstorage, libinnhist)
LIB_DIRS = ("usr/lib/x86_64-linux-gnu", "usr/lib", "lib/x86_64-linux-gnu", "lib", "usr/lib/news")


class PackageError(RuntimeError):
    pass


def _run(argv: list[str], cwd: Path | None = None) -> str:
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise PackageError(f"{' '.join(argv)} failed: {proc.stdout}{proc.stderr}")
    return proc.stdout


def candidate_version(package: str) -> str:
    """The version ``apt-get download`` would fetch (after one ``apt-get update`` when
    the package lists do not know the package yet, as on a fresh machine)."""
    for attempt in range(2):
        out = _run(["apt-cache", "policy", package])
        for line in out.splitlines():
            if line.strip().startswith("Candidate:"):
                version = line.split(":", 1)[1].strip()
                if version and version != "(none)":
                    return version
        if attempt == 0:
            _run(["apt-get", "update", "-q"])
    raise PackageError(f"no candidate version of {package} in the package lists")


def library_path(root: Path) -> str:
    return ":".join(str(root / d) for d in LIB_DIRS)


def missing_libraries(binary: Path, root: Path) -> list[str]:
    env = dict(os.environ, LD_LIBRARY_PATH=library_path(root))
    proc = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, env=env)
    return [line.split()[0] for line in proc.stdout.splitlines() if "not found" in line]


def extract(name: str, packages: list[str], binary: str, libraries: dict[str, str]) -> Path:
    """The private tree for ``packages`` (named ``name-<version of the first>``), with
    ``binary`` runnable; ``libraries`` maps a missing soname to the package that has it."""
    version = candidate_version(packages[0]).replace(":", "_")
    root = CACHE / f"{name}-{version}"
    if (root / ".complete").exists():
        return root
    if os.geteuid() != 0:
        raise PackageError(f"extracting {name} needs root (dpkg -x keeps setuid bits)")
    CACHE.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=CACHE))
    try:
        debs = work / "debs"
        tree = work / "root"
        debs.mkdir()
        _run(["apt-get", "download", *packages], cwd=debs)
        for deb in sorted(debs.glob("*.deb")):
            _run(["dpkg", "-x", str(deb), str(tree)])
        wanted = [libraries[s] for s in missing_libraries(tree / binary, tree) if s in libraries]
        if wanted:
            _run(["apt-get", "download", *sorted(set(wanted))], cwd=debs)
            for deb in sorted(debs.glob("*.deb")):
                _run(["dpkg", "-x", str(deb), str(tree)])
        if wanted:
            tool = extract("patchelf", ["patchelf"], "usr/bin/patchelf", {})
            rpath = ":".join(str(root / d) for d in LIB_DIRS)
            mode = os.stat(tree / binary).st_mode
            _run([str(tool / "usr/bin/patchelf"), "--force-rpath", "--set-rpath", rpath,
                  str(tree / binary)])  # fmt: skip
            os.chmod(tree / binary, mode)  # patchelf drops the setuid bit
        still = missing_libraries(tree / binary, tree)
        if still:
            raise PackageError(f"{binary} still lacks {', '.join(still)}")
        shutil.rmtree(debs)
        (tree / ".complete").write_text(" ".join(packages) + "\n")
        try:
            tree.rename(root)
        except OSError:
            # Another run extracted the same version meanwhile: use that one.
            if not (root / ".complete").exists():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    os.chmod(root, 0o755)
    return root


def ensure_system_user(name: str, home: str = "/nonexistent") -> None:
    """The user a package's binary was built to run as (Exim: Debian-exim)."""
    import pwd

    try:
        pwd.getpwnam(name)
    except KeyError:
        _run(
            [
                "useradd", "--system", "--user-group", "--no-create-home",
                "--home-dir", home, "--shell", "/usr/sbin/nologin", name,
            ]
        )  # fmt: skip
