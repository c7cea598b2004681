"""What a provider module declares (see providers/__init__.py)."""

from __future__ import annotations

from typing import Any, Protocol

from .._engine.views import MsgView
from .._generated.agentscope.formatter.v1 import formatter_service_pb2 as pb
from ..options import ParseSettings
from ..request import RequestFields
from ._context import FormatContext

__all__ = ["UNKNOWN_TO_AGENTSCOPE", "Provider", "StreamState", "nothing_to_send"]

# Block kinds AgentScope 1.0.21's formatters do not know, so they drop them
# like any unknown kind: those only provider-fidelity parsing makes (server
# tools, grounding), and AgentScope 2.x's and agentscope-java's data and hint.
UNKNOWN_TO_AGENTSCOPE = frozenset(
    {"server_tool_use", "server_tool_result", "grounding", "data", "hint"}
)


class StreamState(Protocol):
    """The accumulating state of one streamed response."""

    def feed(self, event: dict[str, Any]) -> Any:
        """Take one event's JSON; return a `ParsedResponse` snapshot when AgentScope
        would yield one for it, else None."""
        ...

    def finish(self) -> Any:
        """The final `ParsedResponse` after the stream ended."""
        ...


class Provider(Protocol):
    """One LLM provider's wire format, both directions (see providers/__init__.py)."""

    name: str
    # Its `agentscope.formatter.v1.Provider` enum value (the registry maps both ways).
    enum: pb.Provider.ValueType
    # Format options this provider accepts, by AgentScope constructor name.
    options: frozenset[str]
    # Block kinds the formatter drops (with a warning) instead of formatting.
    dropped_blocks: frozenset[str]
    # Block kinds the formatter formats. With `dropped_blocks` it must cover
    # every `ContentBlock` kind ("opaque" included); a test checks that.
    formatted_blocks: frozenset[str]
    # How a streamed HTTP body is framed: "sse" or "ndjson".
    framing: str
    # Where the provider's API takes each request parameter (`format(...,
    # request=...)`), written into the finished body by `write_request`.
    request_fields: RequestFields
    # The media types of `data` blocks (AgentScope 2.x) it takes as documents
    # in provider fidelity (`agent_turns` refuses the others); images, audio
    # and video go as its media blocks.
    document_types: frozenset[str]

    def format_messages(
        self, msgs: list[MsgView], ctx: FormatContext, *, multi_agent: bool
    ) -> list[dict[str, Any]]:
        """The provider's message list, as AgentScope's (MultiAgent)Formatter returns it."""
        ...

    def build_body(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        tool_choice: str | None,
        ctx: FormatContext,
    ) -> dict[str, Any]:
        """The request body: the message list plus tools and tool choice, as the
        AgentScope model class hands them to the SDK."""
        ...

    def parse(self, response: dict[str, Any], options: ParseSettings) -> Any:
        """A complete response as a `ParsedResponse` (see parsing.py)."""
        ...

    def stream(self, options: ParseSettings) -> StreamState:
        """A fresh state for parsing one streamed response."""
        ...


def nothing_to_send(provider: str) -> str:
    """Why a body whose message list came out empty cannot go to `provider`."""
    return (
        "nothing to send: every message formatted to nothing, and the "
        f"{provider} API needs at least one message"
    )
