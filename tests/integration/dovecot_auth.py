"""A Dovecot authentication server, as much of it as Postfix's SMTP AUTH needs
(``smtpd_sasl_type = dovecot``): the PLAIN mechanism against a fixed table of logins, on a
unix socket.  The protocol is Dovecot's auth protocol 1.x (lines of tab-separated fields)."""

from __future__ import annotations

import base64
import os
import socketserver
import threading
from collections.abc import Mapping
from pathlib import Path


class _Handler(socketserver.StreamRequestHandler):
    server: _Server

    def handle(self) -> None:
        self.wfile.write(
            b"VERSION\t1\t2\nMECH\tPLAIN\tplaintext\nSPID\t1\nCUID\t1\n"
            b"COOKIE\t" + b"0" * 32 + b"\nDONE\n"
        )
        for raw in self.rfile:
            fields = raw.rstrip(b"\n").decode().split("\t")
            if fields[0] == "AUTH":
                self._auth(fields[1], fields[2], fields[3:])
            elif fields[0] == "CONT":
                self._check(fields[1], fields[2] if len(fields) > 2 else "")

    def _auth(self, request: str, mechanism: str, params: list[str]) -> None:
        resp = next((p[5:] for p in params if p.startswith("resp=")), None)
        if mechanism != "PLAIN":
            self.wfile.write(f"FAIL\t{request}\n".encode())
        elif resp is None:
            self.wfile.write(f"CONT\t{request}\t\n".encode())
        else:
            self._check(request, resp)

    def _check(self, request: str, resp: str) -> None:
        try:
            _authzid, user, password = base64.b64decode(resp).decode().split("\0")
        except ValueError:
            self.wfile.write(f"FAIL\t{request}\n".encode())
            return
        if self.server.logins.get(user) == password:
            self.wfile.write(f"OK\t{request}\tuser={user}\n".encode())
        else:
            self.wfile.write(f"FAIL\t{request}\tuser={user}\n".encode())


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    logins: Mapping[str, str] = {}


class DovecotAuth:
    """Serves ``logins`` (user -> password) on ``path`` until :meth:`stop`."""

    def __init__(self, path: Path, logins: Mapping[str, str]) -> None:
        self.path = path
        if path.exists():
            path.unlink()
        self.server = _Server(str(path), _Handler)
        self.server.logins = dict(logins)
        os.chmod(path, 0o666)  # Postfix's smtpd connects as its own user
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> DovecotAuth:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
