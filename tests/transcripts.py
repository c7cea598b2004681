"""Recorded provider traffic from `../shared/provider-transcripts/`, and what must survive it.

The directory sits beside the repository (resolved from the repo root's
parent), one subdirectory per provider name of this package: `anthropic`,
`deepseek`, `gemini`, `openai` (Chat Completions) and `openai_responses`.
Each file is one transcript:

- `*.json`: a complete response body, for `parse()`;
- `*.events.jsonl`: a stream, one event's JSON per line, fed to
  `StreamParser.feed` line by line;
- `*.sse` / `*.ndjson`: a raw stream body as received, fed to
  `StreamParser.feed_bytes`.

`transcripts()` lists them (empty when the directory is absent: tests skip).

What must survive (issue 15): `count_raw(transcript)` counts, in the raw
records, what a provider-fidelity parse must keep, and `count_parsed(content)`
counts the same categories in a parse result's content blocks:

- `citation`: an Anthropic text block's `citations` entry (in a stream, a
  `citations_delta` event), an OpenAI Responses `output_text` annotation, a
  Chat Completions `message.annotations` / `delta.annotations` entry;
  parsed: one entry of a text block's `citations` list.
- `server_tool_use`: an Anthropic `server_tool_use` / `mcp_tool_use` block; an
  OpenAI Responses output item that is not a message, reasoning, client tool
  call (`function_call`, `custom_tool_call`) or `*_output` item; a
  Gemini `executableCode` part; parsed: a `server_tool_use` block.
- `server_tool_result`: an Anthropic `*_tool_result` block
  (`web_search_tool_result`, `mcp_tool_result`, ...), an OpenAI Responses
  `*_output` item (`shell_call_output`, ...), a Gemini `codeExecutionResult`
  part; parsed: a `server_tool_result` block.
- `encrypted_reasoning`: an OpenAI Responses `reasoning` item with a non-empty
  `encrypted_content`; parsed: a thinking block with `encrypted_content`.
- `redacted_reasoning`: an Anthropic `redacted_thinking` block; parsed: a
  thinking block with `redacted_data`.
- `grounding`: a Gemini candidate's `groundingMetadata` / `urlContextMetadata`
  (either spelling), each distinct record once per candidate; parsed: a
  `grounding` block.
- `phase`: an `output_text` part of an OpenAI Responses message item with a
  `phase`; parsed: a text block with `phase`.
- `logprobs`: an OpenAI Responses `output_text` part with non-empty
  `logprobs`, and a Chat Completions response (or stream) whose first choice
  has token logprobs (its `content`'s or its refusal's: a refused answer has
  no content, so once); parsed: a text block with `logprobs`.
- `reasoning_text`: the reasoning itself rather than a summary: an OpenAI
  Responses `reasoning_text` content part, and a Chat Completions response
  (or stream) whose first choice has `reasoning_content` or `reasoning` text
  (once); parsed: a thinking block saying where it came from
  (`reasoning_part` / `reasoning_field`).
- `caller`: who made a client tool call (programmatic tool calling): an
  Anthropic `tool_use` block's or an OpenAI Responses `function_call` item's
  `caller`; parsed: a tool_use block with `caller`.
- `stop_details`: an Anthropic message's (or `message_delta`'s)
  `stop_details` (why it refused), the last one; parsed: the result's
  metadata key `stop_details`.
- `finish_message`: a Gemini candidate's `finishMessage`, the last one;
  parsed: the result's metadata key `finishMessage`.

Gemini's `citationMetadata` citations count as `citation`s too (each
distinct one once per candidate, as grounding).

Conventions the parsers follow so the counts compare: an OpenAI Responses
server-tool item is ONE `server_tool_use` block (what it returned, e.g. a web
search's sources or a code interpreter's outputs, stays in its `raw`), while a
separate result record (Anthropic result blocks, Responses `*_output` items,
Gemini result parts) is one `server_tool_result` block. Streams are counted
once per record: Anthropic by `content_block_start` and the content a
`message_start` may hold (plus `citations_delta` events), OpenAI Responses
by `response.output_item.done`, Gemini and Chat Completions by the
parts/annotations of every chunk.

To extend: add a provider's raw records in its `_raw_<provider>` function, a new
category in `CATEGORIES`, `count_parsed` and the list above.

Usage (`raw_usage`): the cache read and write and reasoning token counts the
response reports (a stream: its final report), as `TokenUsage` names them:
Anthropic `usage` (a stream: `message_start`'s, updated by each
`message_delta`), Chat Completions `usage` (`prompt_tokens_details.cached_tokens`,
DeepSeek's `prompt_cache_hit_tokens`, Moonshot's top-level `cached_tokens`;
`completion_tokens_details.reasoning_tokens`), Gemini `usageMetadata`
(`cachedContentTokenCount`, `thoughtsTokenCount`), Responses `usage`
(`input_tokens_details.cached_tokens`, `output_tokens_details.reasoning_tokens`;
a stream: the final response event's).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentscope_proto.parsing import ParsedResponse, StreamParser, _Framer, parse
from agentscope_proto.providers import PROVIDERS

REPO = Path(__file__).resolve().parents[1]
ROOT = REPO.parent / "shared" / "provider-transcripts"


def load_events(path: Path) -> list[dict[str, Any]]:
    """The events of a recorded stream stored one JSON object per line."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def without_raw_input(content: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Blocks without the streamed argument text (`raw_input`), which only a
    stream's tool calls carry: what a stream and a complete parse share."""
    return [{k: v for k, v in block.items() if k != "raw_input"} for block in content]


