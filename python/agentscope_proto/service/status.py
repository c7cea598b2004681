"""Errors to gRPC statuses with details, and back.

The server turns each of the package's exceptions into a status whose details
carry a `google.rpc.ErrorInfo` (the exception class and the offending path)
and, for bad input, a `google.rpc.BadRequest` field violation; the client turns
such a status back into the same exception class.
"""

from __future__ import annotations

from typing import Any

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from .. import errors
from ..errors import RemoteError

__all__ = ["DOMAIN", "error_from_rpc", "error_from_status", "status_for"]

DOMAIN = "agentscope-proto"

_CODES: dict[type, int] = {
    errors.MediaAccessError: code_pb2.FAILED_PRECONDITION,
    errors.UnsupportedMediaError: code_pb2.INVALID_ARGUMENT,
    errors.ToolChoiceError: code_pb2.INVALID_ARGUMENT,
    errors.FormatError: code_pb2.INVALID_ARGUMENT,
    errors.MessageFormatError: code_pb2.INVALID_ARGUMENT,
    errors.ParseError: code_pb2.INVALID_ARGUMENT,
    errors.UnknownProviderError: code_pb2.INVALID_ARGUMENT,
    errors.ProviderError: code_pb2.INVALID_ARGUMENT,
    errors.LimitExceededError: code_pb2.RESOURCE_EXHAUSTED,
    errors.HubError: code_pb2.INVALID_ARGUMENT,
    errors.OffsetOutOfRangeError: code_pb2.OUT_OF_RANGE,
    errors.HubUnavailableError: code_pb2.UNAVAILABLE,
    errors.SessionStateError: code_pb2.FAILED_PRECONDITION,
    errors.StateUnavailableError: code_pb2.UNAVAILABLE,
    errors.ReplyNotFoundError: code_pb2.NOT_FOUND,
    errors.StoredStateError: code_pb2.DATA_LOSS,
}
_CLASSES: dict[str, Any] = {cls.__name__: cls for cls in (*_CODES, errors.AgentReplyError)}
# The PreconditionFailure violation type of each FAILED_PRECONDITION error.
_PRECONDITIONS: dict[type, str] = {
    errors.MediaAccessError: "MEDIA_ACCESS",
    errors.SessionStateError: "SESSION_STATE",
}
# A failed reply's status, by its AgentScope 2.x error type: what a gRPC
# client's retry policy should make of it. Quota and upstream outages may
# pass (RESOURCE_EXHAUSTED, UNAVAILABLE); a misconfigured agent will not
# (FAILED_PRECONDITION); anything else is the agent's bug (INTERNAL).
_REPLY_CODES: dict[str, int] = {
    "rate_limit": code_pb2.RESOURCE_EXHAUSTED,
    "upstream": code_pb2.UNAVAILABLE,
    "connection": code_pb2.UNAVAILABLE,
    "authentication": code_pb2.FAILED_PRECONDITION,
    "permission": code_pb2.FAILED_PRECONDITION,
    "invalid_request": code_pb2.FAILED_PRECONDITION,
    "setup": code_pb2.FAILED_PRECONDITION,
}


# A status travels in HTTP/2 trailers, which clients accept up to 8 KiB by
# default (grpc.max_metadata_size); past that the client sees RESOURCE_EXHAUSTED
# "Stream removed" instead of the error. Error texts echo client input (a 5000
# character URL, a provider's error message), and grpc-message percent-encodes
# every non-ASCII byte, so each echoed text is clipped to a few hundred bytes.
_PATH_BYTES = 256
_TEXT_BYTES = 512


def _clip(text: str, limit: int = _TEXT_BYTES) -> str:
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text
    head = data[:limit].decode("utf-8", "ignore")
    return f"{head}... ({len(text)} characters in all)"


def _pack(message: object) -> any_pb2.Any:
    packed = any_pb2.Any()
    packed.Pack(message)  # type: ignore[arg-type]
    return packed


def _code(exc: errors.AgentScopeProtoError) -> int:
    for cls in type(exc).__mro__:
        code = _CODES.get(cls)
        if code is not None:
            return code
    return int(code_pb2.INVALID_ARGUMENT)


