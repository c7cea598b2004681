"""Anthropic in provider fidelity: the content AgentScope drops, kept and sent back.

`parse()` and `StreamParser` with `fidelity="provider"` keep every block of a
response in the API's order (AgentScope keeps text, thinking and tool_use, and
a stream glues all its text into one block):

- text keeps its `citations` (streamed: `citations_delta`), the provider's
  objects verbatim;
- thinking keeps its signature even when the thinking is empty;
  `redacted_thinking` becomes a thinking block with `redacted_data`;
- `server_tool_use` and `mcp_tool_use` become `server_tool_use` blocks, every
  `*_tool_result` (web search/fetch, code execution, bash, text editor, tool
  search, MCP, advisor...) a `server_tool_result` block, each with the API's
  block verbatim in `raw` (streamed: the start block with its input filled in);
- other kinds the schema does not model (`compaction`, `fallback`, ...) stay
  verbatim (opaque blocks).

The response's `container` (`id`, `expires_at`: where code execution runs; the
next request names it to reuse its files) goes into the parsed message's
metadata as `{"container": {...}}` (`result.metadata`, `result.msg.metadata_json`):
AgentScope makes no
use of that key (its message metadata is the structured output, which stays in
`structured_output` as before).

Client tool calls keep their `caller` (programmatic tool calling) both ways.

Formatting back (provider fidelity only): server-tool blocks from Anthropic go
back as their raw blocks, in place, in the assistant message; those from
another provider, and grounding records, are dropped with a `FormatWarning`.
Redacted thinking and citations are handled by the Anthropic pass in
`_fidelity/anthropic.py`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, ClassVar, cast

from ..errors import ParseError
from ..options import ParseSettings
from ..results import ParsedResponse, copy_json
from ._context import FormatContext
from ._documents import document
from ._parse import StreamedInputs, expect, streamed_tool_use
from ._turns import Handler, Turn
from .anthropic import _CHAT_BLOCKS, _format_tool_result, _Stream, response_result

__all__ = ["PROVIDER_BLOCKS", "KeptStream", "parse_kept"]

Block = dict[str, Any]

# Anthropic's block types of a tool it runs itself; their results are `*_tool_result`.
_SERVER_USES = frozenset({"server_tool_use", "mcp_tool_use"})
# Block kinds a verbatim block must not take: the codec would read it as ours.
_OURS = frozenset(
    {"image", "audio", "video", "tool_result", "server_tool_result", "grounding", "opaque"}
)
# Anthropic block kinds with no block of ours that go back as they came (beta
# `compaction` and `fallback`; `container_upload`).
_VERBATIM_BACK = frozenset({"compaction", "fallback", "container_upload"})


def _container(value: Any, path: str) -> dict[str, Any] | None:
    """The message metadata for a response's `container` (None when it has none)."""
    if value is None:
        return None
    return {"container": copy_json(expect(value, dict, path))}


# -- blocks ------------------------------------------------------------------------


def _str(block: Block, key: str, path: str) -> str:
    value: str = expect(block.get(key), str, f"{path}.{key}")
    return value


def _text(block: Block, path: str) -> Block:
    out: Block = {"type": "text", "text": _str(block, "text", path)}
    citations = block.get("citations")
    if citations:
        where = f"{path}.citations"
        for number, citation in enumerate(expect(citations, list, where)):
            expect(citation, dict, f"{where}[{number}]")
        out["citations"] = copy_json(citations)
    return out


def _thinking(block: Block, path: str) -> Block:
    # As AgentScope's complete parse: the signature is kept even on empty thinking.
    return {
        "type": "thinking",
        "thinking": _str(block, "thinking", path),
        "signature": _str(block, "signature", path),
    }


def _redacted(block: Block, path: str) -> Block:
    return {"type": "thinking", "thinking": "", "redacted_data": _str(block, "data", path)}


def _tool_use(block: Block, path: str) -> Block:
    if "input" not in block:
        raise ParseError(f"{path}.input", "missing")
    call = {
        "type": "tool_use",
        "id": _str(block, "id", path),
        "name": _str(block, "name", path),
        "input": copy_json(block["input"]),
    }
    return _with_caller(call, block)


def _with_caller(call: Block, block: Block) -> Block:
    # Who made the call (programmatic tool calling: code execution); it goes back with it.
    if isinstance(block.get("caller"), dict):
        call["caller"] = copy_json(block["caller"])
    return call


