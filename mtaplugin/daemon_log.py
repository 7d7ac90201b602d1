"""An INFO line written to the daemon's log handlers without a ``logging.LogRecord``.

The milter logs one decision line for every post (:mod:`mtaplugin.engine.decision_log`).
Through ``logging``, each line costs a record (the time, the thread, the process, the
caller's file name split), the formatter's dictionary and ``%``-formatting, and three
levels of handler calls: about a tenth of the milter's Python work on a post.  The daemon's
handlers are known (``mtaplugin.cli``: ``logging.basicConfig`` with :data:`DAEMON_FORMAT`,
a ``StreamHandler`` on stderr), so when the logger's handlers are exactly those,
:func:`write` writes the line those handlers would write, byte for byte
(``2026-12-06 00:17:16,042 mtaplugin.decision INFO decision ...``), under each
handler's lock, as ``StreamHandler.emit`` does.  With any other handler, filter or
formatter on the way (a test's ``caplog``, a site's logging configuration, a changed level
name), it logs the ordinary way.  Whether the shortcut applies is checked at every call:
the logging configuration may change at any time.
"""

from __future__ import annotations

import logging
import time
from typing import Any

#: the daemon's log format (``mtaplugin.cli``)
DAEMON_FORMAT = "%(asctime)s %(name)s %(levelname)s %(message)s"

_DEFAULT_TIME = logging.Formatter.default_time_format
_DEFAULT_MSEC = logging.Formatter.default_msec_format or "%s,%03d"


class _Second:
    """``Formatter.formatTime``'s text for one whole second, kept until the next one."""

    __slots__ = ("second", "text")

    def __init__(self, second: int, text: str) -> None:
        self.second = second
        self.text = text


_last = _Second(-1, "")


def _plain(handler: logging.Handler) -> bool:
    """Whether ``handler`` is the daemon's: a bare ``StreamHandler`` at INFO or below, no
    filter, the default ``Formatter`` with :data:`DAEMON_FORMAT` and its default times."""
    if type(handler) is not logging.StreamHandler or handler.filters:
        return False
    if handler.level > logging.INFO:
        return True  # (it writes nothing for INFO: nothing to do)
    fmt = handler.formatter
    return (
        type(fmt) is logging.Formatter
        and fmt._fmt == DAEMON_FORMAT
        and type(fmt._style) is logging.PercentStyle
        and fmt.datefmt is None
        and fmt.converter is time.localtime
        and fmt.default_time_format == _DEFAULT_TIME
        and fmt.default_msec_format == _DEFAULT_MSEC
    )


def _handlers(log: logging.Logger) -> list[logging.StreamHandler[Any]] | None:
    """The handlers an INFO record of ``log`` would reach, when every one is the daemon's
    (None otherwise, or when none would: ``logging``'s last resort then decides)."""
    if log.disabled or log.filters or logging.getLogRecordFactory() is not logging.LogRecord:
        return None
    found: list[logging.StreamHandler[Any]] = []
    seen = False
    logger: logging.Logger | None = log
    while logger is not None:
        for handler in logger.handlers:
            seen = True
            if not _plain(handler):
                return None
            if handler.level <= logging.INFO:
                found.append(handler)  # type: ignore[arg-type]  # (_plain checked its type)
        if not logger.propagate:
            break
        logger = logger.parent
    return found if seen else None


def _asctime(now: float) -> str:
    """``Formatter.formatTime`` of a record made at ``now``."""
    global _last
    second = int(now)
    last = _last
    if last.second != second:
        last = _last = _Second(second, time.strftime(_DEFAULT_TIME, time.localtime(now)))
    return _DEFAULT_MSEC % (last.text, int((now - second) * 1000))


def write(log: logging.Logger, texts: list[str]) -> None:
    """Log each of ``texts`` at INFO on ``log`` (the caller checked that INFO is on)."""
    handlers = _handlers(log)
    if handlers is None or logging.getLevelName(logging.INFO) != "INFO":
        for text in texts:
            # the record made without looking up the caller's frame, which no handler of
            # the daemon shows
            log.handle(log.makeRecord(log.name, logging.INFO, __file__, 0, text, (), None))
        return
    head = f"{_asctime(time.time())} {log.name} INFO "
    for handler in handlers:
        handler.acquire()
        try:
            for text in texts:
                handler.stream.write(head + text + handler.terminator)
            handler.flush()
        except RecursionError:  # as StreamHandler.emit
            raise
        except Exception:
            handler.handleError(
                log.makeRecord(log.name, logging.INFO, __file__, 0, texts[0], (), None)
            )
        finally:
            handler.release()