PROVIDER_DIRS = ("anthropic", "deepseek", "gemini", "openai", "openai_responses")
CATEGORIES = (
    "citation",
    "server_tool_use",
    "server_tool_result",
    "encrypted_reasoning",
    "redacted_reasoning",
    "grounding",
    "phase",
    "logprobs",
    "reasoning_text",
    "caller",
    "stop_details",
    "finish_message",
)
# A clone has no such tree: the summary line says what it is, not where.
MISSING_REASON = (
    "needs the recorded provider transcripts: reference data kept outside the repository "
    "(CI provides it)"
)


def missing(path: Path) -> str:
    """Why tests of the transcripts under `path` skip: one reason for all when
    the whole tree is absent, so that a run's skip summary counts them together."""
    return MISSING_REASON if not ROOT.is_dir() else f"{path} is absent (no transcripts of it)"


@dataclass(frozen=True)
class Transcript:
    """One recorded response or stream."""

    provider: str
    path: Path
    # "json" (complete), "events" (one event per line) or "raw" (a stream body).
    kind: str

    @property
    def name(self) -> str:
        return f"{self.provider}/{self.path.name}"

    def events(self) -> list[str]:
        """A stream's events' JSON texts, in order."""
        if self.kind == "events":
            lines = self.path.read_text(encoding="utf-8").splitlines()
            return [line for line in lines if line.strip()]
        framer = _Framer(PROVIDERS[self.provider].framing)
        return [e.decode("utf-8") for e in framer.push(self.path.read_bytes()) + framer.flush()]

    def records(self) -> list[Any]:
        """The transcript's JSON values: the response, or every stream event that
        is JSON (a stream may hold other lines; the parser reports those)."""
        if self.kind == "json":
            return [json.loads(self.path.read_bytes())]
        out = []
        for event in self.events():
            try:
                out.append(json.loads(event))
            except ValueError:
                continue
        return out

    def run(self, fidelity: str) -> ParsedResponse:
        """Parse it as a client would: `parse()`, or a `StreamParser` fed event
        by event (raw bodies byte for byte) and finished."""
        if self.kind == "json":
            return parse(self.provider, self.path.read_bytes(), fidelity=fidelity)
        parser = StreamParser(self.provider, fidelity=fidelity)
        if self.kind == "raw":
            parser.feed_bytes(self.path.read_bytes())
        else:
            for event in self.events():
                parser.feed(event)
        return parser.finish()


def _kind(path: Path) -> str | None:
    name = path.name
    if name.endswith(".events.jsonl"):
        return "events"
    if name.endswith((".sse", ".ndjson")):
        return "raw"
    if name.endswith(".json"):
        return "json"
    return None


def transcripts() -> list[Transcript]:
    """Every transcript, sorted by provider and file name; empty if absent."""
    found = []
    for provider in PROVIDER_DIRS:
        directory = ROOT / provider
        if not directory.is_dir():
            continue
        for path in sorted(directory.iterdir()):
            kind = _kind(path)
            if kind is not None and path.is_file():
                found.append(Transcript(provider, path, kind))
    return found


# --- Counting ---------------------------------------------------------------------


def _dicts(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, list):
        yield from (item for item in value if isinstance(item, dict))


def _anthropic_block(block: Mapping[str, Any], counts: Counter[str]) -> None:
    kind = block.get("type")
    if not isinstance(kind, str):
        return
    if kind == "text":
        counts["citation"] += len(list(_dicts(block.get("citations"))))
    elif kind in ("server_tool_use", "mcp_tool_use"):
        counts["server_tool_use"] += 1
    elif kind.endswith("_tool_result"):
        counts["server_tool_result"] += 1
    elif kind == "redacted_thinking":
        counts["redacted_reasoning"] += 1
    elif kind == "tool_use" and isinstance(block.get("caller"), dict):
        counts["caller"] += 1


