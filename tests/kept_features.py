"""What a provider-fidelity parse keeps of the recorded transcripts, feature by feature.

`tests/transcripts.py` counts the records the parsers are known to keep
(citations, server tools, ...); this module looks for what nobody counted
yet. A **feature** is one key path (list indices dropped) under the parts of
a raw response or stream that carry the model's output, with at least one
value that says something (not null, `""`, `0`, `false`, `[]` or `{}`):

- Anthropic: the message's `content` blocks, `stop_reason`,
  `stop_details`, `usage`, `container`, `context_management`; in a stream the blocks of
  `content_block_start`, the `content_block_delta` deltas, `message_start`'s
  message and `message_delta`'s delta and usage;
- OpenAI Responses: the `output` items and `usage` of a response; a
  stream's items as `response.output_item.done` gives them whole, and the
  final response's `usage`;
- Gemini: every candidate (its content parts, finish reason, grounding, URL
  context, citation metadata, logprobs...), `usageMetadata`,
  `promptFeedback`;
- Chat Completions (`openai`, `deepseek`): every choice's `message` or
  `delta`, `finish_reason` and `logprobs`, and `usage`.

Left out as not the model's output: the envelope (`id` of a stream event,
`object`, `model`, `created`, `system_fingerprint`, the request echoed back
in a Responses `response`), stream bookkeeping (`index`, `sequence_number`,
`output_index`, `item_id`, `obfuscation`...) and discriminators (`type`,
`role`), and a Responses message or (custom) function call item's own `id` and
`status` (the API takes them back without: the call is answered by its
`call_id`).

A feature is **kept** when every value it has is found in the parse result
(content blocks at any depth, their `raw` items included, usage, response
id, finish reason, metadata): a number as a number, a string as a string or
inside one (a stream's text deltas are pieces of the text kept). It is a
heuristic, not a proof (a common value, `"stop"`, `1`, is found by chance),
which is why `tests/transcripts.py` counts the categories that matter
exactly; it finds what is dropped, which it does well.

Run it for the table (per provider: features kept of features seen, and
every dropped key path with the transcripts it is dropped from):

    .venv/bin/python tests/kept_features.py [--all]
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from agentscope_proto import ParseError, ProviderError
from agentscope_proto.parsing import ParsedResponse
from transcripts import Transcript, transcripts

# Keys that are no output of the model, wherever they are.
_NOT_FEATURES = frozenset(
    {
        "type",
        "role",
        "index",
        "object",
        "sequence_number",
        "output_index",
        "content_index",
        "summary_index",
        "annotation_index",
        "item_id",
        "obfuscation",
        "created",
        "created_at",
        "completed_at",
        "model",
        "system_fingerprint",
        # Gemini's streamed call arguments: where a piece goes, not what it is.
        "jsonPath",
        "willContinue",
    }
)
# A Responses message or (custom) function call item's own id and status: the API
# takes the message (`EasyInputMessageParam`) and the call (by its `call_id`)
# back without them, and nothing refers to them.
_ENVELOPE_OF = frozenset({"message", "function_call", "custom_tool_call"})
_ENVELOPE = frozenset({"id", "status"})
# Where usage lives: counted apart (its numbers are another part of the work).
_USAGE_ROOTS = ("usage", "usageMetadata", "usage_metadata")


def _roots(provider: str, record: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """The parts of a raw record that carry the model's output, by name."""
    keys: tuple[str, ...]
    if provider == "anthropic":
        keys = ("content", "stop_reason", "stop_details", "usage", "container")
        keys += ("context_management",)
        kind = record.get("type")
        if kind == "content_block_start":
            keys = ("content_block",)
        elif kind in ("content_block_delta", "message_delta"):
            keys = ("delta", "usage", "context_management")
        elif kind == "message_start":
            yield from _roots(provider, record.get("message") or {})
            return
    elif provider == "openai_responses":
        keys = ("output", "usage", "error")
        kind = str(record.get("type", ""))
        if kind == "response.output_item.done":
            # A stream's items, whole: the deltas before are pieces of them.
            keys = ("item",)
        elif isinstance(record.get("response"), dict):
            # The final response adds the usage (and an error); its output
            # repeats the done items.
            if kind in ("response.completed", "response.incomplete", "response.failed"):
                for key in ("usage", "error"):
                    if key in record["response"]:
                        yield key, record["response"][key]
            return
        elif kind:
            return  # an item's start or a piece of it
    elif provider == "gemini":
        keys = ("candidates", "usageMetadata", "usage_metadata", "promptFeedback")
    elif provider == "dashscope":
        keys = ("output", "usage")
    else:
        keys = ("choices", "usage")
    for key in keys:
        if key in record:
            yield key, record[key]


