"""OpenAI Responses output items in provider fidelity: parse and stream.

AgentScope reads only `reasoning` summaries, `output_text` parts and
`function_call` items. Provider fidelity keeps, in output order:

- `reasoning`: a thinking block per summary text (AgentScope's text) with
  `reasoning_id`, the first also `encrypted_content`; a reasoning item with no
  summary text still gives one empty thinking block, so its id and encrypted
  content can go back with the next turn (the API wants a reasoning item
  before the calls that followed it).
- `message`: one text block per `output_text` part (never glued to its
  neighbours), its `annotations` verbatim as `citations`.
- `function_call` and `custom_tool_call` (calls the client answers): tool_use
  blocks; a custom call's free-form input is `{"input": <text>}`.
- every other item (web/file search, code interpreter, MCP, image generation,
  shell, apply patch, tool search, computer, compaction, and types unknown
  today): ONE `server_tool_use` block holding the item verbatim in `raw` (it
  goes back as one input item; what the call returned, such as a search's
  sources or a code interpreter's outputs, stays there). Its `input` is the
  call's JSON `arguments`, else the item's fields but its id, status and
  results. An item that is only an output (`*_output`: shell, tool search,
  program) is a `server_tool_result` (output, error flag, `raw`).

The response `id` stays `ParsedResponse.response_id`, as in AgentScope
fidelity: no Msg-level metadata is added.

The stream rebuilds the output items from `response.output_item.added/done`
and the deltas between them, and turns them into blocks with the same
functions as the complete parse, so both agree.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ..errors import ParseError, ProviderError
from ..options import ParseSettings
from ..results import ParsedResponse, copy_json
from ._parse import expect, loads_with_repair, raise_for_error_body

__all__ = [
    "ProviderStream",
    "ResponseEnd",
    "call_id",
    "finish_reason",
    "parse_provider",
    "usage",
]

_NAME = "openai_responses"
Block = dict[str, Any]
Key = tuple[int, int]

# -- shared with the AgentScope-fidelity parser ------------------------------


def usage(value: Any, path: str) -> dict[str, int | float] | None:
    """ChatUsage from a Responses `usage` object (None or absent: no usage)."""
    if value is None:
        return None
    value = expect(value, dict, path)
    result: dict[str, int | float] = {
        "input_tokens": expect(value.get("input_tokens"), int, f"{path}.input_tokens"),
        "output_tokens": expect(value.get("output_tokens"), int, f"{path}.output_tokens"),
    }
    for target, details, key in (
        ("cache_read_input_tokens", "input_tokens_details", "cached_tokens"),
        ("reasoning_tokens", "output_tokens_details", "reasoning_tokens"),
    ):
        section = value.get(details)
        number = section.get(key) if isinstance(section, dict) else None
        if isinstance(number, int):
            result[target] = number
    return result


def finish_reason(response: dict[str, Any]) -> str:
    status = response.get("status")
    details = response.get("incomplete_details")
    # "incomplete" stands for running out of tokens unless a filter cut it short.
    reason = details.get("reason") if isinstance(details, dict) else None
    if status == "incomplete" and reason == "content_filter":
        return "content_filter"
    return status if isinstance(status, str) else ""


class ResponseEnd:
    """What both Responses stream parsers share: the bookkeeping of every
    event (`_begin`), and what the events that end a response do: take its
    finish reason and usage, or raise the provider's error (AgentScope reads
    nothing from `incomplete`/`failed`; the status is the finish reason)."""

    def __init__(self, options: ParseSettings) -> None:
        self._tool_parsing = options.stream_tool_parsing
        self._structured = options.structured_output
        self._events = 0
        self._id: str | None = None
        self._usage: dict[str, int | float] | None = None
        self._finish = ""

    def _begin(self, event: dict[str, Any]) -> tuple[str | None, str]:
        """Count `event`, raise the error it reports, take the first response
        id; its type and its path (`chunk[i]`)."""
        path = f"chunk[{self._events}]"
        self._events += 1
        raise_for_error_body(_NAME, event)
        kind = expect(event.get("type"), (str, type(None)), f"{path}.type")
        if kind == "error":
            raise ProviderError(_NAME, str(event.get("code") or "error"), str(event.get("message")))
        response = event.get("response")
        if self._id is None and isinstance(response, dict):
            self._id = expect(response.get("id"), (str, type(None)), f"{path}.response.id")
        return kind, path

    def _on_completed(self, event: dict[str, Any], path: str) -> None:
        response = expect(event.get("response"), dict, f"{path}.response")
        self._finish = finish_reason(response)
        self._usage = usage(response.get("usage"), f"{path}.response.usage") or self._usage

    def _on_ended(self, event: dict[str, Any], path: str) -> None:
        response = expect(event.get("response"), dict, f"{path}.response")
        error = response.get("error")
        if isinstance(error, dict) and error:
            kind = error.get("code") or error.get("type") or "error"
            raise ProviderError(_NAME, str(kind), str(error.get("message", error)))
        self._finish = finish_reason(response)


def call_id(item: dict[str, Any], path: str) -> str:
    # `call_id` pairs the call with its result; the item id only stands in.
    value = item.get("call_id") or item.get("id") or ""
    return str(expect(value, str, f"{path}.call_id"))


# -- one output item to blocks ---------------------------------------------------------------

# Where an item carries its result, in the order looked for.
_RESULT_KEYS = ("output", "outputs", "results", "result", "tools")
# What is not the call's input when the input is the item's own fields.
_NOT_INPUT = frozenset({"id", "type", "status", "call_id", "name", "error", *_RESULT_KEYS})


def _reasoning(item: dict[str, Any], path: str) -> list[Block]:
    summaries = expect(item.get("summary") or [], list, f"{path}.summary")
    texts = []
    for index, summary in enumerate(summaries):
        where = f"{path}.summary[{index}]"
        text = expect(summary, dict, where).get("text", "")
        if text:
            texts.append(expect(text, str, f"{where}.text"))
    reasoning_id = expect(item.get("id"), (str, type(None)), f"{path}.id")
    where = f"{path}.encrypted_content"
    encrypted = expect(item.get("encrypted_content"), (str, type(None)), where)
    blocks: list[Block] = [{"type": "thinking", "thinking": text} for text in texts or [""]]
    if encrypted:
        blocks[0]["encrypted_content"] = encrypted
    if reasoning_id:
        for block in blocks:
            block["reasoning_id"] = reasoning_id
    # An id-less, empty reasoning item has nothing to keep.
    return blocks if texts or encrypted or reasoning_id else []


def _message(item: dict[str, Any], path: str) -> list[Block]:
    blocks: list[Block] = []
    for index, part in enumerate(expect(item.get("content") or [], list, f"{path}.content")):
        where = f"{path}.content[{index}]"
        if expect(part, dict, where).get("type") != "output_text":
            continue
        block: Block = {"type": "text", "text": expect(part.get("text"), str, f"{where}.text")}
        annotations = expect(part.get("annotations") or [], list, f"{where}.annotations")
        if annotations:
            block["citations"] = copy_json(annotations)
        blocks.append(block)
    return blocks


def function_call(item: dict[str, Any], path: str, parse: bool = True) -> list[Block]:
    """A `function_call` item as its tool_use block (the arguments parsed,
    unless `parse` is off: a stream that parses them only at its end)."""
    block: Block = {
        "type": "tool_use",
        "id": call_id(item, path),
        "name": expect(item.get("name"), str, f"{path}.name"),
    }
    arguments = expect(item.get("arguments") or "{}", str, f"{path}.arguments")
    block["input"] = loads_with_repair(arguments) if parse else {}
    return [block]


def _custom_tool_call(item: dict[str, Any], path: str) -> list[Block]:
    text = expect(item.get("input") or "", str, f"{path}.input")
    return [
        {
            "type": "tool_use",
            "id": call_id(item, path),
            "name": expect(item.get("name"), str, f"{path}.name"),
            "input": {"input": text},
        }
    ]


def _server_input(item: dict[str, Any]) -> dict[str, Any]:
    """The call's input: its JSON `arguments` when it has them, else its own fields."""
    arguments = item.get("arguments")
    if isinstance(arguments, dict):
        return {key: copy_json(value) for key, value in arguments.items()}
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except ValueError:
            parsed = None
        return parsed if isinstance(parsed, dict) else {"arguments": arguments}
    return {key: copy_json(value) for key, value in item.items() if key not in _NOT_INPUT}