def _raw_anthropic(record: Any, counts: Counter[str]) -> None:
    kind = record.get("type")
    if kind == "content_block_start" and isinstance(record.get("content_block"), dict):
        _anthropic_block(record["content_block"], counts)
    elif kind == "content_block_delta" and isinstance(record.get("delta"), dict):
        if record["delta"].get("type") == "citations_delta":
            counts["citation"] += 1
    elif kind == "message":
        for block in _dicts(record.get("content")):
            _anthropic_block(block, counts)
    elif kind == "message_start" and isinstance(record.get("message"), dict):
        # A message may start with content already (a resumed call).
        for block in _dicts(record["message"].get("content")):
            _anthropic_block(block, counts)
    holder = record.get("delta") if kind == "message_delta" else record.get("message", record)
    if isinstance(holder, dict) and isinstance(holder.get("stop_details"), dict):
        # The last one counts: the metadata holds one.
        counts["stop_details"] = 1


# Responses output items that are not server-side tool records.
_RESPONSES_PLAIN = frozenset({"message", "reasoning", "function_call", "custom_tool_call"})


def _responses_item(item: Mapping[str, Any], counts: Counter[str]) -> None:
    kind = item.get("type")
    if not isinstance(kind, str):
        return
    if kind == "message":
        for part in _dicts(item.get("content")):
            if part.get("type") == "output_text":
                counts["citation"] += len(list(_dicts(part.get("annotations"))))
                counts["phase"] += bool(item.get("phase"))
                counts["logprobs"] += bool(part.get("logprobs"))
    elif kind == "reasoning":
        if item.get("encrypted_content"):
            counts["encrypted_reasoning"] += 1
        for part in _dicts(item.get("content")):
            counts["reasoning_text"] += part.get("type") == "reasoning_text" and bool(
                part.get("text")
            )
    elif kind == "function_call":
        counts["caller"] += isinstance(item.get("caller"), dict)
    elif kind.endswith("_output"):
        counts["server_tool_result"] += 1
    elif kind not in _RESPONSES_PLAIN:
        counts["server_tool_use"] += 1


def _raw_openai_responses(record: Any, counts: Counter[str]) -> None:
    if record.get("type") == "response.output_item.done":
        if isinstance(record.get("item"), dict):
            _responses_item(record["item"], counts)
    elif record.get("object") == "response" or ("output" in record and "type" not in record):
        for item in _dicts(record.get("output")):
            _responses_item(item, counts)


def _raw_chat(record: Any, counts: Counter[str]) -> None:
    for number, choice in enumerate(_dicts(record.get("choices"))):
        logprobs = choice.get("logprobs")
        first = choice.get("index", number) == 0 and isinstance(logprobs, dict)
        if first and (logprobs.get("content") or logprobs.get("refusal")):
            counts["logprobs"] = 1  # one text block, however streamed
        for key in ("message", "delta"):
            part = choice.get(key)
            if isinstance(part, dict):
                counts["citation"] += len(list(_dicts(part.get("annotations"))))
                reasoning = part.get("reasoning_content") or part.get("reasoning")
                if choice.get("index", number) == 0 and isinstance(reasoning, str) and reasoning:
                    counts["reasoning_text"] = 1  # one thinking block, however streamed


def _raw_gemini(record: Any, counts: Counter[str], seen: set[tuple[Any, ...]]) -> None:
    for index, candidate in enumerate(_dicts(record.get("candidates"))):
        content = candidate.get("content")
        parts = content.get("parts") if isinstance(content, dict) else None
        if candidate.get("finishMessage") or candidate.get("finish_message"):
            counts["finish_message"] = 1
        cited = candidate.get("citationMetadata") or candidate.get("citation_metadata")
        for citation in _dicts(cited.get("citations") if isinstance(cited, dict) else None):
            mark = (candidate.get("index", index), "citation", json.dumps(citation, sort_keys=True))
            if citation and mark not in seen:
                seen.add(mark)
                counts["citation"] += 1
        for part in _dicts(parts):
            if "executableCode" in part or "executable_code" in part:
                counts["server_tool_use"] += 1
            if "codeExecutionResult" in part or "code_execution_result" in part:
                counts["server_tool_result"] += 1
        for key in (
            "groundingMetadata",
            "grounding_metadata",
            "urlContextMetadata",
            "url_context_metadata",
        ):
            value = candidate.get(key)
            if isinstance(value, dict) and value:
                # A stream may repeat the record in later chunks: once each.
                mark = (candidate.get("index", index), key, json.dumps(value, sort_keys=True))
                if mark not in seen:
                    seen.add(mark)
                    counts["grounding"] += 1


def count_raw(transcript: Transcript) -> Counter[str]:
    """What a provider-fidelity parse of `transcript` must keep, by category."""
    counts: Counter[str] = Counter()
    seen: set[tuple[Any, ...]] = set()
    for record in transcript.records():
        if not isinstance(record, dict):
            continue
        provider = transcript.provider
        if provider == "anthropic":
            _raw_anthropic(record, counts)
        elif provider == "openai_responses":
            _raw_openai_responses(record, counts)
        elif provider == "gemini":
            _raw_gemini(record, counts, seen)
        else:
            _raw_chat(record, counts)
    return +counts