def status_for(exc: errors.AgentScopeProtoError, field_prefix: str = "") -> status_pb2.Status:
    """The status (with details) that reports `exc` to a client.

    `field_prefix` places the error's path inside the request, e.g. a message
    path `content[1]` becomes `messages[3].content[1]`.
    """
    if isinstance(exc, errors.AgentReplyError):
        return _reply_status(exc)
    path = getattr(exc, "path", "") or ""
    if field_prefix:
        path = (
            f"{field_prefix}.{path}" if path and not path.startswith("[") else field_prefix + path
        )
    path = _clip(path, _PATH_BYTES)
    code = _code(exc)
    metadata = {"path": path}
    if isinstance(exc, errors.ProviderError):
        metadata.update(provider=_clip(exc.provider, 64), error_type=_clip(exc.error_type, 128))
    if isinstance(exc, errors.OffsetOutOfRangeError):
        metadata["why"] = exc.why
    details = [
        _pack(
            error_details_pb2.ErrorInfo(reason=type(exc).__name__, domain=DOMAIN, metadata=metadata)
        )
    ]
    reason = _clip(getattr(exc, "reason", None) or str(exc))
    if code == code_pb2.FAILED_PRECONDITION:
        kind = next(_PRECONDITIONS[c] for c in type(exc).__mro__ if c in _PRECONDITIONS)
        violation = error_details_pb2.PreconditionFailure.Violation(
            type=kind, subject=path, description=reason
        )
        details.append(_pack(error_details_pb2.PreconditionFailure(violations=[violation])))
    elif code == code_pb2.RESOURCE_EXHAUSTED:
        # The subject is the limit's name (e.g. `max_blocks`), so a client can
        # tell which configured limit it ran into.
        quota = error_details_pb2.QuotaFailure.Violation(subject=path, description=reason)
        details.append(_pack(error_details_pb2.QuotaFailure(violations=[quota])))
    elif code != code_pb2.UNAVAILABLE:
        field_violation = error_details_pb2.BadRequest.FieldViolation(
            field=path, description=reason
        )
        details.append(_pack(error_details_pb2.BadRequest(field_violations=[field_violation])))
    message = f"{path}: {reason}" if path else reason
    return status_pb2.Status(code=code, message=message, details=details)


def _reply_status(exc: errors.AgentReplyError) -> status_pb2.Status:
    """A failed reply: its code by error type, and the type in an ErrorInfo."""
    info = error_details_pb2.ErrorInfo(
        reason=type(exc).__name__,
        domain=DOMAIN,
        metadata={"error_type": _clip(exc.error_type, 64)},
    )
    message = _clip(exc.message)
    return status_pb2.Status(
        code=_REPLY_CODES.get(exc.error_type, code_pb2.INTERNAL),
        message=message,
        details=[_pack(info)],
    )


def error_from_status(
    code: grpc.StatusCode, message: str, status: status_pb2.Status | None
) -> Exception:
    """The package exception a status with our details stands for (or a generic one)."""
    if status is not None:
        for detail in status.details:
            info = error_details_pb2.ErrorInfo()
            if detail.Unpack(info) and info.domain == DOMAIN and info.reason in _CLASSES:
                cls = _CLASSES[info.reason]
                path = info.metadata.get("path", "")
                reason = message.removeprefix(f"{path}: ") if path else message
                if cls is errors.ProviderError:
                    return errors.ProviderError(
                        info.metadata.get("provider", ""),
                        info.metadata.get("error_type", ""),
                        reason,
                    )
                if cls is errors.UnknownProviderError:
                    return errors.FormatError(path, reason)
                if cls is errors.OffsetOutOfRangeError:
                    return errors.OffsetOutOfRangeError(path, reason, info.metadata.get("why", ""))
                if cls is errors.HubUnavailableError:
                    return errors.HubUnavailableError(reason, path)
                if cls is errors.AgentReplyError:
                    return errors.AgentReplyError(info.metadata.get("error_type", ""), message)
                error: Exception = cls(path, reason)
                return error
    return RemoteError(code, message)


def error_from_rpc(error: grpc.RpcError) -> Exception:
    """The package exception a failed call's status stands for (its details
    read from the trailing metadata)."""
    metadata: Any = error.trailing_metadata() if hasattr(error, "trailing_metadata") else None
    status = None
    for key, value in metadata or ():
        if key == rpc_status.GRPC_DETAILS_METADATA_KEY:
            status = status_pb2.Status.FromString(value)
    code: Any = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
    details: Any = error.details() if hasattr(error, "details") else ""
    return error_from_status(code, details or "", status)
