"""A private INN 2 news server on 127.0.0.1, run from Debian's package files (inn2,
inn2-inews for libinn, libcanlock3), for the Usenet gateway's tests.

Layout under ``root`` (everything the server writes; ``INNCONF`` points at etc/inn.conf)::

    etc/     inn.conf, readers.conf, newsfeeds, incoming.conf, storage.conf, passwd
    db/      active (the groups), history (made with makedbz), newsgroups
    spool/   articles (tradspool), overview (tradindexed), incoming, outgoing
    run/ log/ tmp/

innd runs as user ``news`` in the foreground and hands reader connections (MODE READER,
POST, GROUP, ARTICLE) to nnrpd.  readers.conf lets 127.0.0.1 read and post with or without
AUTHINFO USER/PASS (:data:`USER` / :data:`PASSWORD`, checked by ckpasswd).  Must run as
root (to chown the tree to ``news``).
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from mtaplugin.testing import free_port, wait_for
from mtaplugin.testing.mta import LabError, PrivateDaemon

PACKAGES = ["inn2", "inn2-inews", "libcanlock3"]
BINARY = "usr/lib/news/bin/innd"
USER = "gateway"
PASSWORD = "s3cret-news"
#: the groups the tests use: name -> active flag (y: open, m: moderated)
GROUPS = {"local.test": "y", "local.moderated": "m", "local.other": "y"}


@dataclass
class PrivateInn(PrivateDaemon):
    root: Path
    port: int = field(default_factory=free_port)
    groups: dict[str, str] = field(default_factory=lambda: dict(GROUPS))
    name: str = "inn-lab"

    label = "INN"

    def __post_init__(self) -> None:
        self.unpack("inn2", PACKAGES, BINARY, {})
        self.bin = self.tree / "usr/lib/news/bin"

    @property
    def conf(self) -> Path:
        return self.root / "etc" / "inn.conf"

    def env(self) -> dict[str, str]:
        env = super().env()
        env["INNCONF"] = str(self.conf)
        env["HOME"] = str(self.root)
        return env

    def log(self) -> str:
        out = []
        for name in ("innd.out", "log/news.err", "log/news.notice", "log/errlog"):
            path = self.root / name
            if path.exists():
                out.append(f"--- {name}\n{path.read_text(errors='replace')}")
        return "\n".join(out)

    def inn_conf(self) -> str:
        r = self.root
        return f"""\
# Private instance "{self.name}": loopback only, no feeds.
organization:           "mtaplugin tests"
pathhost:               {self.name}.test
domain:                 lab.test
server:                 127.0.0.1
bindaddress:            127.0.0.1
port:                   {self.port}
mta:                    "/bin/true %s"
mailcmd:                /bin/true
hismethod:              hisv6
ovmethod:               tradindexed
enableoverview:         true
storeonxref:            true
wireformat:             true
nnrpdcheckart:          true
noreader:               false
readerswhenstopped:     false
nicekids:               0
# a busy test machine is no reason to turn readers away ("400 load at N, try later")
nnrpdloadlimit:         0
artcutoff:              0
logipaddr:              true
docnnfsstat:            false
status:                 0
timer:                  0
pathnews:               {r}
pathbin:                {self.bin}
pathcontrol:            {self.bin}/control
pathfilter:             {r}/filter
pathetc:                {r}/etc
pathrun:                {r}/run
pathlog:                {r}/log
pathhttp:               {r}/http
pathtmp:                {r}/tmp
pathspool:              {r}/spool
patharticles:           {r}/spool/articles
pathoverview:           {r}/spool/overview
pathoutgoing:           {r}/spool/outgoing
pathincoming:           {r}/spool/incoming
patharchive:            {r}/spool/archive
pathdb:                 {r}/db
"""

    def readers_conf(self) -> str:
        ckpasswd = self.bin / "auth" / "passwd" / "ckpasswd"
        return f"""\
