"""The Debian package, tried as a mail admin would: build it (``make deb``'s script),
install Postfix from Debian with its stock "Internet Site" configuration, add the
package's lines from /usr/share/doc/mtaplugin/examples/, install the .deb, make a list,
post through the system's chrooted Postfix on port 25, and see the members' copies arrive
(at an aiosmtpd sink the members' domain is routed to); then remove and purge it.

This test changes the machine: the system Postfix's configuration (saved and put back at
the end, Postfix left stopped), the debconf answer for Postfix (put back), the user
mtaplugin (kept, as a purge keeps it).  It refuses to run where a system Postfix has a
configuration of its own or runs: skipped on a developer's machine, failed on CI (CI=true),
whose machine must be the throw-away Debian box it runs on.  Skipped when not root or not
Debian.  MTAPLUGIN_DEB=dist/mtaplugin.deb tests a package built already (make deb).
"""

from __future__ import annotations

import contextlib
import fcntl
import grp
import os
import pwd
import re
import shlex
import shutil
import signal
import smtplib
import socket
import stat
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from email.message import EmailMessage
from email.parser import BytesParser
from pathlib import Path

import pytest

from mtaplugin.testing import free_port
from mtaplugin.testing.sink import Sink

TOP = Path(__file__).resolve().parents[2]
POSTFIX_ETC = Path("/etc/postfix")
EXAMPLES = Path("/usr/share/doc/mtaplugin/examples")
UNIT = Path("/lib/systemd/system/mtaplugin.service")
SPOOL_DIR = Path("/var/spool/postfix/mtaplugin")
MILTER_SOCKET = SPOOL_DIR / "milter.sock"
#: written into main.cf so that a configuration left by a killed run is known as ours
MARKER = "# mtaplugin package test: this main.cf is the test's own (tests/package)"
HOSTNAME = "mx.pkgtest.example"
LIST_DOMAIN = "lists.pkgtest.example"
MEMBERS_DOMAIN = "members.pkgtest.example"
LIST = f"announce@{LIST_DOMAIN}"
PORTS = (25, 10026, 8001)  # Postfix, its re-injection listener, mtaplugin's REST API

pytestmark = pytest.mark.timeout(300)


def run(*argv: str, check: bool = True, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "DEBIAN_FRONTEND": "noninteractive", **env}
    proc = subprocess.run(argv, capture_output=True, text=True, env=environ, timeout=240)
    if check and proc.returncode != 0:
        pytest.fail(f"{shlex.join(argv)} exited {proc.returncode}:\n{proc.stdout}{proc.stderr}")
    return proc


# --- may this test touch the system? ----------------------------------------------------------
def installed(package: str) -> bool:
    proc = run("dpkg-query", "-W", "-f=${Status}", package, check=False)
    return proc.returncode == 0 and "install ok installed" in proc.stdout


