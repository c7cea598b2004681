"""Gemini beyond AgentScope 1.0.21: streamed function-call arguments, structured
output, and (provider fidelity) grounding, URL context and code execution.

Streamed calls (Vertex AI's `partialArgs` / `willContinue`), in both fidelities:
AgentScope turns every piece of such a stream into a tool call of its own, most
without a name (which no Msg can hold; this package raised ParseError), so there
is no behaviour to keep. A `functionCall` part with a name and `willContinue:
true` opens a call; name-less parts set their `partialArgs` at each `jsonPath`
(a string piece after one that said `willContinue` is appended to it); a
name-less part without `willContinue` (`{}`, or the last piece) closes the call.
The call is a tool_use block from the part that opens it, its input growing.

Provider fidelity, parse: the first candidate's `groundingMetadata` and
`urlContextMetadata` each give a `grounding` block after the text (web,
retrieved-context and maps chunks' uri/title are the sources, `webSearchQueries`
the queries; URL context's retrieved URLs are the sources), the record verbatim
in `raw`. `executableCode` / `codeExecutionResult` parts give `server_tool_use`
(name "code_execution", input {language, code}) / `server_tool_result` (output
{outcome, output}, an error unless OUTCOME_OK) blocks where the part sat among
the text blocks, the part verbatim (thought signature included) in `raw`; a
code part's signature stays in its `raw`, it is not the text's.

Provider fidelity, format: code execution blocks from Gemini go back as the
same parts, in order, in the model turn. Grounding blocks and text citations
(another provider's) are dropped silently: no request field takes them, and
the text they ground is sent. Server-tool
blocks of other providers are dropped with a FormatWarning.

Structured output (`response_schema`), as GeminiChatModel with a
`structured_model`: `response_mime_type` "application/json" and the schema, tools
and tool_config left out (a warning when there were some). The SDK turns a
`response_schema` dict into its Schema the way it turns AgentScope's model
class; provider fidelity sends it as `response_json_schema`, the field that
takes a plain JSON Schema (see `_fidelity/gemini.py`).
"""

from __future__ import annotations

import base64
import re
from typing import Any

from ..errors import FormatError, ParseError
from ._context import FormatContext
from ._parse import expect
from ._tools import without_tools
from ._turns import Turn, foreign_block_handler

__all__ = [
    "CODE_PARTS",
    "CallAssembler",
    "code_block",
    "format_code",
    "format_foreign",
    "grounding_blocks",
    "structured_output",
]

Block = dict[str, Any]

# The part keys of code execution, REST (camelCase) and SDK (snake_case) spelling.
CODE_PARTS = {
    "executableCode": "executableCode",
    "executable_code": "executableCode",
    "codeExecutionResult": "codeExecutionResult",
    "code_execution_result": "codeExecutionResult",
}
_SNAKE = {"executableCode": "executable_code", "codeExecutionResult": "code_execution_result"}
_RECORDS = {
    "groundingMetadata": "groundingMetadata",
    "grounding_metadata": "groundingMetadata",
    "urlContextMetadata": "urlContextMetadata",
    "url_context_metadata": "urlContextMetadata",
}
_PATH_TOKEN = re.compile(r"\.([A-Za-z_][\w-]*)|\[(\d+)\]|\['([^']*)'\]|\[\"([^\"]*)\"\]")


def _field(obj: dict[str, Any], camel: str, snake: str) -> Any:
    return obj.get(camel) if obj.get(camel) is not None else obj.get(snake)


# -- streamed function-call arguments ------------------------------------------------


def _json_path(path: Any, where: str) -> list[str | int]:
    """`$.a.b[0]['c d']` as keys and indexes."""
    if not isinstance(path, str) or not path.startswith("$"):
        raise ParseError(where, f"expected a JSON path starting with '$', got {path!r}")
    tokens: list[str | int] = []
    position = 1
    while position < len(path):
        match = _PATH_TOKEN.match(path, position)
        if match is None:
            raise ParseError(where, f"unsupported JSON path {path!r}")
        name, index, quoted, double = match.groups()
        tokens.append(int(index) if index is not None else (name or quoted or double or ""))
        position = match.end()
    if not tokens:
        raise ParseError(where, "a partial argument needs a path below '$'")
    return tokens