def _server_item(item: dict[str, Any], path: str) -> list[Block]:
    kind = str(item["type"])
    item_id = expect(item.get("id") or item.get("call_id") or "", str, f"{path}.id")
    if kind.endswith("_output"):
        # An output item: the result of a call made earlier (or elsewhere).
        error = item.get("error")
        result_key = next((key for key in _RESULT_KEYS if item.get(key) is not None), None)
        output = item[result_key] if result_key is not None else error
        return [
            {
                "type": "server_tool_result",
                "tool_use_id": expect(item.get("call_id") or item_id, str, f"{path}.call_id"),
                "provider_type": kind,
                "output": copy_json(output),
                "is_error": bool(error) or item.get("status") == "failed",
                "raw": copy_json(item),
            }
        ]
    # One block per item: what the call returned (sources, outputs, results)
    # stays in its `raw`, which goes back as the item.
    name = item.get("name")
    return [
        {
            "type": "server_tool_use",
            "id": item_id,
            "name": name if isinstance(name, str) and name else kind.removesuffix("_call"),
            "input": _server_input(item),
            "provider_type": kind,
            "raw": copy_json(item),
        }
    ]


_ITEMS: dict[str, Callable[[dict[str, Any], str], list[Block]]] = {
    "reasoning": _reasoning,
    "message": _message,
    "function_call": function_call,
    "custom_tool_call": _custom_tool_call,
}