def _leaves(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        envelope = _ENVELOPE if value.get("type") in _ENVELOPE_OF else frozenset()
        for key, item in value.items():
            if key not in _NOT_FEATURES and key not in envelope:
                yield from _leaves(item, f"{path}.{key}")
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item, f"{path}[]")
    elif value not in (None, "", 0, False):
        yield path, value


def features(transcript: Transcript) -> dict[str, list[Any]]:
    """The transcript's features: key path -> the values it has."""
    found: dict[str, list[Any]] = defaultdict(list)
    for record in transcript.records():
        if not isinstance(record, dict):
            continue
        for root, value in _roots(transcript.provider, record):
            for path, leaf in _leaves(value, root):
                found[path].append(leaf)
    return dict(found)


@dataclass
class _Kept:
    """Every value a parse result holds."""

    strings: list[str]
    numbers: set[float]
    # The kept content as JSON text without whitespace.
    bare_json: str = ""

    def has(self, value: Any) -> bool:
        if isinstance(value, bool):
            return True  # a flag is its block's kind or state; not found by value
        if isinstance(value, (int, float)):
            return float(value) in self.numbers
        text = str(value)
        if any(text in kept for kept in self.strings):
            return True
        if text[:1] in "{[":
            # JSON text (call arguments) is kept parsed: its values are.
            try:
                decoded = json.loads(text)
            except ValueError:
                decoded = None
            if isinstance(decoded, (dict, list)):
                return all(self.has(leaf) for _, leaf in _leaves(decoded, ""))
        # A piece of streamed JSON: in the kept values' JSON, spacing aside.
        return "".join(text.split()) in self.bare_json


def _collect(value: Any, kept: _Kept) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            kept.strings.append(str(key))
            _collect(item, kept)
    elif isinstance(value, list):
        for item in value:
            _collect(item, kept)
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, (int, float)):
        kept.numbers.add(float(value))
    else:
        kept.strings.append(str(value))


def kept_values(result: ParsedResponse | ProviderError | None) -> _Kept:
    """What a parse result holds (an error body: what its ProviderError says)."""
    kept = _Kept([], set())
    if isinstance(result, ProviderError):
        kept.strings += [result.error_type, result.message]
        return kept
    if result is None:
        return kept
    _collect(result.content, kept)
    kept.bare_json = "".join(json.dumps(result.content, ensure_ascii=False).split())
    _collect(result.metadata, kept)
    _collect(result.structured_output, kept)
    _collect(result.usage.to_dict() if result.usage is not None else None, kept)
    kept.strings += [result.response_id, result.raw_finish_reason]
    return kept


def dropped(transcript: Transcript) -> tuple[list[str], list[str]]:
    """The key paths of the transcript's features, and of those a
    provider-fidelity parse drops (a parse that fails drops them all)."""
    seen = features(transcript)
    result: ParsedResponse | ProviderError | None
    try:
        result = transcript.run("provider")
    except ProviderError as error:
        result = error
    except ParseError:
        result = None
    kept = kept_values(result)
    lost = [path for path, values in seen.items() if not all(kept.has(v) for v in values)]
    return sorted(seen), sorted(lost)


def is_usage(path: str) -> bool:
    return path.split(".", 1)[0] in _USAGE_ROOTS


def report(show_all: bool = False) -> str:
    """The table: per provider, features kept of features seen (usage apart),
    then each dropped key path and in how many transcripts."""
    # provider -> [features, kept, usage features, usage kept]
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    paths: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for transcript in transcripts():
        seen, lost = dropped(transcript)
        row = totals[transcript.provider]
        for path in seen:
            usage = 2 if is_usage(path) else 0
            row[usage] += 1
            row[usage + 1] += path not in lost
        for path in lost:
            paths[transcript.provider][path].append(transcript.path.name)
    lines = []
    for provider, row in sorted(totals.items()):
        kept, usage = _share(row[1], row[0]), _share(row[3], row[2])
        lines.append(f"{provider}: {kept} features kept; usage {usage}")
        for path, names in sorted(paths[provider].items(), key=lambda p: (is_usage(p[0]), p[0])):
            more = f" and {len(names) - 1} more" if len(names) > 1 else ""
            where = ", ".join(names) if show_all else names[0] + more
            lines.append(f"  dropped {path}: {len(names)} transcript(s): {where}")
    every = [sum(row[i] for row in totals.values()) for i in range(4)]
    lines.append(
        f"all: {_share(every[1], every[0])} features kept; usage {_share(every[3], every[2])}; "
        f"together {_share(every[1] + every[3], every[0] + every[2])}"
    )
    return "\n".join(lines)


def _share(kept: int, seen: int) -> str:
    return f"{kept}/{seen} ({100 * kept / seen:.1f} %)" if seen else "0/0"


if __name__ == "__main__":
    print(report(show_all="--all" in sys.argv[1:]))