def _server_use(block: Block, path: str) -> Block:
    tool_input = block.get("input", {})
    return {
        "type": "server_tool_use",
        "id": _str(block, "id", path),
        "name": _str(block, "name", path),
        "input": copy_json(expect(tool_input, dict, f"{path}.input")),
        "provider_type": block["type"],
        "raw": copy_json(block),
    }


def _server_result(block: Block, path: str) -> Block:
    output = block.get("content")
    # MCP reports failure in `is_error`; the other tools in an `*_error` content.
    failed = isinstance(output, dict) and str(output.get("type", "")).endswith("_error")
    return {
        "type": "server_tool_result",
        "tool_use_id": _str(block, "tool_use_id", path),
        "provider_type": block["type"],
        "output": copy_json(output),
        "is_error": block.get("is_error") is True or failed,
        "raw": copy_json(block),
    }


_BLOCKS: dict[str, Callable[[Block, str], Block]] = {
    "text": _text,
    "thinking": _thinking,
    "redacted_thinking": _redacted,
    "tool_use": _tool_use,
    **dict.fromkeys(_SERVER_USES, _server_use),
}


def _kept_block(block: Block, kind: str, path: str) -> Block | None:
    """One response block in provider fidelity, None for a kind it must skip."""
    parse = _BLOCKS.get(kind)
    if parse is not None:
        return parse(block, path)
    if kind.endswith("_tool_result"):
        return _server_result(block, path)
    return None if kind in _OURS else copy_json(block)


def _kept_content(blocks: Any, structured_output: bool) -> tuple[list[Block], Any]:
    """A complete response's `content` in provider fidelity, and the structured
    output (the last tool call's input, as AgentScope takes it)."""
    content: list[Block] = []
    metadata = None
    if not blocks:
        return content, metadata
    for index, block in enumerate(expect(blocks, list, "content")):
        kind = block.get("type") if isinstance(block, dict) else None
        if not isinstance(kind, str):
            continue
        kept = _kept_block(block, kind, f"content[{index}]")
        if kept is None:
            continue
        content.append(kept)
        if kind == "tool_use" and structured_output:
            metadata = copy_json(kept["input"])
    return content, metadata


def parse_kept(response: Block, options: ParseSettings) -> ParsedResponse:
    """A complete response in provider fidelity (AgentScope's usage, id and stop reason)."""
    content, structured = _kept_content(response.get("content"), options.structured_output)
    return response_result(
        response, content, structured, _container(response.get("container"), "container")
    )


# -- streams -----------------------------------------------------------------------


class _Entry:
    """One streamed block: its start block grown by the deltas."""

    __slots__ = ("arguments", "block", "kept")

    def __init__(self, block: Block) -> None:
        self.block = block
        # The streamed input JSON of a tool call (None: not a tool call).
        kind = block.get("type")
        self.arguments: str | None = "" if kind == "tool_use" or kind in _SERVER_USES else None
        # The block as kept, until the next delta changes it.
        self.kept: Block | None = None


_IMPLICIT = {
    "text_delta": {"type": "text", "text": ""},
    "citations_delta": {"type": "text", "text": ""},
    "thinking_delta": {"type": "thinking", "thinking": "", "signature": ""},
    "signature_delta": {"type": "thinking", "thinking": "", "signature": ""},
}


