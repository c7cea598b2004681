"""Exceptions raised by agentscope-proto."""

from __future__ import annotations

__all__ = [
    "AgentReplyError",
    "AgentScopeProtoError",
    "FormatError",
    "HubError",
    "HubUnavailableError",
    "LimitExceededError",
    "MediaAccessError",
    "MessageFormatError",
    "OffsetOutOfRangeError",
    "ParseError",
    "ProviderError",
    "RemoteError",
    "ReplyNotFoundError",
    "SessionStateError",
    "StateUnavailableError",
    "StoredStateError",
    "ToolChoiceError",
    "UnknownProviderError",
    "UnsupportedMediaError",
]


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


class UnknownProviderError(AgentScopeProtoError, ValueError):
    """A provider name that is not registered; the message lists the known ones."""

    def __init__(self, provider: object, known: list[str]) -> None:
        super().__init__(f"unknown provider {provider!r}; expected one of {', '.join(known)}")
        self.provider = provider
        self.known = known


class FormatError(AgentScopeProtoError, ValueError):
    """Messages that cannot be formatted for the provider, naming where and why.

    `path` locates the offending input, e.g. `messages[2].content[1]`.
    """

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}" if path else reason)
        self.path = path
        self.reason = reason


class UnsupportedMediaError(FormatError, TypeError):
    """A media block the provider cannot take (e.g. a `.jpg` for Gemini)."""


class ToolChoiceError(FormatError, TypeError):
    """A `tool_choice` of the wrong type, or one naming a tool when no tools were given.

    AgentScope raises `TypeError` for both, so this is a `TypeError` as well as
    a `FormatError`; a name missing from the given tools is a plain `FormatError`.
    """


class MediaAccessError(FormatError):
    """Media that would need a file read or a download the caller did not allow.

    Pass `media_root=` to allow reading files under a directory, or
    `allow_download=True` to allow fetching http(s) URLs.
    """


class ParseError(AgentScopeProtoError, ValueError):
    """A provider response that is not valid JSON or has the wrong shape.

    `path` locates the offending value, e.g. `choices[0].message.tool_calls`.
    """

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}" if path else reason)
        self.path = path
        self.reason = reason


class ProviderError(AgentScopeProtoError):
    """The provider answered with an error body (`{"error": {...}}` or an error event)."""

    def __init__(self, provider: str, error_type: str, message: str) -> None:
        super().__init__(f"{provider} error ({error_type}): {message}")
        self.provider = provider
        self.error_type = error_type
        self.message = message


class LimitExceededError(AgentScopeProtoError):
    """A request beyond one of the server's configured limits (too many blocks,
    stream messages or stream output); the server reports it as RESOURCE_EXHAUSTED.

    `path` names the limit, e.g. `max_blocks`; `reason` says what exceeded it.
    """

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}" if path else reason)
        self.path = path
        self.reason = reason


class HubError(AgentScopeProtoError, ValueError):
    """A hub request naming a bad topic or offset, or none; INVALID_ARGUMENT.

    `path` names the field, e.g. `topic` or `after`.
    """

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}" if path else reason)
        self.path = path
        self.reason = reason


class OffsetOutOfRangeError(HubError):
    """A subscription's `after` the topic cannot resume from without a gap;
    OUT_OF_RANGE.

    `why` is `expired` (messages after it were trimmed by the topic's
    retention), `unknown` (the topic never gave it out: its store was
    emptied or replaced, or it is another topic's) or `lost` (the store lost
    the run of messages it belongs to: a Redis restarted without
    persistence, flushed or failed over; the reason says from where on).
    Subscribing again from now on (no `after`) works.
    """

    def __init__(self, path: str, reason: str, why: str = "expired") -> None:
        super().__init__(path, reason)
        self.why = why


class HubUnavailableError(AgentScopeProtoError):
    """The hub's store cannot be reached, or its server is shutting down;
    UNAVAILABLE: retry, or resume the subscription, later or elsewhere."""

    def __init__(self, reason: str, path: str = "") -> None:
        super().__init__(f"{path}: {reason}" if path else reason)
        self.path = path
        self.reason = reason


class SessionStateError(AgentScopeProtoError):
    """A call a hosted agent's session cannot take as it stands: an answer the
    session did not ask for (or to a session that is gone), or messages while
    it waits for an answer. The server reports it as FAILED_PRECONDITION.

    `path` names the request field, e.g. `user_confirm_result.confirm_results[0]`.
    """

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}" if path else reason)
        self.path = path
        self.reason = reason


class ReplyNotFoundError(AgentScopeProtoError):
    """`Resume` of a reply the server has no log of: it never ran in that
    session, or its log expired. NOT_FOUND.

    `path` names the request field, `reply_id`.
    """

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}" if path else reason)
        self.path = path
        self.reason = reason


class StateUnavailableError(AgentScopeProtoError):
    """A served agent's state store cannot be reached (`serve-agent --state`);
    UNAVAILABLE: nothing was done, retry later or on another replica."""

    def __init__(self, reason: str, path: str = "") -> None:
        super().__init__(f"{path}: {reason}" if path else reason)
        self.path = path
        self.reason = reason


class StoredStateError(AgentScopeProtoError):
    """A session's stored state cannot be taken up: corrupt, or written by an
    agent of another AgentScope version. DATA_LOSS: the session is left as
    it is stored (never replaced by a new one); an operator deletes it.

    `path` is `session_id`; the reason names the session.
    """

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}" if path else reason)
        self.path = path
        self.reason = reason


class AgentReplyError(AgentScopeProtoError):
    """A hosted agent's reply failed (the agent raised).

    `error_type` is AgentScope 2.x's `ErrorType` value (`"rate_limit"`,
    `"upstream"`, `"internal"`, ...) and `message` the sanitized text of the
    reply's `ReplyEndEvent`, never a traceback; `msg` is the reply's message
    (with `error` set) when the caller received it.
    """

    def __init__(self, error_type: str, message: str, msg: object = None) -> None:
        super().__init__(f"the agent's reply failed ({error_type}): {message}")
        self.error_type = error_type
        self.message = message
        self.msg = msg


class RemoteError(AgentScopeProtoError):
    """A gRPC failure that does not map to one of the package's own errors.

    `code` is the `grpc.StatusCode` (e.g. `UNAUTHENTICATED`, `RESOURCE_EXHAUSTED`).
    """

    def __init__(self, code: object, message: str) -> None:
        super().__init__(f"{getattr(code, 'name', code)}: {message}")
        self.code = code
        self.message = message
