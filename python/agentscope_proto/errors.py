"""Exceptions raised by agentscope-proto."""

from __future__ import annotations

__all__ = ["AgentScopeProtoError", "MessageFormatError"]


class AgentScopeProtoError(Exception):
    """Base class of every error this package raises on purpose."""


class MessageFormatError(AgentScopeProtoError, ValueError):
    """Input that does not describe a valid message, naming where it went wrong.

    `path` locates the offending value, e.g. `content[2].source.data`.
    """

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}" if path else reason)
        self.path = path
        self.reason = reason