class StreamBlocks:
    """A stream's content blocks by index, each kept apart (provider fidelity)."""

    def __init__(self) -> None:
        self._entries: dict[int, _Entry] = {}
        # Where the current message's indices start: a stream holding several
        # messages (a message_start after content) keeps each one's blocks.
        self._offset = 0
        self.metadata: dict[str, Any] | None = None

    def begin(self) -> None:
        """A `message_start`: the blocks that follow come after those seen."""
        self._offset = max(self._entries) + 1 if self._entries else 0

    def message(self, message: Any, path: str) -> None:
        """Take a `message_start` message or `message_delta` delta (its container)."""
        if isinstance(message, dict) and message.get("container") is not None:
            self.metadata = _container(message["container"], f"{path}.container")

    def start(self, event: Block, path: str) -> bool:
        """A `content_block_start`; whether it changed the content."""
        block = copy_json(expect(event.get("content_block"), dict, f"{path}.content_block"))
        index: int = self._offset + expect(event.get("index"), int, f"{path}.index")
        kind = block.get("type")
        where = f"{path}.content_block"
        if kind == "tool_use":
            _str(block, "id", where)
            _str(block, "name", where)
        elif kind == "thinking":
            block.setdefault("signature", "")
        if kind in ("text", "thinking"):
            block.setdefault(kind, "")
            _str(block, kind, where)
        # A start at an index already seen starts that block afresh.
        self._entries[index] = _Entry(block)
        self._entries = dict(sorted(self._entries.items()))
        if kind in ("text", "thinking"):
            # Only deltas count, as in AgentScope, unless it starts with content.
            return bool(block.get(kind))
        return isinstance(kind, str)

    def delta(self, event: Block, path: str) -> bool:
        """A `content_block_delta`; whether it changed the content."""
        delta = expect(event.get("delta"), dict, f"{path}.delta")
        kind = delta.get("type")
        index = event.get("index")
        index = self._offset + index if isinstance(index, int) else None
        entry = None if index is None else self._entries.get(index)
        if entry is None and isinstance(kind, str) and kind in _IMPLICIT:
            # A delta without a start (lenient servers): a block of its kind.
            index = self._offset + expect(event.get("index"), int, f"{path}.index")
            entry = self._entries[index] = _Entry(copy_json(_IMPLICIT[kind]))
            self._entries = dict(sorted(self._entries.items()))
        if entry is None:
            return False
        applied = self._apply(entry.block, entry, kind, delta, f"{path}.delta")
        if applied:
            entry.kept = None
        return applied

    @staticmethod
    def _apply(block: Block, entry: _Entry, kind: Any, delta: Block, path: str) -> bool:
        if kind == "text_delta" and block.get("type") == "text":
            block["text"] += _str(delta, "text", path)
        elif kind == "citations_delta" and block.get("type") == "text":
            citation = expect(delta.get("citation"), dict, f"{path}.citation")
            block["citations"] = [*(block.get("citations") or []), citation]
        elif kind == "thinking_delta" and block.get("type") == "thinking":
            block["thinking"] += _str(delta, "thinking", path)
        elif kind == "signature_delta" and block.get("type") == "thinking":
            # Replaces the signature, as AgentScope does.
            block["signature"] = _str(delta, "signature", path)
        elif kind == "input_json_delta" and entry.arguments is not None:
            if "partial_json" not in delta:
                raise ParseError(f"{path}.partial_json", "missing")
            piece = delta["partial_json"]
            entry.arguments += expect(piece, str, f"{path}.partial_json") if piece else ""
        elif kind == "compaction_delta" and block.get("type") == "compaction":
            piece = delta.get("content")
            block["content"] = str(block.get("content") or "") + (
                expect(piece, str, f"{path}.content") if piece else ""
            )
        else:
            return False
        return True

    def content(self, last_inputs: StreamedInputs, parse: bool) -> tuple[list[Block], Any]:
        """The blocks so far (fresh copies), and the last tool call's input."""
        content: list[Block] = []
        last_input = None
        for index, entry in self._entries.items():
            block = entry.block
            if block.get("type") == "tool_use":
                call = streamed_tool_use(
                    block["id"], block["name"], entry.arguments, last_inputs, parse
                )
                last_input = call["input"]
                call["input"] = copy_json(call["input"])
                content.append(_with_caller(call, block))
                continue
            if entry.kept is None:
                kind = block.get("type")
                if entry.arguments:
                    block = {**block, "input": _complete_input(entry.arguments, block)}
                path = f"content[{index}]"
                entry.kept = _kept_block(block, kind, path) if isinstance(kind, str) else None
            if entry.kept is not None:
                content.append(copy_json(entry.kept))
        return content, last_input


_Handler = Callable[[_Stream, Block, str], bool]


