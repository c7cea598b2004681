"""The RPC plumbing the servicer shares: decoding, deadlines, and one error path.

Clients are untrusted (SECURITY.md): requests that do not decode are
INVALID_ARGUMENT, not gRPC's UNKNOWN; work running in a thread stops between
messages once the client's deadline has passed or it cancelled; every error,
on unary and streaming RPCs alike, becomes a status through `rpc_errors`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import traceback
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any, NamedTuple, TypeVar, overload

import grpc
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from google.rpc import code_pb2
from grpc_status import rpc_status

from .._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb
from .._log import log_safe
from .._wire import read_varint, varint_bytes
from ..errors import AgentScopeProtoError, MessageFormatError
from .status import status_for

__all__ = [
    "Budget",
    "Stopped",
    "Wired",
    "checked",
    "decoded",
    "encoded_format_response",
    "lenient",
    "log_failure",
    "rpc_errors",
]

logger = logging.getLogger("agentscope_proto.server")

T = TypeVar("T")
Context = grpc.aio.ServicerContext[Any, Any]


class _Undecodable:
    """A request whose bytes are not a message of its type (see `lenient`)."""

    __slots__ = ("path", "reason")

    def __init__(self, reason: str, path: str = "") -> None:
        self.reason = reason
        self.path = path


def _is_repeated(field: FieldDescriptor) -> bool:
    # `is_repeated` replaced `label` in protobuf 6; the oldest runtime has only `label`.
    flag = getattr(field, "is_repeated", None)
    if flag is None:
        return bool(getattr(field, "label") == FieldDescriptor.LABEL_REPEATED)  # noqa: B009
    return bool(flag)


_MAX_DEPTH = 100  # protobuf's own nesting limit


def _bad_utf8(descriptor: Any, data: memoryview, path: str = "", depth: int = 0) -> str | None:
    """The path of the first `string` field in `data` that is not UTF-8, if any.

    protobuf only says "String field had bad UTF-8"; a client deserves to know
    which field (e.g. `response_json`, `messages[0].text`). A walk over the
    wire format (over a memoryview: nested messages are not copied), run
    only after decoding failed; it gives up (None) on anything else wrong
    with the bytes.
    """
    seen: dict[int, int] = {}
    pos = 0
    while pos < len(data):
        key, pos = read_varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            _, pos = read_varint(data, pos)
            continue
        if wire in (1, 5):
            pos += 8 if wire == 1 else 4
            continue
        if wire != 2:
            return None  # groups: not in a proto3 schema
        size, pos = read_varint(data, pos)
        if pos + size > len(data):
            raise IndexError("truncated")
        value, pos = data[pos : pos + size], pos + size
        field = descriptor.fields_by_number.get(number)
        if field is None or field.type not in (field.TYPE_STRING, field.TYPE_MESSAGE):
            continue
        name = f"{path}.{field.name}" if path else field.name
        if _is_repeated(field):
            name += f"[{seen.get(number, 0)}]"
            seen[number] = seen.get(number, 0) + 1
        if field.type == field.TYPE_STRING:
            try:
                str(value, "utf-8")
            except UnicodeDecodeError:
                return name
        elif depth < _MAX_DEPTH:
            found = _bad_utf8(field.message_type, value, name, depth + 1)
            if found is not None:
                return found
    return None


class Wired(NamedTuple):
    """A decoded request with the bytes it arrived as (see `lenient`)."""

    message: Message
    data: bytes


def lenient(message_class: type[Message], *, keep_wire: bool = False) -> Callable[[bytes], Any]:
    """A request deserializer that never raises.

    gRPC answers a deserializer's exception with UNKNOWN and its class name;
    handing the servicer a placeholder instead lets it answer INVALID_ARGUMENT
    with details, like any other bad input. With `keep_wire`, a request that
    decodes comes as `Wired(message, data)`.
    """
    descriptor = message_class.DESCRIPTOR
    name = descriptor.full_name

    def deserialize(data: bytes) -> Any:
        try:
            message = message_class.FromString(data)
            return Wired(message, data) if keep_wire else message
        except Exception as exc:  # DecodeError, or nesting past protobuf's limit
            try:
                path = _bad_utf8(descriptor, memoryview(data))
            except IndexError:  # truncated: not UTF-8's fault
                path = None
            if path is not None:
                return _Undecodable("invalid UTF-8 in a string field", path)
            return _Undecodable(f"not a valid {name} ({type(exc).__name__})")

    return deserialize


def _tag(field: str, wire_type: int) -> bytes:
    return varint_bytes(pb.FormatResponse.DESCRIPTOR.fields_by_name[field].number << 3 | wire_type)


_BODY_TAG = _tag("body_json", 2)
_WARNING_TAG = _tag("warnings", 2)
_COUNT_TAG = _tag("token_count", 0)


def encoded_format_response(
    body_json: bytes, warnings: list[Any], token_count: int | None
) -> bytes:
    """`FormatResponse(body_json=..., warnings=..., token_count=...)` as the
    bytes protobuf would write, written directly: the body (tens of KB on an
    agent's loop) is copied once instead of into a message and out again.
    `body_json` must be UTF-8, as `body_to_json` writes it."""
    parts: list[bytes] = []
    if body_json:
        parts += (_BODY_TAG, varint_bytes(len(body_json)), body_json)
    for warning in warnings:
        data = warning.SerializeToString()
        parts += (_WARNING_TAG, varint_bytes(len(data)), data)
    if token_count is not None:
        parts += (_COUNT_TAG, varint_bytes(token_count))
    return b"".join(parts)


def decoded(request: T | _Undecodable, path: str = "request") -> T:
    """`request`, or a `MessageFormatError` if it did not decode.

    The error names the field with invalid UTF-8 when that was the cause
    (below `path` for a stream message, e.g. `requests[2].chunk_json`).
    """
    if isinstance(request, _Undecodable):
        if not request.path:
            raise MessageFormatError(path, request.reason)
        where = request.path if path == "request" else f"{path}.{request.path}"
        raise MessageFormatError(where, request.reason)
    return request


class Stopped(Exception):
    """The RPC ran out of time (deadline, client cancelled, idle stream): DEADLINE_EXCEEDED."""


class Budget:
    """Lets work running in a thread notice that its RPC is over.

    grpc cancels the handler coroutine when the deadline passes or the client
    cancels, but cannot stop a thread; the work checks this between messages.
    """

    def __init__(self, context: Context) -> None:
        remaining = context.time_remaining()
        self._deadline = None if remaining is None else time.monotonic() + remaining
        self.cancelled = False
        # Set when the work runs in a worker thread: only then can the RPC be
        # cancelled while it runs (inline work holds the event loop).
        self.threaded = False

    def check(self) -> None:
        if self.cancelled or (self._deadline is not None and time.monotonic() >= self._deadline):
            raise Stopped("deadline exceeded; work stopped")

    @property
    def can_stop(self) -> bool:
        """Whether the RPC can end while its work runs: it has a deadline, or
        the work runs in a thread (where a cancellation can arrive)."""
        return self._deadline is not None or self.threaded


def checked(items: Sequence[T], budget: Budget) -> Sequence[T]:
    """`items`, checking `budget` before each one is read (`items` as they are
    when nothing can end the RPC meanwhile: no deadline, and the work inline)."""
    if not budget.can_stop:
        return items
    return _Checked(items, budget)


class _Checked(Sequence[T]):
    """A sequence whose items are handed out only while the RPC lasts. A
    sequence, not a generator: the server's format cache skips the messages
    a cached run covers by slicing."""

    def __init__(self, items: Sequence[T], budget: Budget) -> None:
        self._items = items
        self._budget = budget

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[T]: ...

    def __getitem__(self, index: int | slice) -> T | Sequence[T]:
        if isinstance(index, slice):
            return _Checked(self._items[index], self._budget)
        self._budget.check()
        return self._items[index]

    def __iter__(self) -> Iterator[T]:
        for item in self._items:
            self._budget.check()
            yield item


def log_failure(method: str, exc: BaseException) -> None:
    # Not logger.exception: the exception's text may carry client input, and a
    # newline in it would forge a log line. repr() escapes it; the frames are
    # our own code.
    frames = "".join(traceback.format_tb(exc.__traceback__))
    logger.error("%s failed: %s\n%s", method, log_safe(repr(exc)), frames.rstrip())


@contextlib.asynccontextmanager
async def rpc_errors(
    method: str, context: Context, budget: Budget | None = None
) -> AsyncIterator[None]:
    """Ends the RPC with the status its error maps to, and logs its outcome at DEBUG.

    The package's exceptions become statuses with details (`status.py`);
    anything else is a bug, reported as INTERNAL without internals.
    """
    started = time.perf_counter()
    code = "OK"
    try:
        yield
    except asyncio.CancelledError:
        code = "CANCELLED"
        if budget is not None:
            budget.cancelled = True
        raise
    except Stopped as exc:
        code = "DEADLINE_EXCEEDED"
        await context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, str(exc))
        raise  # unreachable: abort raises
    except AgentScopeProtoError as exc:
        status = status_for(exc)
        code = code_pb2.Code.Name(status.code)
        await context.abort_with_status(rpc_status.to_status(status))
        raise  # unreachable: abort raises
    except grpc.aio.AbortError:
        code = "ABORTED_BY_HANDLER"
        raise
    except Exception as exc:
        code = "INTERNAL"
        log_failure(method, exc)
        await context.abort(grpc.StatusCode.INTERNAL, f"internal error in {method}")
        raise  # unreachable: abort raises
    finally:
        logger.debug("%s %s %.2fms", method, code, (time.perf_counter() - started) * 1e3)