def postfix_running() -> bool:
    pid_file = Path("/var/spool/postfix/pid/master.pid")
    try:
        pid = int(pid_file.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return False
    # A pid file left behind by an earlier run may name a pid the kernel has since given
    # to another process: only Postfix's master counts.
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip() == "master"
    except OSError:
        return False


def port_in_use(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


_held: list[object] = []


def not_stock() -> str | None:
    """Why the system's Postfix (or mtaplugin) is not the test's to change, if it is not."""
    main_cf = POSTFIX_ETC / "main.cf"
    if main_cf.exists() and MARKER not in main_cf.read_text(errors="replace"):
        return f"{main_cf} is a configuration of this machine's own"
    if postfix_running():
        return "the system Postfix is running"
    if installed("mtaplugin") and not (main_cf.exists()):
        return "the mtaplugin package is installed on this machine"
    busy = [p for p in PORTS if port_in_use(p)]
    if busy:
        return f"port(s) {busy} on 127.0.0.1 are in use"
    return None


#: held while the test changes the system (two runs of the suite on one machine)
LOCK = Path("/run/mtaplugin-package-test.lock")


def refuse_or_skip() -> None:
    if not Path("/etc/debian_version").exists() or shutil.which("dpkg") is None:
        pytest.skip("the package test needs Debian (dpkg, apt-get)")
    if os.geteuid() != 0:
        pytest.skip("the package test installs packages: run it as root")
    lock = LOCK.open("w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.close()
        reason: str | None = "another run of this test is changing it now"
    else:
        _held.append(lock)  # released when the test process ends
        reason = not_stock()
    if reason is not None:
        message = (
            f"the package test installs mtaplugin into the system Postfix, but {reason}; "
            "run it on a throw-away Debian machine"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)


# --- the system Postfix, saved and put back --------------------------------------------------
def debconf_answer() -> str | None:
    out = run("debconf-show", "postfix", check=False).stdout
    found = re.search(r"postfix/main_mailer_type: (.*)", out)
    return found.group(1).strip() if found else None


@contextlib.contextmanager
def system_postfix_restored(tmp: Path) -> Iterator[None]:
    """Postfix's /etc/postfix, /etc/mailname and debconf answer as they were, Postfix
    stopped, whatever happens in between."""
    saved = tmp / "etc-postfix.tar"
    with tarfile.open(saved, "w") as tar:
        tar.add(POSTFIX_ETC, arcname="postfix")
    mailname = Path("/etc/mailname")
    old_mailname = mailname.read_bytes() if mailname.exists() else None
    answer = debconf_answer()
    try:
        yield
    finally:
        stop_postfix()
        shutil.rmtree(POSTFIX_ETC, ignore_errors=True)
        with tarfile.open(saved) as tar:
            tar.extractall("/etc", filter="fully_trusted")
        if old_mailname is None:
            mailname.unlink(missing_ok=True)
        else:
            mailname.write_bytes(old_mailname)
        if answer:
            selection = f"postfix postfix/main_mailer_type select {answer}\n"
            subprocess.run(["debconf-set-selections"], input=selection, text=True, check=False)


def install_postfix_as_a_user_would() -> None:
    """``apt-get install postfix`` answering "Internet Site"; on a machine where Postfix
    is already installed (unconfigured: ``make system-deps``), the same answer through
    ``dpkg-reconfigure``, which writes the stock main.cf the installer would."""
    selections = (
        "postfix postfix/main_mailer_type select Internet Site\n"
        f"postfix postfix/mailname string {HOSTNAME}\n"
    )
    subprocess.run(["debconf-set-selections"], input=selections, text=True, check=True)
    if installed("postfix"):
        (POSTFIX_ETC / "main.cf").unlink(missing_ok=True)
        run("dpkg-reconfigure", "-f", "noninteractive", "postfix")
    else:
        run("apt-get", "install", "-y", "-q", "--no-install-recommends", "postfix")
    assert (POSTFIX_ETC / "main.cf").exists(), "the Postfix package wrote no main.cf"


def main_cf_lines(text: str) -> list[str]:
    """``key = value`` settings of a main.cf snippet, continuation lines joined."""
    settings: list[str] = []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line[0].isspace() and settings:
            settings[-1] += " " + line.strip()
        else:
            settings.append(line.strip())
    return settings


def packaged_paths(setting: str) -> str:
    """The snippet's socket paths where this package puts the sockets.  contrib/postfix
    written before issue 22 names /run/mtaplugin/; once it names the queue-directory
    sockets (unix:mtaplugin/milter.sock, issue 22 item 1) this changes nothing."""
    setting = setting.replace("unix:/run/mtaplugin/milter.sock", "unix:mtaplugin/milter.sock")
    if "unix:/run/mtaplugin/lookup.sock" in setting:
        setting = setting.replace(
            "unix:/run/mtaplugin/lookup.sock", f"unix:{SPOOL_DIR}/lookup.sock"
        )
        if "proxy:socketmap" not in setting:
            setting = setting.replace("socketmap:", "proxy:socketmap:")
    return setting


def configure_postfix(sink_port: int) -> None:
    """The stock configuration plus the package's example lines, as README.Debian says;
    and what only this test needs: loopback only, the members' domain to the sink."""
    for setting in main_cf_lines((EXAMPLES / "main.cf").read_text()):
        run("postconf", "-e", packaged_paths(setting))
    with (POSTFIX_ETC / "master.cf").open("a") as fh:
        fh.write("\n" + (EXAMPLES / "master.cf").read_text())
    sink = f"inline:{{ {MEMBERS_DOMAIN}=smtp:[127.0.0.1]:{sink_port} }}"
    theirs = run("postconf", "-h", "transport_maps").stdout.strip()
    transport = f"{sink}, {theirs}" if theirs else sink
    run("postconf", "-e", "inet_interfaces = loopback-only", f"transport_maps = {transport}")
    main_cf = POSTFIX_ETC / "main.cf"
    main_cf.write_text(MARKER + "\n" + main_cf.read_text())
    run("postfix", "check")


def tables_mtaplugin_writes() -> list[str]:
    """The hash: tables under /var/lib/mtaplugin the Postfix lines name (the list-domain
    tables the lookup server writes, lookup.tables_dir), which must exist before Postfix
    starts."""
    text = run("postconf", "-n").stdout
    return sorted(set(re.findall(r"hash:(/var/lib/mtaplugin/\S+?)(?=[\s,}]|$)", text)))


def start_postfix() -> None:
    if Path("/run/systemd/system").is_dir():
        run("systemctl", "start", "postfix")
    else:
        run("/etc/init.d/postfix", "start")
    deadline = time.monotonic() + 20
    while not port_in_use(25):
        assert time.monotonic() < deadline, "the system Postfix does not listen on port 25"
        time.sleep(0.2)


def stop_postfix() -> None:
    if Path("/run/systemd/system").is_dir():
        subprocess.run(["systemctl", "stop", "postfix"], check=False, capture_output=True)
    elif Path("/etc/init.d/postfix").exists():
        subprocess.run(["/etc/init.d/postfix", "stop"], check=False, capture_output=True)
    if postfix_running():
        subprocess.run(["postfix", "stop"], check=False, capture_output=True)


# --- the package -------------------------------------------------------------------------------
def build_package(out: Path) -> Path:
    """The .deb of this tree, built now; or MTAPLUGIN_DEB, one built already."""
    if os.environ.get("MTAPLUGIN_DEB"):
        return Path(os.environ["MTAPLUGIN_DEB"])
    pip = Path(sys.executable).parent / "pip"
    started = time.monotonic()
    proc = run(str(TOP / "packaging" / "deb" / "build.sh"), str(out), PIP=str(pip))
    deb = Path(proc.stdout.strip().splitlines()[-1])
    print(
        f"built {deb.name}: {deb.stat().st_size / 1e6:.1f} MB in {time.monotonic() - started:.0f} s"
    )
    return deb


@contextlib.contextmanager
def mtaplugin_service(log: Path) -> Iterator[None]:
    """mtaplugin.service started: by systemd where it runs (postinst started it), else
    the unit's own ExecStartPre and ExecStart, as its User, with its Environment."""
    if Path("/run/systemd/system").is_dir():
        run("systemctl", "restart", "mtaplugin")
        try:
            yield
        finally:
            run("systemctl", "stop", "mtaplugin", check=False)
        return
    unit = dict(
        line.split("=", 1) for line in UNIT.read_text().splitlines() if re.match(r"^\w+=", line)
    )
    run(unit["ExecStartPre"].removeprefix("+"))
    env = dict(item.split("=", 1) for item in unit["Environment"].split())
    argv = [
        "setpriv",
        f"--reuid={unit['User']}",
        f"--regid={unit['Group']}",
        "--init-groups",
        "env",
        *(f"{k}={v}" for k, v in env.items()),
        *shlex.split(unit["ExecStart"]),
    ]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            argv,
            cwd=unit["WorkingDirectory"],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def wait_for(what: str, ready: object, timeout: float, log: Path | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not ready():  # type: ignore[operator]
        if time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-3000:] if log and log.exists() else ""
            pytest.fail(f"{what} within {timeout} s\n{tail}")
        time.sleep(0.2)


def mtaplugin(*args: str) -> str:
    """The admin's command on the PATH (/usr/bin/mtaplugin), run as root."""
    return run("mtaplugin", *args).stdout


def post(sender: str, recipient: str, subject: str) -> None:
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = recipient
    msg["Subject"] = subject
    msg["Message-ID"] = f"<{time.time_ns()}@{MEMBERS_DOMAIN}>"
    msg.set_content("Hello from the package test.\n")
    with smtplib.SMTP("127.0.0.1", 25, timeout=30) as smtp:
        smtp.send_message(msg, from_addr=sender, to_addrs=[recipient])


# --- the test -------------------------------------------------------------------------------
def test_package_installs_serves_a_list_through_system_postfix_and_purges(tmp_path: Path):
    refuse_or_skip()
    if installed("mtaplugin"):  # left by a killed run of this test (main.cf is ours)
        run("dpkg", "--purge", "mtaplugin")
    deb = build_package(tmp_path / "dist")
    alice, bob = f"alice@{MEMBERS_DOMAIN}", f"bob@{MEMBERS_DOMAIN}"
    log = tmp_path / "mtaplugin.log"

    with system_postfix_restored(tmp_path), Sink(free_port()) as sink:
        install_postfix_as_a_user_would()
        # Debian's stock master.cf: smtpd (and cleanup) chrooted
        assert run("postconf", "-M", "smtp/inet").stdout.split()[4] == "y"
        assert run("postconf", "-h", "queue_directory").stdout.strip() == "/var/spool/postfix"

        run("dpkg", "-i", str(deb))
        try:
            # what postinst made
            user = pwd.getpwnam("mtaplugin")
            mtaplugin_gid = grp.getgrnam("mtaplugin").gr_gid
            assert "mtaplugin" in grp.getgrnam("postfix").gr_mem
            secrets = Path("/etc/mtaplugin/secrets.toml")
            st = secrets.stat()
            assert (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid) == (0o640, 0, mtaplugin_gid)
            assert "restpass" not in secrets.read_text()
            # the settings may hold a database password: root and the service only
            conffile = Path("/etc/mtaplugin/mtaplugin.toml")
            st = conffile.stat()
            assert (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid) == (0o640, 0, mtaplugin_gid)
            database = Path("/var/lib/mtaplugin/mtaplugin.db").stat()
            assert database.st_uid == user.pw_uid
            assert database.st_mode & 0o007 == 0  # password hashes: not for other users
            assert stat.S_IMODE(Path("/var/lib/mtaplugin").stat().st_mode) == 0o750
            st = SPOOL_DIR.stat()
            assert (stat.S_IMODE(st.st_mode), st.st_gid) == (0o2750, grp.getgrnam("postfix").gr_gid)
            assert mtaplugin("db", "current").strip()  # the schema's head revision

            configure_postfix(sink.port)
            mtaplugin("domains", "add", LIST_DOMAIN)
            mtaplugin("lists", "create", LIST, "--owner", f"owner@{MEMBERS_DOMAIN}")
            mtaplugin("members", "add", LIST, alice, bob, "--quiet", "--no-welcome-msg")
            # root's commands ran as the user mtaplugin: the database (and its journal) are
            # the service's
            written = list(Path("/var/lib/mtaplugin").glob("mtaplugin.db*"))
            assert [str(f) for f in written if f.stat().st_uid != user.pw_uid] == []

            with mtaplugin_service(log):
                wait_for("the milter socket appears", MILTER_SOCKET.exists, 30, log)
                st = MILTER_SOCKET.stat()
                # Postfix's processes only: group postfix (the set-group-id directory), 0660
                assert stat.S_IMODE(st.st_mode) == 0o660
                assert st.st_gid == grp.getgrnam("postfix").gr_gid
                for table in tables_mtaplugin_writes():
                    wait_for(f"mtaplugin writes {table}", Path(table + ".db").exists, 30, log)
                start_postfix()

                post(alice, LIST, "first post through the package")
                wait_for("bob's copy arrives", lambda: sink.to(bob), 60, log)
                copy = BytesParser().parsebytes(sink.to(bob)[0].data)
                assert copy["Subject"].endswith("first post through the package")
                assert LIST_DOMAIN in (copy["List-Id"] or "")
                # the chrooted smtpd asked the milter: no such list in the list domain
                with pytest.raises(smtplib.SMTPRecipientsRefused) as refused:
                    post(alice, f"nolist@{LIST_DOMAIN}", "to no list")
                code = next(iter(refused.value.recipients.values()))[0]
                assert code == 550
            stop_postfix()

            # the service's user replaced its own directory with a link to one of root's
            # (security review M7): the root part of the next start gives root's away
            # nothing, and refuses to go on
            tables = Path("/var/lib/mtaplugin/postfix")
            roots = tmp_path / "roots"
            roots.mkdir(mode=0o700)
            tables.rename(tables.with_name("postfix.moved"))
            run(
                "setpriv",
                "--reuid=mtaplugin",
                "--regid=mtaplugin",
                "--init-groups",
                "ln",
                "-s",
                str(roots),
                str(tables),
            )
            refused = run("/usr/lib/mtaplugin/prepare", check=False)
            assert refused.returncode != 0 and "symbolic link" in refused.stderr
            st = roots.stat()
            assert (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid) == (0o700, 0, 0)
            tables.unlink()
            tables.with_name("postfix.moved").rename(tables)

            # upgrade (the same .deb again): the admin's settings, the secrets and the lists
            # are kept, the schema upgraded; settings an older package left 0644 are closed
            edited = conffile.read_text().replace(
                'site_owner = "postmaster@localhost"', f'site_owner = "owner@{MEMBERS_DOMAIN}"'
            )
            conffile.write_text(edited)
            conffile.chmod(0o644)
            generated = secrets.read_text()
            upgrade = run("dpkg", "-i", str(deb))
            assert "db upgrade" not in upgrade.stderr
            assert conffile.read_text() == edited
            st = conffile.stat()
            assert (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid) == (0o640, 0, mtaplugin_gid)
            assert secrets.read_text() == generated
            assert LIST in mtaplugin("lists", "list")

            # remove: the program goes, the settings and the lists stay
            run("dpkg", "--remove", "mtaplugin")
            assert not Path("/usr/bin/mtaplugin").exists()
            assert not Path("/usr/lib/mtaplugin").exists()
            assert Path("/etc/mtaplugin/mtaplugin.toml").exists()
            assert Path("/var/lib/mtaplugin/mtaplugin.db").exists()
            # purge: they go too
            run("dpkg", "--purge", "mtaplugin")
            gone = ("/etc/mtaplugin", "/var/lib/mtaplugin", str(SPOOL_DIR), "/run/mtaplugin")
            assert [p for p in gone if Path(p).exists()] == []
            assert not installed("mtaplugin")
        finally:
            if installed("mtaplugin") or Path("/etc/mtaplugin").exists():
                run("dpkg", "--purge", "mtaplugin", check=False)
    assert not postfix_running()
