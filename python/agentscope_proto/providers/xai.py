"""xAI's Grok through its REST Chat Completions API (`POST /v1/chat/completions`
at api.x.ai; its gRPC API, which `xai-sdk` speaks, is not this module's).
AgentScope 1.0.21 has no xAI formatter, so there is only the provider
variant, `XAI`, the family's `ChatCompletions` (openai.py) with xAI's quirks:

- reasoning: Grok's reasoning models return `reasoning_content` (grok-3-mini)
  and count reasoning tokens in `usage.completion_tokens_details`; both are
  kept. xAI's encrypted reasoning exists only in its Responses and gRPC APIs:
  the Chat Completions API returns none and takes no reasoning back, so a
  thinking block (Grok's own included) is dropped with a warning when the
  conversation goes back to xAI this way.
- search: the sources a search answer cites come as a top-level `citations`
  list of URLs; each becomes a `url_citation` of the message's text (as a
  Chat Completions annotation would), and, like annotations, is not sent back.
- usage: cached prompt tokens (`prompt_tokens_details.cached_tokens`) and
  reasoning tokens as OpenAI's. xAI's own counts, `num_sources_used` (the
  search sources the answer drew on) and `cost_in_usd_ticks` (the call's
  cost), have no field in the schema's `Usage`: they go verbatim into the
  message's metadata as `{"usage": {"num_sources_used": ..,
  "cost_in_usd_ticks": ..}}` (`result.metadata`, `result.msg.metadata_json`),
  complete or streamed (the stream's usage chunk).
- content: text and images; audio and files are not xAI's to take (dropped
  with a warning, or a text note in a multi-agent history), documents are
  refused.

Request parameters: `max_completion_tokens` for the output budget (xAI's
`max_tokens` is deprecated), `seed` and `stop` as OpenAI's; xAI's own
(`reasoning_effort`, `search_parameters`, ...) go in `extra_body`.
"""

from __future__ import annotations

from typing import Any

from .._generated.agentscope.formatter.v1.formatter_service_pb2 import PROVIDER_XAI
from ..options import ParseSettings
from ..results import ParsedResponse
from ._parse import expect
from ._provider import UNKNOWN_TO_AGENTSCOPE, Provider
from ._turns import Turn, TurnTable, skipped_block
from .openai import (
    CHAT_OPTIONS,
    CHAT_REQUEST_FIELDS,
    ChatCompletions,
    KeptChatCompletionStream,
)

__all__ = ["PROVIDER", "XAI"]

Block = dict[str, Any]
# xAI's chat content parts: text and images.
_PARTS = frozenset({"text", "image_url"})


def _no_reasoning_back(turn: Turn, index: int, block: Block) -> None:
    turn.ctx.warn(
        turn.msg,
        index,
        "thinking",
        "dropped a thinking block: xAI's Chat Completions API takes no reasoning back",
    )


def _no_audio(turn: Turn, index: int, block: Block) -> None:
    turn.ctx.warn(turn.msg, index, "audio", skipped_block("audio") + " xAI takes no audio input.")


_HANDLERS = {kind: h for kind, h in ChatCompletions.turns.handlers.items() if kind != "data"}
_TURNS = TurnTable(
    {**_HANDLERS, "thinking": _no_reasoning_back, "audio": _no_audio},
    ChatCompletions.turns.finish,
)


def _url_citations(record: Block, path: str) -> list[Block]:
    """A response's (or chunk's) top-level search `citations`, as url_citations."""
    urls = record.get("citations")
    if not urls:
        return []
    cited = []
    for index, url in enumerate(expect(urls, list, f"{path}citations")):
        url = expect(url, str, f"{path}citations[{index}]")
        cited.append({"type": "url_citation", "url_citation": {"url": url}})
    return cited


# xAI's usage counts beside OpenAI's, kept in the message's metadata.
_USAGE_EXTRAS = ("num_sources_used", "cost_in_usd_ticks")


def _usage_metadata(record: Block, path: str) -> dict[str, Any] | None:
    """`{"usage": {...}}` of the record's xAI usage counts; None when it has none."""
    usage = record.get("usage")
    if not isinstance(usage, dict):
        return None
    extras = {
        key: expect(usage[key], (int, float), f"{path}usage.{key}")
        for key in _USAGE_EXTRAS
        if usage.get(key) is not None
    }
    return {"usage": extras} if extras else None


def _cite(content: list[Block], cited: list[Block]) -> None:
    text = next((block for block in content if block["type"] == "text"), None)
    if text is not None and cited:
        text["citations"] = [*text.get("citations", []), *cited]


class _XAIStream(KeptChatCompletionStream):
    def __init__(self, provider: str, options: ParseSettings) -> None:
        super().__init__(provider, options)
        self._search: list[Block] = []

    def feed(self, event: dict[str, Any]) -> ParsedResponse | None:
        if isinstance(event, dict):
            # xAI repeats the list on every chunk of a search answer: the last counts.
            self._search = _url_citations(event, "chunk.") or self._search
            self._metadata = _usage_metadata(event, "chunk.") or self._metadata
        return super().feed(event)

    def _build(self) -> list[Block]:
        content = super()._build()
        _cite(content, self._search)
        return content


class XAI(ChatCompletions):
    """Grok's Chat Completions (see the module's docstring)."""

    turns = _TURNS
    stream_state = _XAIStream

    def parse(self, response: Block, options: ParseSettings) -> ParsedResponse:
        result = super().parse(response, options)
        _cite(result.content, _url_citations(response, ""))
        result.metadata = _usage_metadata(response, "")
        return result

    chat_parts = _PARTS


PROVIDER = Provider(
    enum=PROVIDER_XAI,
    options=CHAT_OPTIONS,
    formatted_blocks=frozenset({"text", "tool_use", "tool_result", "image"}),
    dropped_blocks=frozenset({"thinking", "audio", "video", "opaque"}) | UNKNOWN_TO_AGENTSCOPE,
    framing="sse",
    # As OpenAI's: `max_completion_tokens`, `seed`, `stop`.
    request_fields=CHAT_REQUEST_FIELDS,
    # xAI's chat messages take no documents.
    document_types=frozenset(),
    agentscope=None,
    provider=XAI,
)
