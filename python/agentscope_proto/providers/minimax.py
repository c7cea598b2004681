"""MiniMax: its OpenAI-compatible Chat Completions API (`POST /v1/chat/completions`
at api.minimax.io or api.minimaxi.com). AgentScope 1.0.21 has no MiniMax
formatter, so there is only the provider variant, `MiniMax`, the family's
`ChatCompletions` (openai.py) with MiniMax's quirks:

- the reasoning split: asked with `reasoning_split: true` (through
  `extra_body`), MiniMax returns its thinking apart from the answer, as
  `reasoning_details`, a list of `{"type": "reasoning.text", "text": ...}`
  items (streamed, each delta's `text` is the new part); they become one
  thinking block (`reasoning_field: "reasoning_details"`, the items verbatim
  under `reasoning_details`), which goes back as the assistant turn's
  `reasoning_details`, unchanged, as MiniMax wants for interleaved thinking
  in a tool loop. Without the split, the thinking stays in the text between
  `<think>` tags and goes back there. Another provider's thinking is
  dropped with a warning.
- errors: besides OpenAI's error body, MiniMax reports a failed call in
  `base_resp` (`status_code` not 0, `status_msg`): a `ProviderError`.
- tool choice: MiniMax takes `"none"` or `"auto"`: `"required"` or a named
  tool becomes `"auto"`, with a warning.
- content: text and images; audio and files are not MiniMax's (dropped with
  a warning, or a text note in a multi-agent history), documents refused.
- structured output (`response_schema`): MiniMax's reference documents
  `response_format` `{"type": "json_schema", "json_schema": {...}}` as the
  family sends it, for MiniMax-Text-01 only (its OpenAI-compatible page
  names no such parameter for the M2 models, which ignore it): the body
  keeps it, with a warning that other models do not enforce the schema.
  Parsing, the structured output is the answer's JSON object after any
  `<think>` block (MiniMax's thinking without the split), complete or
  streamed.

Request parameters: `max_completion_tokens` (MiniMax deprecates
`max_tokens`), `temperature`, `top_p`, `stream`; no `stop` nor `seed` in its
API reference. MiniMax's own (`reasoning_split`, `thinking`) go in
`extra_body`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .._generated.agentscope.formatter.v1.formatter_service_pb2 import PROVIDER_MINIMAX
from ..errors import ProviderError
from ..options import ParseSettings
from ..request import RequestFields
from ..results import ParsedResponse
from ._adapt import Json, Notes
from ._parse import expect, loads_with_repair
from ._provider import UNKNOWN_TO_AGENTSCOPE, Provider
from ._turns import Turn, TurnTable, skipped_block
from .openai import CHAT_OPTIONS, ChatCompletions, KeptChatCompletionStream

__all__ = ["PROVIDER", "MiniMax"]

Block = dict[str, Any]
FIELD = "reasoning_details"
_PARTS = frozenset({"text", "image_url"})
# MiniMax's thinking at the head of an answer, without the reasoning split.
_THINK = re.compile(r"\s*<think>.*?</think>\s*", re.DOTALL)


def _answer(text: str) -> str | None:
    """The text after a leading `<think>` block; None when there is none."""
    found = _THINK.match(text)
    return text[found.end() :] if found else None


def _json_object(text: str) -> Block | None:
    try:
        parsed = json.loads(text)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def _text(details: list[Any]) -> str:
    return "".join(
        item.get("text") or ""
        for item in details
        if isinstance(item, dict) and isinstance(item.get("text"), str)
    )


def _thinking_block(details: list[Any]) -> Block:
    return {
        "type": "thinking",
        "thinking": _text(details),
        "reasoning_field": FIELD,
        FIELD: details,
    }


def _keep(content: list[Block], details: list[Any]) -> None:
    """The reasoning details as the (first) thinking block."""
    if not details:
        return
    block = _thinking_block(details)
    if content and content[0]["type"] == "thinking":
        content[0] = block
    else:
        content.insert(0, block)


def _merged(details: list[Block], delta: list[Any], path: str) -> None:
    """A stream's reasoning details: each delta item adds to the item of its
    `index` (its first delta's keys, then the text appended)."""
    for number, item in enumerate(delta):
        item = expect(item, dict, f"{path}[{number}]")
        index = item.get("index", 0)
        found = next((d for d in details if d.get("index", 0) == index), None)
        if found is None:
            details.append(dict(item))
        elif isinstance(item.get("text"), str):
            found["text"] = (found.get("text") or "") + item["text"]


class _MiniMaxStream(KeptChatCompletionStream):
    def __init__(self, provider: str, options: ParseSettings) -> None:
        super().__init__(provider, options)
        self._details: list[Block] = []

    def feed(self, event: dict[str, Any]) -> ParsedResponse | None:
        _raise_for_base_resp(event)
        return super().feed(event)

    def _absorb(self, delta: Block, path: str) -> None:
        if delta.get(FIELD):
            _merged(self._details, expect(delta[FIELD], list, f"{path}.{FIELD}"), f"{path}.{FIELD}")
        super()._absorb(delta, path)

    def _build(self) -> list[Block]:
        content = super()._build()
        _keep(content, [dict(item) for item in self._details])
        answer = _answer(self._text) if self._options.structured_output else None
        if answer is not None:
            # The JSON after the thinking (the family repairs the whole text).
            self._structured = loads_with_repair(answer or "{}")
        return content


def _raise_for_base_resp(record: Any) -> None:
    """MiniMax's own error report: `base_resp.status_code` other than 0."""
    status = record.get("base_resp") if isinstance(record, dict) else None
    if isinstance(status, dict) and status.get("status_code") not in (None, 0):
        code, message = status.get("status_code"), status.get("status_msg") or ""
        raise ProviderError("minimax", str(code), str(message))


def _thinking(turn: Turn, index: int, block: Block) -> None:
    if block.get("reasoning_field") != FIELD:
        turn.ctx.warn(turn.msg, index, "thinking", skipped_block("thinking"))
        return
    details = block.get(FIELD)
    if not isinstance(details, list):
        details = [{"type": "reasoning.text", "text": block.get("thinking", "")}]
    turn.trailing.append({"field": FIELD, "details": details})


def _no_audio(turn: Turn, index: int, block: Block) -> None:
    turn.ctx.warn(turn.msg, index, "audio", skipped_block("audio") + " MiniMax takes no audio.")


def _finish(turn: Turn) -> None:
    start = len(turn.out)
    ChatCompletions.turns.finish(turn)
    details = [d for item in turn.trailing if item["field"] == FIELD for d in item["details"]]
    if details and len(turn.out) > start:
        turn.out[-1][FIELD] = details


_HANDLERS = {kind: h for kind, h in ChatCompletions.turns.handlers.items() if kind != "data"}
_TURNS = TurnTable({**_HANDLERS, "thinking": _thinking, "audio": _no_audio}, _finish)


def _response_format(body: Json, note: Notes) -> None:
    form = body.get("response_format")
    if isinstance(form, dict) and form.get("type") == "json_schema":
        note(
            "response_format",
            "response_format",
            "MiniMax documents response_format for MiniMax-Text-01 only: "
            "other models (the M2 series) do not enforce the JSON Schema",
        )


def _tool_choice(body: Json, note: Notes) -> None:
    choice = body.get("tool_choice")
    if choice in (None, "auto", "none"):
        return
    body["tool_choice"] = "auto"
    note("tool_choice", "tool", f'MiniMax takes "none" or "auto": {choice!r} became "auto"')


class MiniMax(ChatCompletions):
    """MiniMax's Chat Completions (see the module's docstring)."""

    turns = _TURNS
    stream_state = _MiniMaxStream

    def parse(self, response: Block, options: ParseSettings) -> ParsedResponse:
        _raise_for_base_resp(response)
        return super().parse(response, options)

    def _kept(
        self,
        choice: Block,
        path: str,
        content: list[Block],
        structured: Block | None,
        options: ParseSettings,
    ) -> Block | None:
        kept = super()._kept(choice, path, content, structured, options)
        message, where = choice["message"], f"{path}.message.{FIELD}"
        if message.get(FIELD):
            details = expect(message[FIELD], list, where)
            _keep(content, [expect(d, dict, f"{where}[{i}]") for i, d in enumerate(details)])
        text = message.get("content")
        answer = _answer(text) if isinstance(text, str) and options.structured_output else None
        if answer is not None:
            kept = _json_object(answer) or kept
        return kept

    chat_parts = _PARTS

    def pass_rest(self, body: Block, note: Notes) -> None:
        super().pass_rest(body, note)
        _tool_choice(body, note)
        _response_format(body, note)


_REQUEST_FIELDS = RequestFields(
    model="model",
    max_output_tokens="max_completion_tokens",
    temperature="temperature",
    top_p="top_p",
    stop=None,
    seed=None,
    stream="stream",
)

PROVIDER = Provider(
    enum=PROVIDER_MINIMAX,
    options=CHAT_OPTIONS,
    formatted_blocks=frozenset({"text", "thinking", "tool_use", "tool_result", "image"}),
    dropped_blocks=frozenset({"audio", "video", "opaque"}) | UNKNOWN_TO_AGENTSCOPE,
    framing="sse",
    request_fields=_REQUEST_FIELDS,
    # MiniMax's chat messages take no documents.
    document_types=frozenset(),
    agentscope=None,
    provider=MiniMax,
)