class KeptStream(_Stream):
    """AgentScope's stream state (usage, id, stop reason, snapshot points), its
    content every block apart, as `StreamBlocks` keeps them."""

    def __init__(self, options: ParseSettings) -> None:
        super().__init__(options)
        self._blocks = StreamBlocks()

    def _kept_message_start(self, event: Block, path: str) -> bool:
        changed = self._message_start(event, path)
        self._blocks.begin()
        self._blocks.message(event["message"], f"{path}.message")
        return changed

    def _kept_block_start(self, event: Block, path: str) -> bool:
        changed = self._blocks.start(event, path)
        if event["content_block"].get("type") == "tool_use":
            # Known to the base state too: its final snapshot repairs tool inputs.
            self._content_block_start(event, path)
        return changed

    def _kept_block_delta(self, event: Block, path: str) -> bool:
        if "index" not in event:
            raise ParseError(f"{path}.index", "missing")
        return self._blocks.delta(event, path)

    def _kept_message_delta(self, event: Block, path: str) -> bool:
        self._blocks.message(event.get("delta"), f"{path}.delta")
        return self._message_delta(event, path)

    _EVENTS: ClassVar[dict[str, _Handler]] = {
        "message_start": cast(_Handler, _kept_message_start),
        "content_block_start": cast(_Handler, _kept_block_start),
        "content_block_delta": cast(_Handler, _kept_block_delta),
        "message_delta": cast(_Handler, _kept_message_delta),
    }

    def _content(self) -> list[Block]:
        parse = self._options.stream_tool_parsing
        content, last_input = self._blocks.content(self._last_inputs, parse)
        if self._options.structured_output and last_input is not None:
            self._metadata = last_input
        return content

    def feed(self, event: Block) -> ParsedResponse | None:
        result = super().feed(event)
        if result is not None:
            result.metadata = copy_json(self._blocks.metadata)
        return result

    def finish(self) -> ParsedResponse:
        result = super().finish()
        result.metadata = copy_json(self._blocks.metadata)
        return result


def _complete_input(arguments: str, block: Block) -> Any:
    """A server tool's streamed input once it is complete JSON; the start
    block's input until then (a partial input is never repaired)."""
    try:
        parsed = json.loads(arguments)
    except (ValueError, RecursionError):
        return block.get("input", {})
    return parsed if isinstance(parsed, dict) else block.get("input", {})


# -- formatting back ---------------------------------------------------------------


def _from_anthropic(block: Block) -> bool:
    """Whether a server-tool block came from Anthropic (its raw block is one)."""
    raw, kind = block.get("raw"), block.get("provider_type")
    if not isinstance(raw, dict) or not isinstance(kind, str) or raw.get("type") != kind:
        return False
    return (
        kind in _SERVER_USES
        if block["type"] == "server_tool_use"
        else kind.endswith("_tool_result")
    )


def _format_server(turn: Turn, index: int, block: Block) -> None:
    if _from_anthropic(block):
        # Back in place, as the API returned it: the next turn continues from it.
        turn.parts.append(copy_json(block["raw"]))
        return
    kind = block.get("provider_type") or block["type"]
    turn.ctx.warn(
        turn.msg,
        index,
        block["type"],
        f"dropped a {kind} block: Claude cannot take another provider's",
    )


def _format_tool_use(turn: Turn, index: int, block: Block) -> None:
    _CHAT_BLOCKS["tool_use"](turn, index, block)
    _with_caller(turn.parts[-1], block)


def _format_grounding(turn: Turn, index: int, block: Block) -> None:
    turn.ctx.warn(turn.msg, index, "grounding", "dropped a grounding record: Claude takes none")


def _format_verbatim(turn: Turn, index: int, block: Block) -> None:
    turn.parts.append(copy_json(block))


def _document(block: Block, ctx: FormatContext) -> Block:
    # Claude's document sources: a PDF as base64 or a URL, plain text as text.
    pdf = block["source"].get("media_type") == "application/pdf"
    found = document(block, ctx, keep_url=pdf)
    source: Block
    if found.url is not None:
        source = {"type": "url", "url": found.url}
    elif pdf:
        source = {"type": "base64", "media_type": found.media_type, "data": found.data}
    else:
        source = {"type": "text", "media_type": "text/plain", "data": found.text(ctx)}
    part: Block = {"type": "document", "source": source}
    if found.name:
        part["title"] = found.name
    return part


def _format_document(turn: Turn, index: int, block: Block) -> None:
    turn.parts.append(_document(block, turn.ctx))


def _format_result_documents(turn: Turn, index: int, block: Block) -> None:
    """A tool result whose output holds documents: Claude takes them there."""
    output = block.get("output")
    if isinstance(output, list) and any(item.get("type") == "data" for item in output):
        output = [
            _document(item, turn.ctx) if item.get("type") == "data" else item for item in output
        ]
        block = {**block, "output": output}
    _format_tool_result(turn, index, block)


# The Anthropic chat formatter's block handlers in provider fidelity.
PROVIDER_BLOCKS: dict[str, Handler] = {
    **_CHAT_BLOCKS,
    "data": _format_document,
    "tool_result": _format_result_documents,
    "tool_use": _format_tool_use,
    "server_tool_use": _format_server,
    "server_tool_result": _format_server,
    "grounding": _format_grounding,
    **dict.fromkeys(_VERBATIM_BACK, _format_verbatim),
}
