"""Logging: text made safe for a log line, and the level dropped-block
warnings go out at."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from contextvars import ContextVar, Token

__all__ = [
    "LogOnce",
    "first_time",
    "log_every",
    "log_once",
    "log_safe",
    "warning_level",
    "warning_log_level",
]

# The level `FormatContext.warn` logs dropped blocks at: WARNING in process,
# where the log line is how a caller notices; the server sets DEBUG, as it
# returns every warning in the response and would otherwise log a line per
# dropped block of every request.
_WARNING_LOG_LEVEL: ContextVar[int] = ContextVar("warning_log_level", default=logging.WARNING)


@contextlib.contextmanager
def warning_log_level(level: int) -> Iterator[None]:
    """Log dropped-block warnings at `level` within the block."""
    token = _WARNING_LOG_LEVEL.set(level)
    try:
        yield
    finally:
        _WARNING_LOG_LEVEL.reset(token)


def warning_level() -> int:
    """The level dropped-block warnings are logged at here and now."""
    return _WARNING_LOG_LEVEL.get()


# The warnings (path, text) logged so far by whoever formats the same messages
# again and again (a `Conversation`): each is logged once, when first made.
# None: every warning is logged.
_LOGGED: ContextVar[set[tuple[str, str]] | None] = ContextVar("logged_once", default=None)


LogOnce = Token[set[tuple[str, str]] | None]


def log_once(logged: set[tuple[str, str]]) -> LogOnce:
    """From now on, log only the warnings not in `logged` (adding them), until
    `log_every(token)`. Not a context manager: that would cost a `Conversation`
    a microsecond a turn."""
    return _LOGGED.set(logged)


def log_every(token: LogOnce) -> None:
    """Undo `log_once`."""
    _LOGGED.reset(token)


def first_time(path: str, text: str) -> bool:
    """Whether the warning `path: text` is to be logged (see `log_once`)."""
    logged = _LOGGED.get()
    if logged is None:
        return True
    key = (path, text)
    if key in logged:
        return False
    logged.add(key)
    return True


# Control characters in logged text would let a client forge log lines.
_LOG_ESCAPES = {code: f"\\x{code:02x}" for code in (*range(32), 127)}
_LOG_ESCAPES.update({0x85: "\\x85", 0x2028: "\\u2028", 0x2029: "\\u2029"})


def log_safe(text: str) -> str:
    """`text` with control characters escaped, for log messages."""
    return text.translate(_LOG_ESCAPES)
