"""A counting SMTP sink for the end-to-end benches: the members' servers, as one loopback
server in a process of its own, that keeps nothing but one line per transaction.

Every transaction appends ``<unix time> <recipients> <tag>`` to the events file, where the
tag is ``RUN-N`` taken from a ``Message-ID: <vsm-RUN-N@...>`` in the message (``-`` when
there is none): enough to count the copies delivered and to see when the first copy of
each post arrived.  It speaks just the SMTP that Postfix's and Mailman's clients use (EHLO
with PIPELINING, MAIL, RCPT, DATA, RSET, NOOP, QUIT), in asyncio, so that it costs far less
than the systems it measures::

    python -m mtaplugin.testing.counting_sink PORT EVENTS_FILE
"""

from __future__ import annotations

import asyncio
import re
import sys
import time
from pathlib import Path

TAG = re.compile(rb"^Message-ID:\s*<vsm-([A-Za-z0-9]+-[0-9]+)@", re.IGNORECASE | re.MULTILINE)


class Counter:
    def __init__(self, events: Path) -> None:
        self.out = open(events, "a", buffering=1)  # noqa: SIM115 - for the process's life

    def record(self, recipients: int, data: bytes) -> None:
        now = time.time()
        head = data.split(b"\r\n\r\n", 1)[0]
        match = TAG.search(head)
        tag = match.group(1).decode() if match else "-"
        self.out.write(f"{now:.6f} {recipients} {tag}\n")


async def session(
    counter: Counter, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    writer.write(b"220 sink.test ESMTP counting sink\r\n")
    recipients = 0
    try:
        while True:
            line = await reader.readline()
            if not line:
                break
            verb = line[:4].upper()
            if verb in (b"EHLO", b"LHLO"):
                writer.write(b"250-sink.test\r\n250-PIPELINING\r\n250-8BITMIME\r\n250 SIZE 0\r\n")
            elif verb == b"HELO":
                writer.write(b"250 sink.test\r\n")
            elif verb == b"MAIL":
                recipients = 0
                writer.write(b"250 2.1.0 Ok\r\n")
            elif verb == b"RCPT":
                recipients += 1
                writer.write(b"250 2.1.5 Ok\r\n")
            elif verb == b"DATA":
                writer.write(b"354 End data with <CR><LF>.<CR><LF>\r\n")
                await writer.drain()
                data = await reader.readuntil(b"\r\n.\r\n")
                counter.record(recipients, data)
                recipients = 0
                writer.write(b"250 2.0.0 Ok: queued\r\n")
            elif verb == b"QUIT":
                writer.write(b"221 2.0.0 Bye\r\n")
                await writer.drain()
                break
            elif verb == b"RSET":
                recipients = 0
                writer.write(b"250 2.0.0 Ok\r\n")
            else:
                writer.write(b"250 2.0.0 Ok\r\n")
            if not reader._buffer:  # type: ignore[attr-defined]  # flush once per batch
                await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
        pass
    finally:
        writer.close()


async def serve(port: int, events: Path) -> None:
    counter = Counter(events)
    server = await asyncio.start_server(
        lambda r, w: session(counter, r, w),
        "127.0.0.1",
        port,
        backlog=1024,
        limit=64 * 1024 * 1024,
    )
    async with server:
        await server.serve_forever()


def main() -> None:
    asyncio.run(serve(int(sys.argv[1]), Path(sys.argv[2])))


if __name__ == "__main__":
    main()
