"""A private OpenLDAP server on 127.0.0.1, run from Debian's ``slapd`` package files.

The package is fetched and unpacked into the cache the Exim and Sendmail labs use
(:mod:`mtaplugin.testing.debpkg`); nothing is installed into the system.  The server
reads its own ``slapd.conf`` (``slapd -f``) with one ``mdb`` database under ``root``,
suffix :data:`SUFFIX`, written to by the manager :data:`MANAGER_DN`.  A reader
``cn=small`` may see at most two entries per search (``limits ... size=2``), for tests of
a truncated answer.  Must run as root the first time (``dpkg -x``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from mtaplugin.testing import free_port, wait_for_port
from mtaplugin.testing.debpkg import extract, library_path

PACKAGES = ["slapd"]
LIBRARIES = {
    "libldap-2.5.so.0": "libldap-2.5-0",
    "liblber-2.5.so.0": "libldap-2.5-0",
    "libltdl.so.7": "libltdl7",
    "libwrap.so.0": "libwrap0",
    "libsasl2.so.2": "libsasl2-2",
    "libodbc.so.2": "libodbc2",
}
SUFFIX = "dc=example,dc=org"
MANAGER_DN = f"cn=manager,{SUFFIX}"
MANAGER_PASSWORD = "manager-secret"
SMALL_DN = f"cn=small,{SUFFIX}"
SMALL_PASSWORD = "small-secret"


class LdapError(RuntimeError):
    pass


def unpack() -> Path:
    """The unpacked slapd package (cached)."""
    return extract("slapd", PACKAGES, "usr/sbin/slapd", LIBRARIES)


class LdapServer:
    def __init__(self, root: Path, port: int | None = None) -> None:
        self.root = root
        self.port = port or free_port()
        self.package = unpack()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"ldap://127.0.0.1:{self.port}"

    def config(self) -> str:
        schema = self.package / "etc/ldap/schema"
        schemas = "".join(
            f"include {schema / name}.schema\n"
            for name in ("core", "cosine", "nis", "inetorgperson")
        )
        return f"""\
{schemas}pidfile {self.root}/slapd.pid
argsfile {self.root}/slapd.args
modulepath {self.package}/usr/lib/ldap
moduleload back_mdb
sizelimit 500
database mdb
maxsize 104857600
suffix "{SUFFIX}"
rootdn "{MANAGER_DN}"
rootpw {MANAGER_PASSWORD}
directory {self.root}/data
limits dn.exact="{SMALL_DN}" size=2
access to attrs=userPassword by anonymous auth by * none
access to * by * read
"""

    def start(self) -> LdapServer:
        (self.root / "data").mkdir(parents=True, exist_ok=True)
        conf = self.root / "slapd.conf"
        conf.write_text(self.config())
        env = dict(os.environ, LD_LIBRARY_PATH=library_path(self.package))
        log = (self.root / "slapd.log").open("ab")
        self.proc = subprocess.Popen(
            [
                str(self.package / "usr/sbin/slapd"),
                "-f",
                str(conf),
                "-h",
                f"ldap://127.0.0.1:{self.port}/",
                "-d",
                "0",
            ],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_for_port(self.port, timeout=20)
        except TimeoutError:
            self.stop()
            raise LdapError(
                f"slapd did not start: {(self.root / 'slapd.log').read_text()[-2000:]}"
            ) from None
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def wait_stopped(self, timeout: float = 5) -> None:
        deadline = time.monotonic() + timeout
        while self.running and time.monotonic() < deadline:
            time.sleep(0.05)


# --- a small directory: people and a group ---------------------------------------------------
PEOPLE = f"ou=people,{SUFFIX}"
GROUPS = f"ou=groups,{SUFFIX}"


def person_dn(uid: str) -> str:
    return f"uid={uid},{PEOPLE}"


def group_dn(cn: str) -> str:
    return f"cn={cn},{GROUPS}"


class Directory:
    """Writes to the server as its manager (ldap3), for tests: people and groups."""

    def __init__(self, server: LdapServer) -> None:
        import ldap3

        self.server = server
        self.conn = ldap3.Connection(
            ldap3.Server(server.url), MANAGER_DN, MANAGER_PASSWORD, auto_bind=True
        )

    def _ok(self, done: bool) -> None:
        if not done:
            raise LdapError(str(self.conn.result))

    def seed(self) -> Directory:
        """The suffix, ``ou=people``, ``ou=groups`` and the limited reader ``cn=small``."""
        self._ok(
            self.conn.add(SUFFIX, ["dcObject", "organization"], {"o": "Example", "dc": "example"})
        )
        self._ok(self.conn.add(PEOPLE, ["organizationalUnit"], {"ou": "people"}))
        self._ok(self.conn.add(GROUPS, ["organizationalUnit"], {"ou": "groups"}))
        self._ok(
            self.conn.add(
                SMALL_DN,
                ["organizationalRole", "simpleSecurityObject"],
                {"cn": "small", "userPassword": SMALL_PASSWORD},
            )
        )
        return self

    def add_person(self, uid: str, mail: str | None, name: str = "") -> str:
        attrs: dict[str, object] = {"uid": uid, "cn": name or uid, "sn": uid}
        if mail:
            attrs["mail"] = mail
        self._ok(self.conn.add(person_dn(uid), ["inetOrgPerson"], attrs))
        return person_dn(uid)

    def add_group(self, cn: str, *uids: str) -> str:
        members = [person_dn(u) for u in uids]
        self._ok(self.conn.add(group_dn(cn), ["groupOfNames"], {"cn": cn, "member": members}))
        return group_dn(cn)

    def add_posix_group(self, cn: str, gid: int, *uids: str) -> str:
        attrs: dict[str, object] = {"cn": cn, "gidNumber": gid}
        if uids:
            attrs["memberUid"] = list(uids)
        self._ok(self.conn.add(group_dn(cn), ["posixGroup"], attrs))
        return group_dn(cn)

    def join(self, cn: str, uid: str) -> None:
        import ldap3

        change = {"member": [(ldap3.MODIFY_ADD, [person_dn(uid)])]}
        self._ok(self.conn.modify(group_dn(cn), change))

    def leave(self, cn: str, uid: str) -> None:
        import ldap3

        change = {"member": [(ldap3.MODIFY_DELETE, [person_dn(uid)])]}
        self._ok(self.conn.modify(group_dn(cn), change))

    def close(self) -> None:
        self.conn.unbind()