auth "localhost" {{
    hosts: "127.0.0.1, localhost, ::1"
    auth: "{ckpasswd} -f {self.root}/etc/passwd"
    default: "<localhost>"
}}
access "localhost" {{
    users: "*"
    newsgroups: "*"
    access: "RPA"
}}
"""

    def prepare(self) -> None:
        news = pwd.getpwnam("news")
        for parent in self.root.resolve().parents:
            if parent.exists() and not os.stat(parent).st_mode & 0o001:
                raise LabError(f"user news cannot traverse {parent}: INN's root must be in "
                               "directories every user can enter (mode o+x)")  # fmt: skip
        if self.root.exists():
            shutil.rmtree(self.root)
        for sub in ("etc", "db", "run", "log", "tmp", "http", "filter",
                    "spool/articles", "spool/overview", "spool/outgoing",
                    "spool/incoming", "spool/archive"):  # fmt: skip
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        etc = self.root / "etc"
        self.conf.write_text(self.inn_conf())
        (etc / "readers.conf").write_text(self.readers_conf())
        (etc / "newsfeeds").write_text("ME:*,!junk,!control*::\n")
        (etc / "incoming.conf").write_text("")
        (etc / "storage.conf").write_text(
            "method tradspool {\n    newsgroups: *\n    class: 0\n}\n"
        )
        (etc / "expire.ctl").write_text("/remember/:10\n*:A:never:never:never\n")
        (etc / "moderators").write_text("*:%s@moderators.lab.test\n")
        hashed = subprocess.run(
            ["openssl", "passwd", "-6", PASSWORD], capture_output=True, text=True, check=True
        ).stdout.strip()
        (etc / "passwd").write_text(f"{USER}:{hashed}\n")
        db = self.root / "db"
        active = {"control": "n", "control.cancel": "n", "junk": "n", **self.groups}
        (db / "active").write_text(
            "".join(f"{g} 0000000000 0000000001 {flag}\n" for g, flag in active.items())
        )
        (db / "newsgroups").write_text("".join(f"{g}\t{g}\n" for g in active))
        (db / "active.times").write_text("")
        (db / "history").write_text("")
        for dirpath, _dirnames, filenames in os.walk(self.root):
            os.chown(dirpath, news.pw_uid, news.pw_gid)
            for f in filenames:
                os.chown(os.path.join(dirpath, f), news.pw_uid, news.pw_gid)
        self.as_news([str(self.bin / "makedbz"), "-i", "-o"], cwd=db)

    def as_news(self, argv: list[str], cwd: Path | None = None) -> str:
        news = pwd.getpwnam("news")
        proc = subprocess.run(
            argv, cwd=cwd, env=self.env(), capture_output=True, text=True, timeout=60,
            user=news.pw_uid, group=news.pw_gid, extra_groups=[],
        )  # fmt: skip
        if proc.returncode != 0:
            raise LabError(f"{' '.join(argv)} failed: {proc.stdout}{proc.stderr}")
        return proc.stdout

    def start(self, fresh: bool = True) -> PrivateInn:
        self.require_root()
        if fresh:
            self.prepare()
        news = pwd.getpwnam("news")
        out = open(self.root / "innd.out", "ab")  # noqa: SIM115 (closed by stop)
        self.process = subprocess.Popen(
            [str(self.binary), "-f"], env=self.env(), stdout=out, stderr=out,
            start_new_session=True, cwd=self.root,
            user=news.pw_uid, group=news.pw_gid, extra_groups=[],
        )  # fmt: skip
        self._out: IO[bytes] | None = out
        try:
            wait_for(self._answers, timeout=20)
        except TimeoutError:
            raise LabError(f"INN did not start: {self.log()[-3000:]}") from None
        return self

    def _answers(self) -> bool:
        if self.process is not None and self.process.poll() is not None:
            raise LabError(f"innd exited: {self.log()[-3000:]}")
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                return s.recv(512).startswith(b"20")
        except OSError:
            return False

    def stop(self) -> None:
        super().stop()
        out = getattr(self, "_out", None)
        if out is not None:
            out.close()
            self._out = None

    def __enter__(self) -> PrivateInn:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