def item_blocks(item: Any, path: str) -> list[Block]:
    """The blocks one output item gives in provider fidelity."""
    kind = expect(expect(item, dict, path).get("type"), (str, type(None)), f"{path}.type")
    if kind is None:
        return []
    handler = _ITEMS.get(kind, _server_item)
    return handler(item, path)


def _structured(content: list[Block]) -> dict[str, Any] | None:
    """AgentScope's structured output: the last text part, repaired."""
    texts = [block["text"] for block in content if block["type"] == "text"]
    return loads_with_repair(texts[-1]) if texts else None


def parse_provider(response: dict[str, Any], options: ParseSettings) -> ParsedResponse:
    """A complete response in provider fidelity: every output item, in order."""
    raise_for_error_body(_NAME, response)
    content: list[Block] = []
    for index, item in enumerate(expect(response.get("output"), list, "output")):
        content.extend(item_blocks(item, f"output[{index}]"))
    response_id = expect(response.get("id"), (str, type(None)), "id")
    return ParsedResponse(
        content=content,
        usage=usage(response.get("usage"), "usage"),
        response_id=response_id or "",
        raw_finish_reason=finish_reason(response),
        structured_output=_structured(content) if options.structured_output else None,
    )


# -- the stream ----------------------------------------------------------------------------