def _partial_value(piece: dict[str, Any], where: str) -> tuple[bool, Any]:
    """(is a string piece, the value) of one `PartialArg`."""
    for camel, snake, kind in (
        ("stringValue", "string_value", str),
        ("numberValue", "number_value", (int, float)),
        ("boolValue", "bool_value", bool),
    ):
        value = _field(piece, camel, snake)
        if value is not None:
            return kind is str, expect(value, kind, f"{where}.{camel}")
    if _field(piece, "nullValue", "null_value") is not None:
        return False, None
    raise ParseError(where, "a partial argument carries no value")


class CallAssembler:
    """Function-call parts, whole or streamed in pieces, as complete calls.

    Each call is `{"id", "name", "args", "signature"}`; `calls` keeps them in
    order, a streamed one from the part that opened it (its args growing)."""

    def __init__(self) -> None:
        self.calls: list[Block] = []
        self._open: Block | None = None
        self._continuing: set[tuple[str | int, ...]] = set()

    def add(self, raw: dict[str, Any], signature: str | None, path: str) -> None:
        name = _field(raw, "name", "name")
        will_continue = bool(
            expect(
                _field(raw, "willContinue", "will_continue"),
                (bool, type(None)),
                f"{path}.willContinue",
            )
        )
        pieces = _field(raw, "partialArgs", "partial_args")
        if name is not None:
            name = expect(name, str, f"{path}.name")
            args = expect(_field(raw, "args", "args"), (dict, type(None)), f"{path}.args")
            call_id = expect(_field(raw, "id", "id"), (str, type(None)), f"{path}.id")
            call = {"id": call_id, "name": name, "args": args, "signature": signature}
            self.calls.append(call)
            self._open = call if will_continue else None
            self._continuing = set()
            if pieces is not None:
                self._apply(pieces, f"{path}.partialArgs")
            return
        if self._open is None:
            if pieces:
                raise ParseError(f"{path}.partialArgs", "arguments for no open function call")
            if raw.get("args") is not None:
                raise ParseError(f"{path}.name", "missing")
            return  # an empty piece between calls: nothing to do
        if pieces is not None:
            self._apply(pieces, f"{path}.partialArgs")
        if not will_continue:
            self._open = None

    def _apply(self, pieces: Any, path: str) -> None:
        assert self._open is not None
        for number, piece in enumerate(expect(pieces, list, path)):
            where = f"{path}[{number}]"
            piece = expect(piece, dict, where)
            tokens = _json_path(_field(piece, "jsonPath", "json_path"), f"{where}.jsonPath")
            is_text, value = _partial_value(piece, where)
            key = tuple(tokens)
            if self._open["args"] is None:
                self._open["args"] = {}
            current = _get_at(self._open["args"], tokens)
            if is_text and key in self._continuing and isinstance(current, str):
                value = current + value
            _set_at(self._open["args"], tokens, value, where)
            piece_continues = _field(piece, "willContinue", "will_continue")
            if is_text and piece_continues:
                self._continuing.add(key)
            else:
                self._continuing.discard(key)


def _get_at(root: Any, tokens: list[str | int]) -> Any:
    node = root
    for token in tokens:
        present = (
            token < len(node)
            if isinstance(token, int) and isinstance(node, list)
            else isinstance(node, dict) and token in node
        )
        if not present:
            return None
        node = node[token]
    return node


def _set_at(root: dict[str, Any], tokens: list[str | int], value: Any, where: str) -> None:
    node: Any = root
    for token, following in zip(tokens, [*tokens[1:], None], strict=True):
        child: Any = value if following is None else ([] if isinstance(following, int) else {})
        if isinstance(token, int):
            if not isinstance(node, list):
                raise ParseError(where, "a list index where the arguments hold no list")
            if token > len(node):
                # Pieces arrive in order: an index never skips ahead (nor grows a huge list).
                raise ParseError(where, f"list index {token} skips ahead of the arguments")
            node.extend([None] * (token + 1 - len(node)))
            if following is None or not isinstance(node[token], (list, dict)):
                node[token] = child
            node = node[token]
        else:
            if not isinstance(node, dict):
                raise ParseError(where, "a key where the arguments hold no object")
            if following is None or not isinstance(node.get(token), (list, dict)):
                node[token] = child
            node = node[token]


# -- provider fidelity: parse ------------------------------------------------------------


