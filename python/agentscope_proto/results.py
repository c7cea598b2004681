"""The result of parsing a provider response (shared by parsing.py and the providers)."""

from __future__ import annotations

import copy
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from . import _core, _json
from ._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb
from ._generated.agentscope.message.v1.message_pb2 import Msg, Role, Usage
from .message._codec import block_from_dict

__all__ = [
    "ContentDelta",
    "FinishReason",
    "ParsedResponse",
    "TokenUsage",
    "copy_json",
]

FinishReason = pb.FinishReason

_FINISH_REASONS: dict[str, int] = {
    **dict.fromkeys(
        ("stop", "end_turn", "stop_sequence", "STOP", "completed"), pb.FINISH_REASON_STOP
    ),
    **dict.fromkeys(("length", "max_tokens", "MAX_TOKENS", "incomplete"), pb.FINISH_REASON_LENGTH),
    **dict.fromkeys(("tool_calls", "tool_use", "function_call"), pb.FINISH_REASON_TOOL_CALLS),
    **dict.fromkeys(
        ("content_filter", "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "refusal"),
        pb.FINISH_REASON_CONTENT_FILTER,
    ),
}
_USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
    "reasoning_tokens",
)


@dataclass(frozen=True, slots=True)
class ContentDelta:
    """What one content block gained since the previous stream snapshot.

    (The proto's `BlockDelta` carries the same as a `ContentBlock`.)
    """

    index: int
    # Only the new part: appended text/thinking, or the tool call with only the
    # appended raw input (and its current parsed input), or a whole new block.
    block: dict[str, Any]


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Token counts of a response (None: the provider did not report it).

    The proto `Usage` message's fields; `to_proto()` gives that message.
    Mapping-style reads (`usage["input_tokens"]`, `usage["time"]`) still work
    for code written against the earlier dict.
    """

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    reasoning_tokens: int | None = None
    # AgentScope's `time`.
    time_seconds: float | None = None

    @classmethod
    def from_mapping(cls, usage: Mapping[str, Any]) -> TokenUsage:
        """From the dict form (`time` or `time_seconds` for the duration)."""
        time = usage.get("time_seconds", usage.get("time"))
        counts = {name: usage.get(name) for name in _USAGE_FIELDS}
        return cls(**counts, time_seconds=time)

    def __getitem__(self, key: str) -> Any:
        name = "time_seconds" if key == "time" else key
        if name not in _USAGE_FIELDS and name != "time_seconds":
            raise KeyError(key)
        return getattr(self, name)

    def get(self, key: str, default: Any = None) -> Any:
        """Mapping-style read with a default for unknown names."""
        try:
            return self[key]
        except KeyError:
            return default

    def to_dict(self) -> dict[str, int | float]:
        """The reported counts as a dict (`time` for the duration, as AgentScope)."""
        out: dict[str, int | float] = {
            name: value for name in _USAGE_FIELDS if (value := getattr(self, name)) is not None
        }
        if self.time_seconds is not None:
            out["time"] = self.time_seconds
        return out

    def to_proto(self) -> Usage:
        """The `agentscope.message.v1.Usage` message (unset counts stay unset)."""
        proto = Usage()
        for name in _USAGE_FIELDS:
            value = getattr(self, name)
            if value is not None:
                setattr(proto, name, int(value))
        if self.time_seconds is not None:
            proto.time_seconds = float(self.time_seconds)
        return proto


def _token_usage(usage: TokenUsage | Mapping[str, Any] | None) -> TokenUsage | None:
    if usage is None or isinstance(usage, TokenUsage):
        return usage
    return TokenUsage.from_mapping(usage)


class ParsedResponse:
    """A parsed provider response, or one snapshot of a streamed one.

    `content` holds AgentScope block dicts in AgentScope's order (thinking,
    audio, text, tool calls). `msg` is the same as an assistant `Msg`, built
    once on first use and then kept: a change to it stays, and `to_proto()`
    carries it. Assigning `content`, `response_id`, `msg_id` or `timestamp`
    rebuilds it on next use (changing `content` in place does not).
    `metadata` is the message's metadata where a provider-fidelity parse
    keeps some (Anthropic's `container`), else None.
    """

    __slots__ = (
        "_content",
        "_metadata",
        "_msg",
        "_msg_id",
        "_response_id",
        "_timestamp",
        "_usage",
        "deltas",
        "raw_finish_reason",
        "structured_output",
    )

    def __init__(
        self,
        content: list[dict[str, Any]],
        usage: TokenUsage | Mapping[str, Any] | None = None,
        response_id: str = "",
        raw_finish_reason: str = "",
        structured_output: dict[str, Any] | None = None,
        deltas: list[ContentDelta] | None = None,
        msg_id: str = "",
        timestamp: str = "",
        metadata: dict[str, Any] | None = None,
    ) -> None:
        self._msg: Msg | None = None
        self._metadata = metadata
        self._content = content
        self._usage = _token_usage(usage)
        self._response_id = response_id
        self.raw_finish_reason = raw_finish_reason
        self.structured_output = structured_output
        self.deltas: list[ContentDelta] = [] if deltas is None else deltas
        # Set by `parse()` and `StreamParser` (one id for all of a stream's
        # snapshots); empty on results built by hand.
        self._msg_id = msg_id
        self._timestamp = timestamp

    def __repr__(self) -> str:
        return (
            f"ParsedResponse(content={self._content!r}, usage={self._usage!r}, "
            f"response_id={self._response_id!r}, raw_finish_reason={self.raw_finish_reason!r})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ParsedResponse):
            return NotImplemented
        return self._key() == other._key() and self.msg == other.msg

    __hash__ = None  # type: ignore[assignment]

    def _key(self) -> tuple[Any, ...]:
        return (
            self._content,
            self._usage,
            self._response_id,
            self.raw_finish_reason,
            self.structured_output,
            self.deltas,
        )

    @property
    def content(self) -> list[dict[str, Any]]:
        """The content blocks as AgentScope dicts."""
        return self._content

    @content.setter
    def content(self, value: list[dict[str, Any]]) -> None:
        self._content = value
        self._msg = None

    @property
    def usage(self) -> TokenUsage | None:
        """Token counts (`result.usage.input_tokens`), None when not reported."""
        return self._usage

    @usage.setter
    def usage(self, value: TokenUsage | Mapping[str, Any] | None) -> None:
        self._usage = _token_usage(value)

    @property
    def response_id(self) -> str:
        """The provider's response id ("" where AgentScope invents one)."""
        return self._response_id

    @response_id.setter
    def response_id(self, value: str) -> None:
        self._response_id = value
        self._msg = None

    @property
    def metadata(self) -> dict[str, Any] | None:
        """The message metadata (`msg.metadata_json`), None when there is none."""
        return self._metadata

    @metadata.setter
    def metadata(self, value: dict[str, Any] | None) -> None:
        self._metadata = value
        self._msg = None

    @property
    def msg_id(self) -> str:
        """The id of `msg`."""
        return self._msg_id

    @msg_id.setter
    def msg_id(self, value: str) -> None:
        self._msg_id = value
        self._msg = None

    @property
    def timestamp(self) -> str:
        """The timestamp of `msg`."""
        return self._timestamp

    @timestamp.setter
    def timestamp(self, value: str) -> None:
        self._timestamp = value
        self._msg = None

    @property
    def finish_reason(self) -> pb.FinishReason.ValueType:
        """The normalised finish reason (`raw_finish_reason` keeps the provider's)."""
        if not self.raw_finish_reason:
            return pb.FINISH_REASON_UNSPECIFIED
        return _FINISH_REASONS.get(self.raw_finish_reason, pb.FINISH_REASON_OTHER)  # type: ignore[return-value]

    @property
    def msg(self) -> Msg:
        """The content as an assistant `Msg` (its invocation id is the response id)."""
        if self._msg is None:
            msg = Msg(
                id=self._msg_id,
                name="assistant",
                role=Role.ROLE_ASSISTANT,
                timestamp=self._timestamp,
            )
            msg.blocks.SetInParent()
            for index, block in enumerate(self._content):
                msg.blocks.items.append(block_from_dict(block, f"content[{index}]"))
            if self._response_id:
                msg.invocation_id = self._response_id
            if self._metadata is not None:
                msg.metadata_json = _json.dumps(self._metadata, "metadata")
            self._msg = msg
        return self._msg

    def to_proto(self) -> pb.ParseResult:
        """The result as the `agentscope.formatter.v1.ParseResult` message."""
        result = pb.ParseResult(
            response_id=self._response_id,
            finish_reason=self.finish_reason,
            raw_finish_reason=self.raw_finish_reason,
        )
        result.msg.CopyFrom(self.msg)
        if self._usage is not None:
            result.usage.CopyFrom(self._usage.to_proto())
        if self.structured_output is not None:
            result.structured_output_json = _json.dumps(self.structured_output)
        for delta in self.deltas:
            result.deltas.add(index=delta.index, block=block_from_dict(delta.block, "delta"))
        return result


_DEPRECATED = {"ParseResult": ParsedResponse, "BlockDelta": ContentDelta}


def __getattr__(name: str) -> Any:
    # The earlier names, which collide with the proto messages of another shape.
    if name in _DEPRECATED:
        new = _DEPRECATED[name]
        warnings.warn(
            f"agentscope_proto {name} is deprecated; use {new.__name__}",
            DeprecationWarning,
            stacklevel=2,
        )
        return new
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_LEAVES = frozenset({str, int, float, bool, type(None)})


def copy_json(value: Any) -> Any:
    """A deep copy of JSON-shaped data (dicts, lists and immutable leaves).

    What stream snapshots hold: `copy.deepcopy` gives the same result several
    times slower (it dispatches on every leaf and keeps a memo), and streams
    copy every snapshot. The compiled core copies dicts and lists in C (3-5x),
    handing anything else back to `_copy_json`.
    """
    copier = _core.json_copier()
    if copier is not None:
        return copier(value, _copy_json)
    return _copy_json(value)


def _copy_json(value: Any) -> Any:
    kind = type(value)
    # Leaves are tested inline: most of a snapshot's values are strings, and a
    # call per leaf was most of the copy's cost.
    if kind is dict:
        return {k: v if type(v) in _LEAVES else copy_json(v) for k, v in value.items()}
    if kind is list:
        return [v if type(v) in _LEAVES else copy_json(v) for v in value]
    if kind in _LEAVES:
        return value
    # A body's cached messages and runs (`EncodedMessage`, `JsonRun`) copy as
    # the plain dicts and lists they are: their JSON would not follow a change.
    if isinstance(value, dict):
        return {key: copy_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [copy_json(item) for item in value]
    return copy.deepcopy(value)