def count_parsed(
    content: list[dict[str, Any]], metadata: Mapping[str, Any] | None = None
) -> Counter[str]:
    """The same categories in a parse result's content blocks (and metadata)."""
    counts: Counter[str] = Counter()
    for block in content:
        kind = block.get("type")
        if kind == "text":
            counts["citation"] += len(list(_dicts(block.get("citations"))))
            counts["phase"] += bool(block.get("phase"))
            counts["logprobs"] += bool(block.get("logprobs"))
        elif kind in ("server_tool_use", "server_tool_result", "grounding"):
            counts[kind] += 1
        elif kind == "thinking":
            if block.get("encrypted_content"):
                counts["encrypted_reasoning"] += 1
            if block.get("redacted_data"):
                counts["redacted_reasoning"] += 1
            if block.get("reasoning_part") or block.get("reasoning_field"):
                counts["reasoning_text"] += 1
        elif kind == "tool_use":
            counts["caller"] += isinstance(block.get("caller"), dict)
    if metadata is not None and isinstance(metadata.get("stop_details"), dict):
        counts["stop_details"] += 1
    if metadata is not None and metadata.get("finishMessage"):
        counts["finish_message"] += 1
    return +counts


# --- Usage ------------------------------------------------------------------------

USAGE_COUNTS = ("cache_read_input_tokens", "cache_creation_input_tokens", "reasoning_tokens")


def _at(value: Any, *keys: str) -> Any:
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _first(*values: Any) -> Any:
    return next((value for value in values if value is not None), None)


def _last_usage(records: list[Any], *paths: tuple[str, ...]) -> Any:
    """The last record's usage object found at any of `paths`."""
    found = None
    for record in records:
        for path in paths:
            value = _at(record, *path)
            if isinstance(value, dict):
                found = value
    return found


def _anthropic_usage(records: list[Any]) -> dict[str, Any] | None:
    usage: dict[str, Any] = {}
    for record in records:
        kind = _at(record, "type")
        if kind == "message" or kind == "message_start":
            usage.update(_at(record, "usage") or _at(record, "message", "usage") or {})
        elif kind == "message_delta":
            delta = _at(record, "usage") or {}
            usage.update({key: value for key, value in delta.items() if value is not None})
    if not usage:
        return None
    return {
        "cache_read_input_tokens": usage.get("cache_read_input_tokens"),
        "cache_creation_input_tokens": usage.get("cache_creation_input_tokens"),
        "reasoning_tokens": None,
    }


def _chat_usage(records: list[Any]) -> dict[str, Any] | None:
    usage = _last_usage(records, ("usage",))
    if usage is None:
        return None
    cached = _first(
        _at(usage, "prompt_tokens_details", "cached_tokens"),
        usage.get("prompt_cache_hit_tokens"),
        usage.get("cached_tokens"),
    )
    return {
        "cache_read_input_tokens": cached,
        "cache_creation_input_tokens": None,
        "reasoning_tokens": _at(usage, "completion_tokens_details", "reasoning_tokens"),
    }


def _gemini_usage(records: list[Any]) -> dict[str, Any] | None:
    usage = _last_usage(records, ("usageMetadata",), ("usage_metadata",))
    if usage is None:
        return None
    return {
        "cache_read_input_tokens": _first(
            usage.get("cachedContentTokenCount"), usage.get("cached_content_token_count")
        ),
        "cache_creation_input_tokens": None,
        "reasoning_tokens": _first(
            usage.get("thoughtsTokenCount"), usage.get("thoughts_token_count")
        ),
    }


def _responses_usage(records: list[Any]) -> dict[str, Any] | None:
    complete = [r for r in records if _at(r, "object") == "response"]
    usage = _last_usage(complete, ("usage",)) or _last_usage(records, ("response", "usage"))
    if usage is None:
        return None
    return {
        "cache_read_input_tokens": _at(usage, "input_tokens_details", "cached_tokens"),
        "cache_creation_input_tokens": None,
        "reasoning_tokens": _at(usage, "output_tokens_details", "reasoning_tokens"),
    }


_USAGE = {
    "anthropic": _anthropic_usage,
    "gemini": _gemini_usage,
    "openai_responses": _responses_usage,
    "openai": _chat_usage,
    "deepseek": _chat_usage,
}


def raw_usage(transcript: Transcript) -> dict[str, Any] | None:
    """The counts of `USAGE_COUNTS` the transcript reports (None where a
    count is not reported; None for all when it reports no usage)."""
    records = [record for record in transcript.records() if isinstance(record, dict)]
    return _USAGE[transcript.provider](records)