def code_block(kind: str, raw: dict[str, Any], numbers: list[str], path: str) -> Block:
    """A code execution part as a server_tool_use / server_tool_result block.

    `numbers` holds the ids of the code parts so far (a result without an id
    answers the last one)."""
    key = next(k for k in CODE_PARTS if CODE_PARTS[k] == kind and raw.get(k) is not None)
    body = expect(raw[key], dict, f"{path}.{key}")
    own_id = expect(body.get("id"), (str, type(None)), f"{path}.{key}.id")
    if kind == "executableCode":
        block_id = own_id or f"code_{len(numbers)}"
        numbers.append(block_id)
        code = {k: body[k] for k in ("language", "code") if body.get(k) is not None}
        return {
            "type": "server_tool_use",
            "id": block_id,
            "name": "code_execution",
            "input": code,
            "provider_type": kind,
            "raw": raw,
        }
    outcome = body.get("outcome")
    return {
        "type": "server_tool_result",
        "tool_use_id": own_id or (numbers[-1] if numbers else ""),
        "provider_type": kind,
        "output": {k: body[k] for k in ("outcome", "output") if body.get(k) is not None},
        "is_error": outcome not in (None, "OUTCOME_OK"),
        "raw": raw,
    }


def _sources(kind: str, record: dict[str, Any], path: str) -> list[Block]:
    sources: list[Block] = []
    if kind == "urlContextMetadata":
        items = _field(record, "urlMetadata", "url_metadata") or []
        for item in expect(items, list, f"{path}.urlMetadata"):
            url = _field(item, "retrievedUrl", "retrieved_url") if isinstance(item, dict) else None
            if isinstance(url, str):
                sources.append({"url": url, "title": ""})
        return sources
    chunks = _field(record, "groundingChunks", "grounding_chunks") or []
    for chunk in expect(chunks, list, f"{path}.groundingChunks"):
        if not isinstance(chunk, dict):
            continue
        for source_kind in ("web", "retrievedContext", "retrieved_context", "maps"):
            source = chunk.get(source_kind)
            if isinstance(source, dict) and isinstance(source.get("uri"), str):
                title = source.get("title")
                sources.append(
                    {"url": source["uri"], "title": title if isinstance(title, str) else ""}
                )
                break
    return sources


def grounding_blocks(candidate: dict[str, Any], path: str) -> list[Block]:
    """The candidate's grounding and URL-context records as grounding blocks."""
    blocks = []
    for key, kind in _RECORDS.items():
        record = candidate.get(key)
        if record is None:
            continue
        record = expect(record, dict, f"{path}.{key}")
        if not record:
            continue  # an empty record grounds nothing
        queries = _field(record, "webSearchQueries", "web_search_queries") or []
        block: Block = {
            "type": "grounding",
            "provider_type": kind,
            "sources": _sources(kind, record, f"{path}.{key}"),
        }
        block["queries"] = [
            q for q in expect(queries, list, f"{path}.{key}.webSearchQueries") if isinstance(q, str)
        ]
        block["raw"] = record
        blocks.append(block)
    return blocks


# -- provider fidelity: format -------------------------------------------------------------


def _signature_bytes(value: Any, ctx: FormatContext) -> bytes:
    try:
        return base64.b64decode(value)
    except (TypeError, ValueError) as exc:
        raise FormatError(ctx.location, f"thoughtSignature: {exc}") from None


def format_code(turn: Turn, index: int, block: Block) -> None:
    """A Gemini code execution block back as its part; others dropped with a warning."""
    kind = block.get("provider_type")
    if not isinstance(kind, str) or kind not in _SNAKE or turn.msg.role != "assistant":
        format_foreign(turn, index, block)
        return
    raw = block.get("raw")
    if not isinstance(raw, dict):
        raise FormatError(turn.ctx.location, "a code execution block needs its part in `raw`")
    key = next((k for k in CODE_PARTS if CODE_PARTS[k] == kind and raw.get(k) is not None), None)
    if key is None:
        raise FormatError(turn.ctx.location, f"`raw` holds no {kind} part")
    part: Block = {_SNAKE[kind]: raw[key]}
    signature = _field(raw, "thoughtSignature", "thought_signature")
    if signature is not None:
        part["thought_signature"] = _signature_bytes(signature, turn.ctx)
    turn.parts.append(part)


format_foreign = foreign_block_handler("Gemini")


# -- structured output ----------------------------------------------------------------------


def structured_output(body: Block, schema: Any, ctx: FormatContext) -> None:
    """GeminiChatModel with a structured model: JSON out, no tools."""
    if schema is None:
        return
    without_tools(body, "tool_config", ctx)
    body["response_mime_type"] = "application/json"
    body["response_schema"] = schema
