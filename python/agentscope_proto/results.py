"""The result of parsing a provider response (shared by parsing.py and the providers)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from . import _json
from ._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb
from ._generated.agentscope.message.v1.message_pb2 import Msg, Role, Usage
from .message._codec import block_from_dict

__all__ = ["BlockDelta", "FinishReason", "ParseResult", "copy_json"]

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
class BlockDelta:
    """What one content block gained since the previous stream snapshot."""

    index: int
    # Only the new part: appended text/thinking, or the tool call with only the
    # appended raw input (and its current parsed input), or a whole new block.
    block: dict[str, Any]


@dataclass(slots=True)
class ParseResult:
    """A parsed provider response, or one snapshot of a streamed one.

    `content` holds AgentScope block dicts in AgentScope's order (thinking,
    audio, text, tool calls); `msg` is the same as an assistant `Msg`.
    """

    content: list[dict[str, Any]]
    usage: dict[str, int | float] | None = None
    response_id: str = ""
    raw_finish_reason: str = ""
    structured_output: dict[str, Any] | None = None
    deltas: list[BlockDelta] = field(default_factory=list)
    # Set by `parse()` and `StreamParser` (one id for all of a stream's
    # snapshots); empty on results built by hand.
    msg_id: str = ""
    timestamp: str = ""

    @property
    def finish_reason(self) -> pb.FinishReason.ValueType:
        """The normalised finish reason (`raw_finish_reason` keeps the provider's)."""
        if not self.raw_finish_reason:
            return pb.FINISH_REASON_UNSPECIFIED
        return _FINISH_REASONS.get(self.raw_finish_reason, pb.FINISH_REASON_OTHER)  # type: ignore[return-value]

    @property
    def msg(self) -> Msg:
        """The content as an assistant `Msg` (its invocation id is the response id)."""
        msg = Msg(
            id=self.msg_id, name="assistant", role=Role.ROLE_ASSISTANT, timestamp=self.timestamp
        )
        msg.blocks.SetInParent()
        for index, block in enumerate(self.content):
            msg.blocks.items.append(block_from_dict(block, f"content[{index}]"))
        if self.response_id:
            msg.invocation_id = self.response_id
        return msg

    def to_proto(self) -> pb.ParseResult:
        """The result as the `agentscope.formatter.v1.ParseResult` message."""
        result = pb.ParseResult(
            response_id=self.response_id,
            finish_reason=self.finish_reason,
            raw_finish_reason=self.raw_finish_reason,
        )
        result.msg.CopyFrom(self.msg)
        if self.usage is not None:
            result.usage.CopyFrom(_usage(self.usage))
        if self.structured_output is not None:
            result.structured_output_json = _json.dumps(self.structured_output)
        for delta in self.deltas:
            result.deltas.add(index=delta.index, block=block_from_dict(delta.block, "delta"))
        return result


def copy_json(value: Any) -> Any:
    """A deep copy of JSON-shaped data (dicts, lists and immutable leaves).

    What stream snapshots hold: `copy.deepcopy` gives the same result several
    times slower (it dispatches on every leaf and keeps a memo), and streams
    copy every snapshot.
    """
    kind = type(value)
    if kind is dict:
        return {key: copy_json(item) for key, item in value.items()}
    if kind is list:
        return [copy_json(item) for item in value]
    if kind in (str, int, float, bool) or value is None:
        return value
    return copy.deepcopy(value)


def _usage(usage: Mapping[str, int | float]) -> Usage:
    proto = Usage()
    for name in _USAGE_FIELDS:
        if usage.get(name) is not None:
            setattr(proto, name, int(usage[name]))
    if usage.get("time") is not None:
        proto.time_seconds = float(usage["time"])
    return proto