class ProviderStream(ResponseEnd):
    """The output items rebuilt from the stream's events; every snapshot is
    what the complete parse makes of the items so far (tool calls also carry
    `raw_input`, the arguments as streamed, as in AgentScope fidelity)."""

    def __init__(self, options: ParseSettings) -> None:
        super().__init__(options)
        # Output items by (response, `output_index`), and their blocks (rebuilt
        # on change). A recorded multi-step stream holds several responses,
        # each counting its items from 0: all of them are kept, in order.
        self._response = 0
        self._items: dict[Key, dict[str, Any]] = {}
        self._blocks: dict[Key, list[Block]] = {}
        self._indexes: dict[str, Key] = {}

    def feed(self, event: dict[str, Any]) -> ParsedResponse | None:
        kind, path = self._begin(event)
        if kind == "response.created" and self._items:
            self._response += 1
        handler = _EVENTS.get(kind) if isinstance(kind, str) else None
        if handler is not None:
            handler(self, event, path)
        content = self._content()
        return self._result(content) if content else None

    def finish(self) -> ParsedResponse:
        content = self._content()
        if not self._tool_parsing:
            for block in content:
                if block["type"] == "tool_use" and "raw_input" in block:
                    block["input"] = loads_with_repair(block["raw_input"] or "{}")
        return self._result(content)

    def _result(self, content: list[Block]) -> ParsedResponse:
        return ParsedResponse(
            content=content,
            usage=dict(self._usage) if self._usage is not None else None,
            response_id=self._id or "",
            raw_finish_reason=self._finish,
            structured_output=_structured(content) if self._structured else None,
        )

    def _content(self) -> list[Block]:
        content: list[Block] = []
        for index in sorted(self._blocks):
            content.extend(copy_json(self._blocks[index]))
        return content

    # -- the items ------------------------------------------------------------------------

    def _index(self, event: dict[str, Any], path: str) -> Key | None:
        """The item an event names (by output index, or by item id)."""
        index = event.get("output_index")
        if isinstance(index, int) and not isinstance(index, bool):
            key = (self._response, index)
            return key if key in self._items else None
        item_id = event.get("item_id")
        return self._indexes.get(item_id) if isinstance(item_id, str) else None

    def _set(self, index: Key, item: dict[str, Any], path: str) -> None:
        self._items[index] = item
        if isinstance(item.get("id"), str):
            self._indexes[item["id"]] = index
        self._changed(index, path)

    def _changed(self, index: Key, path: str) -> None:
        item = self._items[index]
        if item.get("type") != "function_call":
            self._blocks[index] = item_blocks(item, f"{path}.item")
            return
        # Without stream tool parsing the arguments are parsed once, at the end.
        blocks = function_call(item, f"{path}.item", parse=self._tool_parsing)
        arguments = expect(item.get("arguments") or "", str, f"{path}.item.arguments")
        for block in blocks:
            block["raw_input"] = arguments
        self._blocks[index] = blocks

    def _on_item(self, event: dict[str, Any], path: str) -> None:
        item = copy_json(expect(event.get("item"), dict, f"{path}.item"))
        number = event.get("output_index")
        if isinstance(number, int) and not isinstance(number, bool):
            key = (self._response, number)
        else:
            # No position given: the item of that id, else after the others.
            last = max(self._items, default=(self._response, -1))
            key = (self._response, last[1] + 1 if last[0] == self._response else 0)
            item_id = item.get("id")
            if isinstance(item_id, str):
                key = self._indexes.get(item_id, key)
        self._set(key, item, path)

    def _part(self, event: dict[str, Any], path: str, key: str) -> dict[str, Any] | None:
        """The content (or summary) part an event names, created if missing."""
        index = self._index(event, path)
        if index is None:
            return None
        item = self._items[index]
        number = event.get("summary_index" if key == "summary" else "content_index", 0)
        number = expect(number, int, f"{path}.{key}_index")
        parts = item.get(key)
        if not isinstance(parts, list):
            parts = item[key] = []
        while len(parts) <= number:
            parts.append(
                {"type": "summary_text", "text": ""}
                if key == "summary"
                else {"type": "output_text", "text": "", "annotations": []}
            )
        part: dict[str, Any] = expect(parts[number], dict, f"{path}.{key}[{number}]")
        return part

    def _on_part_added(self, event: dict[str, Any], path: str) -> None:
        key = "summary" if "summary_index" in event else "content"
        part = self._part(event, path, key)
        new = event.get("part")
        if part is not None and isinstance(new, dict) and not part.get("text"):
            part.clear()
            part.update(copy_json(new))
            self._changed(self._index_of(event), path)

    def _on_text(self, event: dict[str, Any], path: str) -> None:
        key = "summary" if "summary_index" in event else "content"
        part = self._part(event, path, key)
        if part is not None:
            text = expect(part.get("text") or "", str, path)
            part["text"] = text + expect(event.get("delta"), str, f"{path}.delta")
            self._changed(self._index_of(event), path)

    def _on_annotation(self, event: dict[str, Any], path: str) -> None:
        part = self._part(event, path, "content")
        annotation = event.get("annotation")
        if part is not None and isinstance(annotation, dict):
            annotations = part.get("annotations")
            if not isinstance(annotations, list):
                annotations = part["annotations"] = []
            annotations.append(copy_json(annotation))
            self._changed(self._index_of(event), path)

    def _on_arguments(self, event: dict[str, Any], path: str, key: str = "arguments") -> None:
        index = self._index(event, path)
        if index is None:
            return
        item = self._items[index]
        item[key] = expect(item.get(key) or "", str, f"{path}.item.{key}") + expect(
            event.get("delta"), str, f"{path}.delta"
        )
        self._changed(index, path)

    def _on_input(self, event: dict[str, Any], path: str) -> None:
        self._on_arguments(event, path, "input")

    def _index_of(self, event: dict[str, Any]) -> Key:
        index = self._index(event, "")
        if index is None:  # only called once `_part` found the item
            raise ParseError("output_index", "names no item")
        return index


_EVENTS: dict[str, Callable[[ProviderStream, dict[str, Any], str], None]] = {
    "response.output_item.added": ProviderStream._on_item,
    "response.output_item.done": ProviderStream._on_item,
    "response.content_part.added": ProviderStream._on_part_added,
    "response.reasoning_summary_part.added": ProviderStream._on_part_added,
    "response.output_text.delta": ProviderStream._on_text,
    "response.reasoning_summary_text.delta": ProviderStream._on_text,
    "response.output_text.annotation.added": ProviderStream._on_annotation,
    "response.function_call_arguments.delta": ProviderStream._on_arguments,
    "response.custom_tool_call_input.delta": ProviderStream._on_input,
    "response.completed": ProviderStream._on_completed,
    "response.incomplete": ProviderStream._on_ended,
    "response.failed": ProviderStream._on_ended,
}
