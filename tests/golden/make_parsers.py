"""Generate golden data for the AgentScope 1.0.21 response parsers.

What it writes
    tests/golden/parsers/<provider>.json for every provider of the registry,
    ``agentscope_proto.providers.PROVIDERS``, that AgentScope 1.0.21 has (each
    needs a suite in ``SUITES``, else the script stops).  Each file holds
    cases of two kinds:

    * non-stream: one raw provider response JSON (exactly what the HTTP API
      returns) and the ChatResponse the 1.0.21 parser makes of it;
    * stream: the list of raw stream event JSONs and every ChatResponse the
      1.0.21 stream parser yields, in order (cumulative snapshots).

How the oracle is driven
    The raw JSON is turned into SDK objects the way each SDK does it
    (openai/anthropic ``construct_type``, google-genai ``_from_response``,
    dashscope ``GenerationResponse.from_api_response``, ``ollama.ChatResponse``)
    and handed to the parser methods of the model classes:

    =================  ==========================================================
    provider           parser methods (agentscope 1.0.21)
    =================  ==========================================================
    openai, deepseek   OpenAIChatModel._parse_openai_completion_response / _stream_
    anthropic          AnthropicChatModel._parse_anthropic_completion_response /
                       _parse_anthropic_stream_completion_response
    gemini             GeminiChatModel._parse_gemini_generation_response / _stream_
    dashscope          DashScopeChatModel._parse_dashscope_generation_response /
                       _parse_dashscope_stream_response
    ollama             OllamaChatModel._parse_ollama_completion_response / _stream_
    openai_responses   OpenAIResponseModel._parse_response / _parse_stream_response
    =================  ==========================================================

    OpenAI chat stream chunks are fed as SimpleNamespace trees, because real
    ``ChatCompletionChunk`` objects crash 1.0.21 (``"data" in delta.audio``
    with ``audio=None``).

Cases are generated, not hand-written: provider-neutral building blocks
(texts, thinking, tool-argument strings, tool calls, usage variants, stream
splitters) are combined into assistant turns, each provider renders a turn into
its own wire format, and a few provider-specific tweaks cover the rest.

Determinism: ChatResponse ids invented by AgentScope (timestamp + random) are
replaced by a sentinel and recorded as ``"id": null, "id_invented": true``;
wall-clock usage time is not recorded; the network is disabled (any attempt
raises).  Rerun from the repository root with

    make golden   # or: .venv-golden/bin/python tests/golden/make_parsers.py

It needs ``agentscope_proto`` importable (``make golden`` installs it into
``.venv-golden`` next to the oracle) only to read the registry.  A response
stands in one provider's file only: each provider has its own wire format.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import inspect
import itertools
import json
import logging
import re
import socket
import warnings
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

ORACLE = "agentscope==1.0.21"
GENERATED_BY = "tests/golden/make_parsers.py"
OUT_DIR = Path(__file__).resolve().parent / "parsers"

FAKE_API_KEY = "sk-golden-offline"
START = datetime(2025, 1, 1, 12, 0, 0)
INVENTED_ID = "<id invented by agentscope>"
CREATED = 1735732800  # 2025-01-01T12:00:00Z, used as provider "created" stamps

ENCODING_NOTE = (
    "JSON written by json.dumps(ensure_ascii=False, indent=1); ints and floats "
    "are kept apart (1 vs 1.0) and big ints keep all digits. Python bytes would "
    'appear as {"$bytes": "<standard base64>"} (the 1.0.21 parsers emit '
    "none: Gemini thought signatures are already base64 str). "
    "Non-stream 'expected' = {content, usage, id, metadata} of the ChatResponse "
    "(usage = {input_tokens, output_tokens}, wall-clock 'time' and the raw "
    "provider usage object 'usage.metadata' omitted; metadata = structured "
    "output). Ids invented by agentscope (timestamp + random hex) are recorded "
    "as id null plus id_invented true. Stream 'expected' = {snapshots: one "
    "record per yielded ChatResponse, deep-copied at the moment it is yielded, "
    "plus chunk: the index in 'chunks' of the chunk whose processing yielded it "
    "(a chunk yields at most one response; null for a response yielded after "
    "the last chunk, i.e. the extra final response when stream_tool_parsing is "
    "false); final: the last yielded object as it is after the stream ended (null if "
    "nothing was yielded)}; 'snapshots_after' (every yielded object re-read "
    "after the stream ended) is given for every anthropic stream and for any "
    "other stream where it differs from 'snapshots'. Parser or SDK exceptions "
    "are recorded as error {type, message}; for streams next to the snapshots "
    "yielded before the error. options: model constructor kwargs that matter "
    "(stream_tool_parsing, generate_kwargs) plus structured_model: true when "
    "the parser was given a structured-output pydantic model (its fields do "
    "not matter to the parsers)."
)

PROVIDER_INPUT_NOTES = {
    "openai": (
        "response: a ChatCompletion JSON, built with openai construct_type. "
        "chunks: ChatCompletionChunk JSONs, converted to SimpleNamespace trees "
        "(every JSON object becomes a namespace, fields of the chunk schema "
        "missing from the JSON are None, choices[].delta.audio stays a dict)."
    ),
    "anthropic": (
        "response: a Message JSON (construct_type). chunks: the data JSON of "
        "each SSE event; events of type 'ping' are dropped before the parser, "
        "as the anthropic SDK drops SSE 'ping' events."
    ),
    "gemini": (
        "response/chunks: GenerateContentResponse JSON in the REST camelCase "
        "form, converted as google-genai does (_GenerateContentResponse_from_"
        "mldev then GenerateContentResponse._from_response); thoughtSignature "
        "is base64 on the wire and bytes in the SDK."
    ),
    "dashscope": (
        "response/chunks: a DashScope generation response JSON as the SDK "
        "prints it: {status_code, request_id, code, message, output, usage}; "
        "status_code is the HTTP status (200 when missing). Built as "
        "GenerationResponse.from_api_response(DashScopeAPIResponse(..., "
        "headers={}))."
    ),
    "ollama": (
        "response: an /api/chat JSON; chunks: the NDJSON lines of a streamed "
        "/api/chat. Built as ollama.ChatResponse(**line); a line with 'error' "
        "raises ollama.ResponseError, as the ollama SDK does."
    ),
    "openai_responses": (
        "response: a Responses API Response JSON; chunks: Responses stream "
        "event JSONs. Both built with openai construct_type."
    ),
}
PROVIDER_INPUT_NOTES["deepseek"] = (
    PROVIDER_INPUT_NOTES["openai"] + " DeepSeek uses OpenAIChatModel with OpenAI-format JSON."
)


# ---------------------------------------------------------------------------
# Environment: offline, quiet, deterministic
# ---------------------------------------------------------------------------


class NetworkBlocked(BaseException):
    """Raised on any network use; a BaseException so no SDK retry loop swallows it."""


def _network_disabled(*_args: Any, **_kwargs: Any) -> Any:
    raise NetworkBlocked("make_parsers.py runs offline: network access attempted")


def block_network() -> None:
    """Make every outgoing connection or DNS lookup fail loudly."""
    socket.socket.connect = _network_disabled  # type: ignore[method-assign]
    socket.socket.connect_ex = _network_disabled  # type: ignore[method-assign]
    socket.create_connection = _network_disabled  # type: ignore[assignment]
    socket.getaddrinfo = _network_disabled  # type: ignore[assignment]


def pin_invented_ids() -> None:
    """Replace agentscope's timestamp + random ids with a fixed sentinel."""
    import agentscope.model._model_response as model_response

    def fake_timestamp(add_random_suffix: bool = False) -> str:
        return INVENTED_ID if add_random_suffix else "<created_at>"

    model_response._get_timestamp = fake_timestamp


def silence_logs() -> None:
    """json_repair fallbacks and google-genai log warnings; they are noise."""
    logging.disable(logging.CRITICAL)
    warnings.filterwarnings("ignore")


# ---------------------------------------------------------------------------
# Recording oracle output as JSON
# ---------------------------------------------------------------------------


def jsonable(value: Any) -> Any:
    """Plain JSON value of parser output; bytes become {"$bytes": b64}."""
    if isinstance(value, bytes):
        return {"$bytes": base64.b64encode(value).decode("ascii")}
    if isinstance(value, dict):
        assert all(isinstance(k, str) for k in value), value
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"unexpected {type(value).__name__} in oracle output")


def usage_record(usage: Any) -> dict | None:
    if usage is None:
        return None
    return {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}


def response_record(response: Any) -> dict:
    """The parts of a ChatResponse that the golden data pins down."""
    record = {
        "content": jsonable(copy.deepcopy(list(response.content))),
        "usage": usage_record(response.usage),
        "id": None if response.id == INVENTED_ID else response.id,
    }
    if response.id == INVENTED_ID:
        record["id_invented"] = True
    record["metadata"] = jsonable(copy.deepcopy(response.metadata))
    return record


def error_record(error: BaseException) -> dict:
    return {"type": type(error).__name__, "message": str(error)}


# ---------------------------------------------------------------------------
# Building blocks (provider neutral)
# ---------------------------------------------------------------------------

TEXTS = {
    "plain": "The weather in Paris is sunny and 22 degrees.",
    "unicode": "Grüße aus 東京 🗼 — «ça va?» Cafe\u0301 𝔘𝔫𝔦",
    "multiline": "Line one.\nLine two.\n\n  - indented bullet\n",
    "json_like": '{"answer": 42, "note": "not a tool call"}',
    "markdown": '```python\nprint("hi")\n```\n| a | b |\n|---|---|',
    "think_tags": "<think>hidden?</think>Visible answer.",
    "whitespace": " \t\n",
    "empty": "",
}

THINKINGS = {
    "plain": "The user wants the weather, so I should call get_weather.",
    "unicode": "用户在问天气……先查一下 🤔",
    "empty": "",
}

# Tool-call argument strings exactly as a provider may send them.
ARG_TEXTS = {
    "valid": '{"city": "Paris", "unit": "celsius"}',
    "nested": '{"filter": {"tags": ["a", "b"], "limit": 10, "exact": false, '
    '"score": 0.5, "extra": null}}',
    "empty_object": "{}",
    "broken": '{"a": tru',
    "partial": '{"city": "Par',
    "concatenated": '{"a":1}{"b":2}',
    "array": "[1,2]",
    "null": "null",
    "empty": "",
    "bigint": '{"id": 123456789012345678901234567890, "neg": -9007199254740993}',
    "floats": '{"x": 1e5, "y": 1.0, "z": -0.0, "w": 2.50}',
    "duplicate_keys": '{"a": 1, "a": 2}',
    "unicode": '{"text": "naïve 日本語 🚀", "escaped": "\\u00e9\\n"}',
    "escaped_quotes": '{"q": "say \\"hi\\" \\\\ bye"}',
    "trailing_text": '{"a": 1} // done',
    "single_quotes": "{'a': 'b'}",
    "padded": '  {"a": 1}\n',
    "string": '"just text"',
    "number": "42",
    "python_literals": '{"flag": True, "none": None}',
    "unterminated_array": '{"items": [1, 2,',
    "missing_value": '{"a": ',
    "trailing_comma": '{"a": 1,}',
}

# Tool-call arguments for providers that send them as JSON objects.
ARG_OBJECTS = {
    "simple": {"city": "Paris"},
    "nested": {
        "filter": {"tags": ["a", "b"], "limit": 10, "exact": False, "score": 0.5, "extra": None}
    },
    "empty": {},
    "unicode": {"text": "naïve 日本語 🚀", "quote": 'say "hi"'},
    "bigint": {"id": 123456789012345678901234567890, "neg": -9007199254740993},
    "floats": {"whole": 1.0, "exp": 100000.0, "neg_zero": -0.0, "int": 3},
    "mixed_types": {"s": "", "b": True, "n": None, "l": [1, "two", {"three": [3.5]}]},
}


def dumps_args(obj: dict) -> str:
    return json.dumps(obj, ensure_ascii=False)


@dataclass(frozen=True)
class Call:
    """One tool call; ``args`` is the argument JSON text."""

    id: str
    name: str
    args: str

    def args_object(self) -> Any:
        """The arguments as a JSON object (for object-argument providers)."""
        return json.loads(self.args)


@dataclass(frozen=True)
class Turn:
    """A provider-neutral assistant output. None means "not sent"."""

    text: str | None = None
    thinking: str | None = None
    calls: tuple[Call, ...] = ()


WEATHER = Call("call_weather_01", "get_weather", ARG_TEXTS["valid"])
WEATHER_LONDON = Call("call_weather_02", "get_weather", '{"city": "London"}')
TIME = Call("call_time_03", "get_time", '{"tz": "Europe/Paris"}')
SEARCH = Call("call_search_04", "web_search", '{"query": "agentscope 1.0.21", "top_k": 3}')
UNICODE_CALL = Call("call_translate_05", "translate", ARG_TEXTS["unicode"])
BIGINT_CALL = Call("call_lookup_06", "lookup", ARG_TEXTS["bigint"])


def arg_call(args: str) -> Call:
    return Call("call_args_07", "run_tool", args)


COMBOS = {
    "thinking_and_text": Turn(text=TEXTS["plain"], thinking=THINKINGS["plain"]),
    "thinking_only": Turn(thinking=THINKINGS["plain"]),
    "empty_thinking_and_text": Turn(text=TEXTS["plain"], thinking=""),
    "tool_only": Turn(calls=(WEATHER,)),
    "text_and_tool": Turn(text="Let me check that.", calls=(WEATHER,)),
    "thinking_text_tool": Turn(
        text="Let me check that.", thinking=THINKINGS["plain"], calls=(WEATHER,)
    ),
    "parallel_tools_2": Turn(calls=(WEATHER, TIME)),
    "parallel_tools_3_with_text": Turn(text="Running three tools.", calls=(WEATHER, TIME, SEARCH)),
    "parallel_same_name": Turn(calls=(WEATHER, WEATHER_LONDON)),
    "unicode_everything": Turn(
        text=TEXTS["unicode"], thinking=THINKINGS["unicode"], calls=(UNICODE_CALL,)
    ),
    "empty_turn": Turn(),
}

# ---------------------------------------------------------------------------
# Stream plans: how a turn is cut into deltas
# ---------------------------------------------------------------------------

Event = tuple  # ("think", piece) | ("text", piece) | ("call", index, piece)
Splitter = Callable[[str], list]


def by(n: int) -> Splitter:
    """Cut into pieces of n characters."""
    return lambda s: [s[i : i + n] for i in range(0, len(s), n)]


def awkward(s: str) -> list:
    """Cut right before every quote, backslash, colon, comma and bracket."""
    return [p for p in re.split(r'(?=["\\:,\[\]{}])', s) if p]


def cut_at(*positions: int) -> Splitter:
    """Cut at the given character offsets."""

    def split(s: str) -> list:
        bounds = [0, *[p for p in positions if 0 < p < len(s)], len(s)]
        return [s[a:b] for a, b in itertools.pairwise(bounds) if b > a]

    return split


def round_robin(lists: list) -> list:
    merged = itertools.zip_longest(*lists)
    return [item for group in merged for item in group if item is not None]


def plan(turn: Turn, split: Splitter, order: str = "sequential") -> list:
    """The delta events of a turn: thinking first, then text and tool calls.

    order: "sequential" (text, then each call), "tools_first" (calls, then
    text) or "interleaved" (round robin over text and every call).
    """
    thinking = [("think", p) for p in split(turn.thinking or "")]
    text = [("text", p) for p in split(turn.text or "")]
    calls = [[("call", i, p) for p in (split(c.args) or [""])] for i, c in enumerate(turn.calls)]
    flat_calls = [e for c in calls for e in c]
    if order == "sequential":
        body = text + flat_calls
    elif order == "tools_first":
        body = flat_calls + text
    elif order == "interleaved":
        body = round_robin([text, *calls])
    else:
        raise ValueError(order)
    return thinking + body


def segments(events: list) -> list:
    """Group events into output blocks, for block-structured streams.

    Consecutive thinking or text pieces form one block; all pieces of a tool
    call form one block placed where the call first appears.
    """
    blocks: list = []
    call_blocks: dict = {}
    for event in events:
        if event[0] == "call":
            index, piece = event[1], event[2]
            if index in call_blocks:
                call_blocks[index][1].append(piece)
                continue
            call_blocks[index] = (("call", index), [piece])
            blocks.append(call_blocks[index])
        elif blocks and blocks[-1][0] == event[0]:
            blocks[-1][1].append(event[1])
        else:
            blocks.append((event[0], [event[1]]))
    return blocks


@dataclass(frozen=True)
class StreamScenario:
    name: str
    turn: Turn
    split: Splitter
    order: str = "sequential"
    string_args_only: bool = False  # needs argument text that is not a JSON object

    def events(self) -> list:
        return plan(self.turn, self.split, self.order)


STREAM_SCENARIOS = [
    StreamScenario("text_by3", Turn(text=TEXTS["plain"]), by(3)),
    StreamScenario("text_unicode_by1", Turn(text=TEXTS["unicode"]), by(1)),
    StreamScenario("text_multiline_by7", Turn(text=TEXTS["multiline"]), by(7)),
    StreamScenario(
        "thinking_then_text_by5",
        Turn(text=TEXTS["plain"], thinking=THINKINGS["plain"]),
        by(5),
    ),
    StreamScenario("tool_awkward_split", Turn(calls=(WEATHER,)), awkward),
    StreamScenario("text_then_tool_by4", Turn(text="Let me check that.", calls=(WEATHER,)), by(4)),
    StreamScenario(
        "tools_before_text_by6",
        Turn(text="Checked.", calls=(WEATHER,)),
        by(6),
        "tools_first",
    ),
    StreamScenario(
        "parallel_tools_interleaved_by3",
        Turn(text="Running three tools.", calls=(WEATHER, TIME, SEARCH)),
        by(3),
        "interleaved",
    ),
    StreamScenario(
        "thinking_text_two_tools_by8",
        Turn(text="Two lookups.", thinking=THINKINGS["unicode"], calls=(WEATHER, TIME)),
        by(8),
    ),
    StreamScenario("tool_unicode_args_by1", Turn(calls=(UNICODE_CALL,)), by(1)),
    StreamScenario("tool_bigint_args_by5", Turn(calls=(BIGINT_CALL,)), by(5)),
    StreamScenario(
        "tool_args_broken_by2",
        Turn(calls=(arg_call(ARG_TEXTS["broken"]),)),
        by(2),
        string_args_only=True,
    ),
    StreamScenario(
        "tool_args_partial_never_closed",
        Turn(calls=(arg_call(ARG_TEXTS["partial"]),)),
        by(4),
        string_args_only=True,
    ),
    StreamScenario(
        # '{"flag": fals' repairs to {"flag": "fals"}, longer than the later
        # {"flag": false}, so the stale value is kept until the JSON is valid.
        "tool_args_stale_literal",
        Turn(calls=(arg_call('{"flag": false, "n": 1}'),)),
        cut_at(13, 16),
        string_args_only=True,
    ),
    StreamScenario(
        # The same, but the valid JSON that ends the stream is the shorter one.
        "tool_args_stale_literal_at_end",
        Turn(calls=(arg_call('{"flag": false}'),)),
        cut_at(13),
        string_args_only=True,
    ),
    StreamScenario(
        "tool_args_concatenated_by4",
        Turn(calls=(arg_call(ARG_TEXTS["concatenated"]),)),
        by(4),
        string_args_only=True,
    ),
    StreamScenario("tool_args_empty", Turn(calls=(arg_call(""),)), by(4), string_args_only=True),
    StreamScenario(
        "tool_args_array_by2",
        Turn(calls=(arg_call(ARG_TEXTS["array"]),)),
        by(2),
        string_args_only=True,
    ),
    StreamScenario(
        "tool_args_escaped_quotes_by1",
        Turn(calls=(arg_call(ARG_TEXTS["escaped_quotes"]),)),
        by(1),
        string_args_only=True,
    ),
]

# Scenarios re-run with stream_tool_parsing=False where the model supports it.
NO_PARSING_SCENARIOS = (
    "text_then_tool_by4",
    "parallel_tools_interleaved_by3",
    "tool_args_broken_by2",
)


def scenario(name: str) -> StreamScenario:
    return next(s for s in STREAM_SCENARIOS if s.name == name)


# ---------------------------------------------------------------------------
# Cases and the drivers that run them through the oracle
# ---------------------------------------------------------------------------


ABSENT = object()  # a usage variant: leave the key out of the JSON
DEFAULT = object()  # a renderer argument: use the suite's default


@dataclass
class Case:
    name: str
    options: dict = field(default_factory=dict)
    response: Any = None
    chunks: list | None = None

    @property
    def stream(self) -> bool:
        return self.chunks is not None


def ctor_kwargs(options: dict) -> dict:
    return {k: v for k, v in options.items() if k != "structured_model"}


def structured_model_for(options: dict) -> Any:
    if not options.get("structured_model"):
        return None
    from pydantic import BaseModel

    class Answer(BaseModel):
        city: str
        temperature: float

    return Answer


class ChunkFeed:
    """The chunks of a stream case delivered as an SDK stream delivers them.

    Chunks become SDK objects lazily, one per pull; ``skip`` drops chunks the
    SDK itself never hands over. ``position()`` is the index (in the case's
    chunk list) of the chunk the parser is working on, or None once the
    stream is exhausted (responses yielded after the last chunk).
    """

    def __init__(self, chunks: list, build: Callable, skip: Callable) -> None:
        self._chunks = chunks
        self._build = build
        self._skip = skip
        self._current: int | None = None
        self._exhausted = False

    def __aiter__(self) -> AsyncIterator:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator:
        for index, data in enumerate(self._chunks):
            if self._skip(data):
                continue
            self._current = index
            yield self._build(data)
        self._exhausted = True

    def position(self) -> int | None:
        return None if self._exhausted else self._current


class Suite:
    """One provider: wire-format renderers, SDK builders and its cases."""

    provider: str
    model_name: str
    object_args = False  # responses carry tool arguments as JSON objects
    stream_object_args = False  # so do stream events (no argument deltas)
    tool_parsing_option = True  # constructor has stream_tool_parsing
    always_record_after = False

    # -- oracle ------------------------------------------------------------
    def make_model(self, options: dict, stream: bool) -> Any:
        raise NotImplementedError

    def parse(self, model: Any, response: Any, structured: Any) -> Any:
        raise NotImplementedError

    def parse_stream(self, model: Any, feed: ChunkFeed, structured: Any) -> AsyncIterator:
        raise NotImplementedError

    def build_chunk(self, data: dict) -> Any:
        """One stream chunk JSON as the SDK object the parser receives."""
        raise NotImplementedError

    def skip_chunk(self, data: dict) -> bool:
        """True for chunks the SDK drops before they reach the parser."""
        return False

    # -- wire format -------------------------------------------------------
    def render(self, turn: Turn, **variant: Any) -> dict:
        raise NotImplementedError

    def render_stream(self, turn: Turn, events: list, **variant: Any) -> list:
        raise NotImplementedError

    usages: ClassVar[dict] = {}
    default_usage = "standard"  # key of the usage used unless a case says otherwise

    def usage_or_default(self, usage: Any) -> Any:
        return self.usages[self.default_usage] if usage is DEFAULT else usage

    # -- cases -------------------------------------------------------------
    def nonstream_cases(self) -> Iterator[Case]:
        yield from self.text_cases()
        yield from self.tool_argument_cases()
        for name, turn in COMBOS.items():
            yield Case(name, response=self.render(turn))
        for name, usage in self.usages.items():
            yield Case(
                f"usage_{name}", response=self.render(Turn(text=TEXTS["plain"]), usage=usage)
            )
        yield from self.special_cases()

    def text_cases(self) -> Iterator[Case]:
        for name, text in TEXTS.items():
            yield Case(f"text_{name}", response=self.render(Turn(text=text)))

    def tool_argument_cases(self) -> Iterator[Case]:
        if self.object_args:
            for name, obj in ARG_OBJECTS.items():
                turn = Turn(calls=(arg_call(dumps_args(obj)),))
                yield Case(f"tool_input_{name}", response=self.render(turn))
        else:
            for name, args in ARG_TEXTS.items():
                yield Case(f"tool_args_{name}", response=self.render(Turn(calls=(arg_call(args),))))

    def special_cases(self) -> Iterator[Case]:
        return iter(())

    def stream_cases(self) -> Iterator[Case]:
        for sc in STREAM_SCENARIOS:
            if sc.string_args_only and self.stream_object_args:
                continue
            yield self.stream_case(sc.name, sc.turn, sc.events())
        if self.tool_parsing_option:
            for name in NO_PARSING_SCENARIOS:
                sc = scenario(name)
                if sc.string_args_only and self.stream_object_args:
                    continue
                yield self.stream_case(
                    f"{name}_no_tool_parsing", sc.turn, sc.events(), stream_tool_parsing=False
                )
        yield from self.special_stream_cases()

    def special_stream_cases(self) -> Iterator[Case]:
        return iter(())

    def stream_case(
        self, name: str, turn: Turn, events: list, variant: dict | None = None, **options: Any
    ) -> Case:
        """A stream case; ``variant`` goes to render_stream, ``options`` to the model."""
        if self.tool_parsing_option:
            options.setdefault("stream_tool_parsing", True)
        return Case(name, options, chunks=self.render_stream(turn, events, **(variant or {})))

    # -- running -----------------------------------------------------------
    async def expected(self, case: Case) -> dict:
        model = self.make_model(ctor_kwargs(case.options), stream=case.stream)
        structured = structured_model_for(case.options)
        if case.stream:
            return await self.expected_stream(model, case, structured)
        try:
            response = self.parse(model, case.response, structured)
            if inspect.isawaitable(response):
                response = await response
        except Exception as error:  # the oracle's exception is the expectation
            return {"error": error_record(error)}
        return response_record(response)

    async def expected_stream(self, model: Any, case: Case, structured: Any) -> dict:
        feed = ChunkFeed(case.chunks, self.build_chunk, self.skip_chunk)
        snapshots, yielded, positions, error = [], [], [], None
        try:
            async for response in self.parse_stream(model, feed, structured):
                positions.append(feed.position())
                snapshots.append({"chunk": positions[-1], **response_record(response)})
                yielded.append(response)
        except Exception as err:  # recorded next to what was yielded before
            error = error_record(err)
        after = [
            {"chunk": position, **response_record(r)}
            for position, r in zip(positions, yielded, strict=True)
        ]
        result: dict = {"snapshots": snapshots}
        if self.always_record_after or after != snapshots:
            result["snapshots_after"] = after
        result["final"] = response_record(yielded[-1]) if yielded else None
        if error:
            result["error"] = error
        return result

    async def build_file(self) -> dict:
        cases = []
        for case in [*self.nonstream_cases(), *self.stream_cases()]:
            # Stream and non-stream cases share name stems; the prefix keeps names unique.
            name = f"stream_{case.name}" if case.stream else case.name
            entry: dict = {"name": name, "stream": case.stream, "options": case.options}
            if case.stream:
                entry["chunks"] = case.chunks
            else:
                entry["response"] = case.response
            entry["expected"] = await self.expected(case)
            cases.append(entry)
        names = [c["name"] for c in cases]
        duplicates = {n for n in names if names.count(n) > 1}
        assert not duplicates, f"{self.provider}: duplicate case names {duplicates}"
        return {
            "oracle": ORACLE,
            "generated_by": GENERATED_BY,
            "provider": self.provider,
            "encoding": f"{ENCODING_NOTE} Inputs: {PROVIDER_INPUT_NOTES[self.provider]}",
            "cases": cases,
        }


def without(mapping: dict, *keys: str) -> dict:
    return {k: v for k, v in mapping.items() if k not in keys}


def edit(document: dict, change: Callable[[dict], None]) -> dict:
    """A deep copy of a rendered JSON document with an in-place change applied."""
    copied = copy.deepcopy(document)
    change(copied)
    return copied


def put(target: dict, key: str, value: Any) -> None:
    if value is not ABSENT:
        target[key] = value


def insert_all(items: list, index: int, new_items: list) -> None:
    items[index:index] = new_items


# ---------------------------------------------------------------------------
# OpenAI chat completions (and DeepSeek)
# ---------------------------------------------------------------------------

# Fields of the ChatCompletionChunk schema that the namespace tree always has.
CHUNK_FIELDS = {
    "chunk": ("id", "choices", "usage"),
    "choices": ("index", "delta", "finish_reason"),
    "delta": ("role", "content", "tool_calls"),
    "tool_calls": ("index", "id", "type", "function"),
    "function": ("name", "arguments"),
    "usage": ("prompt_tokens", "completion_tokens", "total_tokens"),
}


def openai_chunk_namespace(value: Any, key: str = "chunk") -> Any:
    """A ChatCompletionChunk JSON as a SimpleNamespace tree (see module doc)."""
    if isinstance(value, list):
        return [openai_chunk_namespace(v, key) for v in value]
    if not isinstance(value, dict) or key == "audio":
        return value
    attrs = dict.fromkeys(CHUNK_FIELDS.get(key, ()))
    attrs.update({k: openai_chunk_namespace(v, k) for k, v in value.items()})
    return SimpleNamespace(**attrs)


class FakeOpenAIStream:
    """Stands in for openai.AsyncStream: an async context manager + iterator."""

    def __init__(self, feed: ChunkFeed) -> None:
        self._feed = feed

    async def __aenter__(self) -> FakeOpenAIStream:
        return self

    async def __aexit__(self, *exc: Any) -> bool:
        return False

    def __aiter__(self) -> AsyncIterator:
        return aiter(self._feed)


class OpenAIChatSuite(Suite):
    provider = "openai"
    model_name = "gpt-4o-mini"
    response_id = "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG"
    usages: ClassVar[dict] = {
        "standard": {"prompt_tokens": 19, "completion_tokens": 10, "total_tokens": 29},
        "zero": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        "cached_and_reasoning_details": {
            "prompt_tokens": 2006,
            "completion_tokens": 300,
            "total_tokens": 2306,
            "prompt_tokens_details": {"cached_tokens": 1920, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 128,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        },
        "missing_completion_tokens": {"prompt_tokens": 5, "total_tokens": 5},
        "null": None,
        "absent": ABSENT,
    }

    def make_model(self, options: dict, stream: bool) -> Any:
        from agentscope.model import OpenAIChatModel

        return OpenAIChatModel(self.model_name, api_key=FAKE_API_KEY, stream=stream, **options)

    def parse(self, model: Any, response: Any, structured: Any) -> Any:
        from openai._models import construct_type
        from openai.types.chat import ChatCompletion

        completion = construct_type(type_=ChatCompletion, value=response)
        return model._parse_openai_completion_response(START, completion, structured)

    def build_chunk(self, data: dict) -> Any:
        return openai_chunk_namespace(data)

    def parse_stream(self, model: Any, feed: ChunkFeed, structured: Any) -> AsyncIterator:
        return model._parse_openai_stream_response(START, FakeOpenAIStream(feed), structured)

    # -- wire format -------------------------------------------------------
    def message(self, turn: Turn) -> dict:
        message = {"role": "assistant", "content": turn.text}
        if turn.thinking is not None:
            message["reasoning_content"] = turn.thinking
        message["refusal"] = None
        if turn.calls:
            message["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.args}}
                for c in turn.calls
            ]
        return message

    def render(self, turn: Turn, usage: Any = DEFAULT, **_: Any) -> dict:
        body = {
            "id": self.response_id,
            "object": "chat.completion",
            "created": CREATED,
            "model": self.model_name,
            "choices": [
                {
                    "index": 0,
                    "message": self.message(turn),
                    "logprobs": None,
                    "finish_reason": "tool_calls" if turn.calls else "stop",
                }
            ],
        }
        put(body, "usage", self.usage_or_default(usage))
        body["system_fingerprint"] = "fp_golden01"
        return body

    def chunk(self, delta: dict | None, finish: str | None = None) -> dict:
        """A ChatCompletionChunk; delta None gives a chunk without choices."""
        chunk = {
            "id": self.response_id,
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": self.model_name,
            "system_fingerprint": "fp_golden01",
            "choices": [],
            "usage": None,
        }
        if delta is not None:
            chunk["choices"] = [
                {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            ]
        return chunk

    def thinking_delta(self, piece: str) -> dict:
        return {"reasoning_content": piece}

    def text_delta(self, piece: str) -> dict:
        return {"content": piece}

    def call_deltas(self, turn: Turn, event: Event, started: set, announce: bool) -> list:
        index, piece = event[1], event[2]
        if index in started:
            return [{"tool_calls": [{"index": index, "function": {"arguments": piece}}]}]
        started.add(index)
        call = turn.calls[index]
        head = {
            "index": index,
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": "" if announce else piece},
        }
        deltas = [{"role": "assistant", "content": None, "tool_calls": [head]}]
        if announce:
            deltas.append({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
        return deltas

    def render_stream(
        self,
        turn: Turn,
        events: list,
        usage: Any = DEFAULT,
        usage_mode: str = "separate",
        announce_calls: bool = True,
    ) -> list:
        """usage_mode: "separate" (final chunk without choices), "in_last"
        (on the finish chunk) or "none"; announce_calls: a call's first delta
        carries id and name with empty arguments (as OpenAI does)."""
        usage = self.usage_or_default(usage)
        chunks = [self.chunk({"role": "assistant", "content": ""})]
        started: set = set()
        for event in events:
            if event[0] == "think":
                chunks.append(self.chunk(self.thinking_delta(event[1])))
            elif event[0] == "text":
                chunks.append(self.chunk(self.text_delta(event[1])))
            else:
                deltas = self.call_deltas(turn, event, started, announce_calls)
                chunks.extend(self.chunk(d) for d in deltas)
        last = self.chunk({}, "tool_calls" if turn.calls else "stop")
        if usage_mode == "in_last":
            last["usage"] = usage
        chunks.append(last)
        if usage_mode == "separate":
            usage_chunk = self.chunk(None)
            usage_chunk["usage"] = usage
            chunks.append(usage_chunk)
        return chunks

    # -- provider specific cases -------------------------------------------
    def special_cases(self) -> Iterator[Case]:
        text = self.render(Turn(text=TEXTS["plain"]))

        def message_edit(change: Callable[[dict], None]) -> dict:
            return edit(text, lambda body: change(body["choices"][0]["message"]))

        yield Case(
            "reasoning_field_instead_of_reasoning_content",
            response=message_edit(
                lambda m: m.update(reasoning="Thinking via the reasoning field.")
            ),
        )
        yield Case(
            "reasoning_content_preferred_over_reasoning",
            response=message_edit(
                lambda m: m.update(
                    reasoning_content="from reasoning_content", reasoning="from reasoning"
                )
            ),
        )
        yield Case(
            "reasoning_content_null_falls_back_to_reasoning",
            response=message_edit(lambda m: m.update(reasoning_content=None, reasoning="fallback")),
        )
        yield Case(
            "reasoning_not_a_string_ignored",
            response=message_edit(lambda m: m.update(reasoning={"summary": "object, not str"})),
        )
        audio = {
            "id": "audio_6744555cc6d48190b67e70798ab606c3",
            "data": "UklGRiQAAABXQVZFZm10IBAAAAABAAEAESsAACJWAAACABAAZGF0YQAAAAA=",
            "expires_at": 1735736400,
            "transcript": "Hello there, how can I help?",
        }
        audio_only = message_edit(lambda m: m.update(content=None, audio=audio))
        yield Case("audio_with_transcript", response=audio_only)
        yield Case(
            "audio_without_transcript",
            response=message_edit(
                lambda m: m.update(content=None, audio={**audio, "transcript": ""})
            ),
        )
        yield Case(
            "audio_format_from_generate_kwargs",
            {
                "generate_kwargs": {
                    "modalities": ["text", "audio"],
                    "audio": {"voice": "alloy", "format": "wav"},
                }
            },
            response=audio_only,
        )
        yield Case(
            "audio_with_text_and_reasoning",
            response=message_edit(lambda m: m.update(audio=audio, reasoning_content="hm")),
        )
        second = {
            "index": 1,
            "message": {"role": "assistant", "content": "Second choice."},
            "logprobs": None,
            "finish_reason": "stop",
        }
        yield Case(
            "second_choice_ignored", response=edit(text, lambda b: b["choices"].append(second))
        )
        yield Case("choices_empty", response=edit(text, lambda b: b.update(choices=[])))
        yield Case(
            "content_null_with_refusal",
            response=message_edit(
                lambda m: m.update(content=None, refusal="I can't help with that.")
            ),
        )
        yield Case("id_absent", response=edit(text, lambda b: b.pop("id")))
        yield Case("id_empty_string", response=edit(text, lambda b: b.update(id="")))
        tool = self.render(Turn(calls=(WEATHER,)))

        def first_call(change: Callable[[dict], None]) -> dict:
            return edit(tool, lambda b: change(b["choices"][0]["message"]["tool_calls"][0]))

        yield Case(
            "tool_call_arguments_null",
            response=first_call(lambda c: c["function"].update(arguments=None)),
        )

        def make_custom(call: dict) -> None:
            del call["function"]
            call.update(type="custom", custom={"name": "shell", "input": "ls -la"})

        yield Case("custom_tool_call", response=first_call(make_custom))
        yield Case("structured_output_from_tool_call", {"structured_model": True}, response=tool)
        yield Case(
            "structured_output_first_of_two_calls",
            {"structured_model": True},
            response=self.render(Turn(calls=(WEATHER, WEATHER_LONDON))),
        )
        yield Case(
            "structured_output_text_only",
            {"structured_model": True},
            response=self.render(Turn(text='{"city": "Paris", "temperature": 22.5}')),
        )

    def special_stream_cases(self) -> Iterator[Case]:
        text_turn = Turn(text=TEXTS["plain"])
        text_events = plan(text_turn, by(9))
        tool_turn = Turn(text="Checking.", calls=(WEATHER, TIME))
        tool_events = plan(tool_turn, by(7), "interleaved")
        yield self.stream_case(
            "usage_in_finish_chunk", text_turn, text_events, {"usage_mode": "in_last"}
        )
        yield self.stream_case("no_usage_chunk", tool_turn, tool_events, {"usage_mode": "none"})
        yield self.stream_case("usage_zero", text_turn, text_events, {"usage": self.usages["zero"]})
        yield self.stream_case(
            "usage_cached_details",
            text_turn,
            text_events,
            {"usage": self.usages["cached_and_reasoning_details"]},
        )
        yield self.stream_case(
            "call_head_carries_first_arguments", tool_turn, tool_events, {"announce_calls": False}
        )
        base = self.render_stream(text_turn, text_events)
        filter_chunk = {
            "id": "",
            "object": "",
            "created": 0,
            "model": "",
            "choices": [],
            "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": {}}],
        }
        yield Case(
            "leading_chunk_without_choices",
            {"stream_tool_parsing": True},
            chunks=[filter_chunk, *base],
        )
        yield Case(
            "first_chunk_without_id",
            {"stream_tool_parsing": True},
            chunks=[without(base[0], "id"), *base[1:]],
        )
        changed_ids = [dict(c, id=f"chatcmpl-part{i}") for i, c in enumerate(base)]
        yield Case("chunk_ids_differ", {"stream_tool_parsing": True}, chunks=changed_ids)
        usage_only = self.render_stream(Turn(), [])
        yield Case("no_content_only_usage", {"stream_tool_parsing": True}, chunks=usage_only)
        yield from self.openai_only_stream_cases(text_events)

    def openai_only_stream_cases(self, text_events: list) -> Iterator[Case]:
        base = self.render_stream(Turn(text=TEXTS["plain"]), text_events)
        other_choice = [self.chunk({"content": f"<choice 1, part {i}>"}) for i in (0, 1)]
        for chunk in other_choice:
            chunk["choices"][0]["index"] = 1
        yield Case(
            "n2_choices_both_read_as_first",
            {"stream_tool_parsing": True},
            chunks=[base[0], base[1], other_choice[0], base[2], other_choice[1], *base[3:]],
        )
        reasoning = [self.chunk({"reasoning": piece}) for piece in ("Thinking ", "aloud.")]
        yield Case(
            "reasoning_field_deltas",
            {"stream_tool_parsing": True},
            chunks=[base[0], *reasoning, *base[1:]],
        )
        yield from self.audio_stream_cases()

    def audio_stream_cases(self) -> Iterator[Case]:
        audio_pieces = ["UklGRiQAAABX", "QVZFZm10IBAA", "AAABAAEAESsA"]
        transcript_pieces = ["Hello ", "there", "!"]
        chunks = [self.chunk({"role": "assistant", "content": None})]
        for data in audio_pieces:
            chunks.append(self.chunk({"audio": {"id": "audio_stream_01", "data": data}}))
        for piece in transcript_pieces:
            chunks.append(self.chunk({"audio": {"transcript": piece}}))
        chunks.append(
            self.chunk({"audio": {"id": "audio_stream_01", "expires_at": 1735736400}}, "stop")
        )
        usage = self.chunk(None)
        usage["usage"] = self.usages[self.default_usage]
        chunks.append(usage)
        yield Case("audio_deltas", {"stream_tool_parsing": True}, chunks=chunks)
        yield Case(
            "audio_deltas_format_from_generate_kwargs",
            {
                "stream_tool_parsing": True,
                "generate_kwargs": {"audio": {"voice": "alloy", "format": "pcm16"}},
            },
            chunks=chunks,
        )


class DeepSeekSuite(OpenAIChatSuite):
    """DeepSeek speaks the OpenAI format with reasoning_content."""

    provider = "deepseek"
    model_name = "deepseek-reasoner"
    response_id = "930c60df-bf64-41c9-a88e-3ec75f81e00e"
    default_usage = "with_cache_hit"
    usages: ClassVar[dict] = {
        "with_cache_hit": {
            "prompt_tokens": 13,
            "completion_tokens": 205,
            "total_tokens": 218,
            "prompt_tokens_details": {"cached_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 180},
            "prompt_cache_hit_tokens": 0,
            "prompt_cache_miss_tokens": 13,
        },
        "all_cached": {
            "prompt_tokens": 64,
            "completion_tokens": 1,
            "total_tokens": 65,
            "prompt_cache_hit_tokens": 64,
            "prompt_cache_miss_tokens": 0,
        },
        "zero": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        "absent": ABSENT,
    }
    DEEPSEEK_ARGS = ("valid", "broken", "partial", "concatenated", "empty", "bigint", "unicode")

    def message(self, turn: Turn) -> dict:
        message = {"role": "assistant", "content": turn.text if turn.text is not None else ""}
        if turn.thinking is not None:
            message["reasoning_content"] = turn.thinking
        if turn.calls:
            message["tool_calls"] = [
                {
                    "index": i,
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.args},
                }
                for i, c in enumerate(turn.calls)
            ]
        return message

    def thinking_delta(self, piece: str) -> dict:
        return {"content": None, "reasoning_content": piece}

    def text_delta(self, piece: str) -> dict:
        return {"content": piece, "reasoning_content": None}

    def text_cases(self) -> Iterator[Case]:
        for name, text in TEXTS.items():
            turn = Turn(text=text, thinking=THINKINGS["plain"])
            yield Case(f"reasoning_and_text_{name}", response=self.render(turn))
        for name, thinking in THINKINGS.items():
            turn = Turn(text=TEXTS["plain"], thinking=thinking)
            yield Case(f"reasoning_{name}_and_text", response=self.render(turn))

    def tool_argument_cases(self) -> Iterator[Case]:
        for name in self.DEEPSEEK_ARGS:
            turn = Turn(text="", thinking=THINKINGS["plain"], calls=(arg_call(ARG_TEXTS[name]),))
            yield Case(f"reasoning_and_tool_args_{name}", response=self.render(turn))

    def special_cases(self) -> Iterator[Case]:
        plain = self.render(Turn(text=TEXTS["plain"]))
        yield Case(
            "deepseek_chat_without_reasoning",
            response=edit(plain, lambda b: b.update(model="deepseek-chat")),
        )
        yield Case(
            "reasoning_content_null",
            response=edit(
                plain, lambda b: b["choices"][0]["message"].update(reasoning_content=None)
            ),
        )
        yield Case(
            "structured_output_from_tool_call",
            {"structured_model": True},
            response=self.render(Turn(calls=(WEATHER,))),
        )

    def special_stream_cases(self) -> Iterator[Case]:
        reasoning_turn = Turn(text=TEXTS["unicode"], thinking=THINKINGS["unicode"])
        yield self.stream_case("reasoning_unicode_by2", reasoning_turn, plan(reasoning_turn, by(2)))
        tool_turn = Turn(text="", thinking=THINKINGS["plain"], calls=(WEATHER,))
        yield self.stream_case("reasoning_then_tool_by6", tool_turn, plan(tool_turn, by(6)))
        with_empty = self.render_stream(reasoning_turn, plan(reasoning_turn, by(10)))
        # DeepSeek sends reasoning_content "" (not null) once the answer starts.
        with_empty = [
            edit(c, lambda x: x["choices"][0]["delta"].update(reasoning_content=""))
            if c["choices"]
            and c["choices"][0]["delta"].get("reasoning_content") is None
            and c["choices"][0]["delta"].get("content")
            else c
            for c in with_empty
        ]
        yield Case(
            "reasoning_content_empty_string_in_answer",
            {"stream_tool_parsing": True},
            chunks=with_empty,
        )
        text_turn = Turn(text=TEXTS["plain"])
        yield self.stream_case(
            "usage_all_cached",
            text_turn,
            plan(text_turn, by(12)),
            {"usage": self.usages["all_cached"]},
        )
        yield Case(
            "no_content_only_usage",
            {"stream_tool_parsing": True},
            chunks=self.render_stream(Turn(), []),
        )


# ---------------------------------------------------------------------------
# Anthropic messages
# ---------------------------------------------------------------------------


class AnthropicSuite(Suite):
    provider = "anthropic"
    model_name = "claude-sonnet-4-5"
    response_id = "msg_01XFDUDYJgAACzvnptvVoYEL"
    always_record_after = True
    object_args = True  # Message.content tool_use input; stream deltas are strings
    signature = "EqQBCkYIBxgCKkDxD0n7b1xO0hM4sQyZGolden+Signature/AAA=="
    usages: ClassVar[dict] = {
        "standard": {"input_tokens": 25, "output_tokens": 12},
        "zero": {"input_tokens": 0, "output_tokens": 0},
        "cache_tokens": {
            "input_tokens": 3,
            "cache_creation_input_tokens": 1200,
            "cache_read_input_tokens": 4800,
            "output_tokens": 87,
            "service_tier": "standard",
        },
        "null": None,
    }

    def make_model(self, options: dict, stream: bool) -> Any:
        from agentscope.model import AnthropicChatModel

        return AnthropicChatModel(self.model_name, api_key=FAKE_API_KEY, stream=stream, **options)

    def parse(self, model: Any, response: Any, structured: Any) -> Any:
        from anthropic._models import construct_type
        from anthropic.types import Message

        message = construct_type(type_=Message, value=response)
        return model._parse_anthropic_completion_response(START, message, structured)

    def build_chunk(self, data: dict) -> Any:
        from anthropic._models import construct_type
        from anthropic.types import RawMessageStreamEvent

        return construct_type(type_=RawMessageStreamEvent, value=data)

    def skip_chunk(self, data: dict) -> bool:
        return data.get("type") == "ping"

    def parse_stream(self, model: Any, feed: ChunkFeed, structured: Any) -> AsyncIterator:
        return model._parse_anthropic_stream_completion_response(START, feed, structured)

    # -- wire format -------------------------------------------------------
    def blocks(self, turn: Turn) -> list:
        blocks = []
        if turn.thinking is not None:
            blocks.append(
                {"type": "thinking", "thinking": turn.thinking, "signature": self.signature}
            )
        if turn.text is not None:
            blocks.append({"type": "text", "text": turn.text, "citations": None})
        for call in turn.calls:
            blocks.append(
                {"type": "tool_use", "id": call.id, "name": call.name, "input": call.args_object()}
            )
        return blocks

    def render(self, turn: Turn, usage: Any = DEFAULT, **_: Any) -> dict:
        return {
            "id": self.response_id,
            "type": "message",
            "role": "assistant",
            "model": self.model_name,
            "content": self.blocks(turn),
            "stop_reason": "tool_use" if turn.calls else "end_turn",
            "stop_sequence": None,
            "usage": self.usage_or_default(usage),
        }

    def block_events(
        self, turn: Turn, index: int, target: Any, pieces: list, leading_empty_json: bool
    ) -> list:
        if target == "think":
            start = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": p} for p in pieces]
            deltas.append({"type": "signature_delta", "signature": self.signature})
        elif target == "text":
            start = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in pieces]
        else:
            call = turn.calls[target[1]]
            start = {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}
            pieces = ([""] if leading_empty_json else []) + pieces
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in pieces]
        return [
            {"type": "content_block_start", "index": index, "content_block": start},
            *({"type": "content_block_delta", "index": index, "delta": d} for d in deltas),
            {"type": "content_block_stop", "index": index},
        ]

    def render_stream(
        self,
        turn: Turn,
        events: list,
        start_usage: Any = DEFAULT,
        final_usage: Any = DEFAULT,
        leading_empty_json: bool = True,
        ping: bool = True,
    ) -> list:
        start_usage = (
            {"input_tokens": 25, "output_tokens": 1} if start_usage is DEFAULT else start_usage
        )
        message = {
            "id": self.response_id,
            "type": "message",
            "role": "assistant",
            "model": self.model_name,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": start_usage,
        }
        chunks = [{"type": "message_start", "message": message}]
        if ping:
            chunks.append({"type": "ping"})
        for index, (target, pieces) in enumerate(segments(events)):
            chunks.extend(self.block_events(turn, index, target, pieces, leading_empty_json))
        chunks.append(
            {
                "type": "message_delta",
                "delta": {
                    "stop_reason": "tool_use" if turn.calls else "end_turn",
                    "stop_sequence": None,
                },
                "usage": {"output_tokens": 42} if final_usage is DEFAULT else final_usage,
            }
        )
        chunks.append({"type": "message_stop"})
        return chunks

    # -- provider specific cases -------------------------------------------
    def special_cases(self) -> Iterator[Case]:
        full = self.render(Turn(text=TEXTS["plain"], thinking=THINKINGS["plain"], calls=(WEATHER,)))

        def content(change: Callable[[list], None]) -> dict:
            return edit(full, lambda b: change(b["content"]))

        yield Case(
            "redacted_thinking_ignored",
            response=content(
                lambda c: c.insert(
                    1, {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafP"}
                )
            ),
        )
        yield Case("empty_signature", response=content(lambda c: c[0].update(signature="")))
        yield Case(
            "two_text_blocks_kept_separate",
            response=content(
                lambda c: c.insert(2, {"type": "text", "text": " Second block.", "citations": None})
            ),
        )
        yield Case(
            "provider_block_order_kept",
            response=content(
                lambda c: c.append(
                    {"type": "text", "text": "Text after the tool.", "citations": None}
                )
            ),
        )
        server_tool = [
            {
                "type": "server_tool_use",
                "id": "srvtoolu_01",
                "name": "web_search",
                "input": {"query": "paris weather"},
            },
            {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01", "content": []},
        ]
        yield Case(
            "server_tool_blocks_ignored", response=content(lambda c: insert_all(c, 1, server_tool))
        )
        yield Case("content_empty_list", response=content(lambda c: c.clear()))
        yield Case("id_absent", response=edit(full, lambda b: b.pop("id")))
        yield Case("usage_absent", response=edit(full, lambda b: b.pop("usage")))
        yield Case("structured_output_from_tool_use", {"structured_model": True}, response=full)
        yield Case(
            "structured_output_last_tool_use_wins",
            {"structured_model": True},
            response=self.render(Turn(calls=(WEATHER, WEATHER_LONDON))),
        )

    def special_stream_cases(self) -> Iterator[Case]:
        turn = Turn(text=TEXTS["plain"], thinking=THINKINGS["plain"], calls=(WEATHER,))
        events = plan(turn, by(9))
        base = self.render_stream(turn, events)
        yield self.stream_case(
            "no_ping_no_leading_empty_json",
            turn,
            events,
            {"ping": False, "leading_empty_json": False},
        )
        yield self.stream_case(
            "input_tokens_in_message_delta",
            turn,
            events,
            {
                "start_usage": {"input_tokens": 0, "output_tokens": 0},
                "final_usage": {"input_tokens": 31, "output_tokens": 57},
            },
        )
        yield self.stream_case(
            "cache_usage",
            turn,
            events,
            {"start_usage": self.usages["cache_tokens"], "final_usage": {"output_tokens": 99}},
        )
        yield self.stream_case(
            "message_delta_lower_input_tokens_ignored",
            turn,
            events,
            {"final_usage": {"input_tokens": 3, "output_tokens": 50}},
        )
        no_usage = edit(base[0], lambda e: e["message"].update(usage=None))
        yield Case(
            "no_usage_in_message_start", {"stream_tool_parsing": True}, chunks=[no_usage, *base[1:]]
        )
        text_in_start = [
            edit(c, lambda e: e["content_block"].update(text="Dropped? "))
            if c["type"] == "content_block_start" and c["content_block"]["type"] == "text"
            else c
            for c in base
        ]
        yield Case(
            "text_in_content_block_start", {"stream_tool_parsing": True}, chunks=text_in_start
        )
        yield Case(
            "structured_output_tool_stream",
            {"stream_tool_parsing": True, "structured_model": True},
            chunks=self.render_stream(Turn(calls=(WEATHER,)), plan(Turn(calls=(WEATHER,)), by(5))),
        )
        two_text = Turn(text="Before and after.", calls=(WEATHER,))
        yield self.stream_case(
            "text_tool_text_blocks", two_text, plan(two_text, by(4), "interleaved")
        )


# ---------------------------------------------------------------------------
# Gemini generateContent
# ---------------------------------------------------------------------------


def gemini_response(data: dict) -> Any:
    """A REST GenerateContentResponse JSON as google-genai builds it."""
    from google.genai import types
    from google.genai.models import _GenerateContentResponse_from_mldev

    converted = _GenerateContentResponse_from_mldev(copy.deepcopy(data))
    return types.GenerateContentResponse._from_response(response=converted, kwargs={})


class GeminiSuite(Suite):
    provider = "gemini"
    model_name = "gemini-2.5-flash"
    response_id = "7q1KaKr0LcOhz7IP8rWEmAY"
    object_args = True
    stream_object_args = True
    tool_parsing_option = False
    signature = base64.b64encode(b"\x12\x34golden-thought-signature\xfe\xff").decode()
    usages: ClassVar[dict] = {
        "standard": {"promptTokenCount": 8, "candidatesTokenCount": 12, "totalTokenCount": 20},
        "with_thoughts": {
            "promptTokenCount": 8,
            "candidatesTokenCount": 12,
            "thoughtsTokenCount": 40,
            "totalTokenCount": 60,
        },
        "cached": {
            "promptTokenCount": 2100,
            "cachedContentTokenCount": 2048,
            "candidatesTokenCount": 5,
            "totalTokenCount": 2105,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 2100}],
        },
        "zero": {"promptTokenCount": 0, "totalTokenCount": 0},
        "no_total": {"promptTokenCount": 8, "candidatesTokenCount": 4},
        "empty_object": {},
        "absent": ABSENT,
    }

    def make_model(self, options: dict, stream: bool) -> Any:
        from agentscope.model import GeminiChatModel

        return GeminiChatModel(self.model_name, api_key=FAKE_API_KEY, stream=stream, **options)

    def parse(self, model: Any, response: Any, structured: Any) -> Any:
        return model._parse_gemini_generation_response(START, gemini_response(response), structured)

    def build_chunk(self, data: dict) -> Any:
        return gemini_response(data)

    def parse_stream(self, model: Any, feed: ChunkFeed, structured: Any) -> AsyncIterator:
        return model._parse_gemini_stream_generation_response(START, feed, structured)

    # -- wire format -------------------------------------------------------
    def call_part(self, call: Call, signature: str | None = None, with_id: bool = False) -> dict:
        function_call = {"name": call.name, "args": call.args_object()}
        if with_id:
            function_call = {"id": call.id, **function_call}
        part = {"functionCall": function_call}
        if signature:
            part["thoughtSignature"] = signature
        return part

    def parts(self, turn: Turn, signatures: tuple = (), with_ids: bool = False) -> list:
        parts = []
        if turn.thinking is not None:
            parts.append({"text": turn.thinking, "thought": True})
        if turn.text is not None:
            parts.append({"text": turn.text})
        for i, call in enumerate(turn.calls):
            signature = signatures[i] if i < len(signatures) else None
            parts.append(self.call_part(call, signature, with_ids))
        return parts

    def envelope(self, parts: list | None, usage: Any, finish: str | None = "STOP") -> dict:
        candidate: dict = {}
        if parts is not None:
            candidate["content"] = {"parts": parts, "role": "model"}
        if finish:
            candidate["finishReason"] = finish
        candidate["index"] = 0
        body: dict = {"candidates": [candidate]}
        put(body, "usageMetadata", usage)
        body["modelVersion"] = self.model_name
        body["responseId"] = self.response_id
        return body

    def render(
        self, turn: Turn, usage: Any = DEFAULT, signatures: tuple = (), with_ids: bool = False
    ) -> dict:
        usage = self.usage_or_default(usage)
        return self.envelope(self.parts(turn, signatures, with_ids), usage)

    def render_stream(
        self,
        turn: Turn,
        events: list,
        usage_mode: str = "every",
        signatures: tuple = (),
        trailing_signature: str | None = None,
    ) -> list:
        """One part per chunk; a call is sent whole at its first event.
        usage_mode: "every" (running counts on every chunk), "last" or "none"."""
        parts = []
        sent: set = set()
        for event in events:
            if event[0] == "think":
                parts.append({"text": event[1], "thought": True})
            elif event[0] == "text":
                parts.append({"text": event[1]})
            elif event[1] not in sent:
                sent.add(event[1])
                signature = signatures[event[1]] if event[1] < len(signatures) else None
                parts.append(self.call_part(turn.calls[event[1]], signature))
        if trailing_signature:
            parts.append({"text": "", "thoughtSignature": trailing_signature})
        chunks = []
        for n, part in enumerate(parts, start=1):
            last = n == len(parts)
            usage = {"promptTokenCount": 8, "candidatesTokenCount": n, "totalTokenCount": 8 + n}
            if usage_mode == "none" or (usage_mode == "last" and not last):
                usage = ABSENT
            chunks.append(self.envelope([part], usage, "STOP" if last else None))
        return chunks

    # -- provider specific cases -------------------------------------------
    def special_cases(self) -> Iterator[Case]:
        sig2 = base64.b64encode(b"second-signature").decode()
        two_calls = Turn(calls=(WEATHER, TIME))
        yield Case(
            "call_id_from_thought_signature",
            response=self.render(Turn(calls=(WEATHER,)), signatures=(self.signature,)),
        )
        yield Case("call_id_from_function_call_id", response=self.render(two_calls, with_ids=True))
        yield Case(
            "signature_wins_over_function_call_id",
            response=self.render(two_calls, signatures=(self.signature,), with_ids=True),
        )
        yield Case(
            "calls_without_ids_numbered", response=self.render(Turn(calls=(WEATHER, TIME, SEARCH)))
        )
        yield Case(
            "signed_and_unsigned_calls_mixed",
            response=self.render(
                Turn(calls=(WEATHER, TIME, SEARCH)), signatures=(self.signature, None, sig2)
            ),
        )
        text_turn = Turn(text=TEXTS["plain"], thinking=THINKINGS["plain"])
        thought_and_text = self.render(text_turn)

        def parts_of(body: dict) -> list:
            return body["candidates"][0]["content"]["parts"]

        yield Case(
            "signature_on_text_part",
            response=edit(
                thought_and_text, lambda b: parts_of(b)[1].update(thoughtSignature=self.signature)
            ),
        )
        yield Case(
            "signature_on_thought_part_goes_to_last_text",
            response=edit(
                thought_and_text, lambda b: parts_of(b)[0].update(thoughtSignature=self.signature)
            ),
        )
        yield Case(
            "signature_on_trailing_empty_part",
            response=edit(
                thought_and_text,
                lambda b: parts_of(b).extend(
                    [{"text": "More text."}, {"text": "", "thoughtSignature": self.signature}]
                ),
            ),
        )
        only_thought = self.render(Turn(thinking="Only thought."))
        yield Case(
            "signature_without_any_text_block",
            response=edit(only_thought, lambda b: parts_of(b)[0].update(thoughtSignature=sig2)),
        )
        for label, signature in (
            ("urlsafe", "-_8="),
            ("unpadded", "YQ"),
            ("invalid", "not base64!"),
        ):
            yield Case(
                f"call_signature_{label}",
                response=self.render(Turn(calls=(WEATHER,)), signatures=(signature,)),
            )
        yield Case(
            "multiple_text_parts",
            response=edit(
                thought_and_text,
                lambda b: parts_of(b).extend([{"text": " Part two."}, {"text": " Part three."}]),
            ),
        )
        yield Case(
            "text_after_call_calls_last",
            response=edit(
                self.render(Turn(calls=(WEATHER,))),
                lambda b: parts_of(b).append({"text": "Text after call."}),
            ),
        )
        yield Case(
            "function_call_without_args",
            response=edit(
                self.render(Turn(calls=(TIME,))),
                lambda b: parts_of(b)[0]["functionCall"].pop("args"),
            ),
        )
        yield Case(
            "empty_thought_part_skipped",
            response=edit(
                thought_and_text, lambda b: parts_of(b).insert(0, {"text": "", "thought": True})
            ),
        )
        yield Case(
            "non_text_parts_ignored",
            response=edit(
                thought_and_text,
                lambda b: parts_of(b).extend(
                    [
                        {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
                        {"executableCode": {"language": "PYTHON", "code": "print(1)"}},
                        {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1\n"}},
                    ]
                ),
            ),
        )
        yield Case(
            "prompt_blocked_no_candidates",
            response={
                "promptFeedback": {"blockReason": "SAFETY"},
                "usageMetadata": {"promptTokenCount": 8, "totalTokenCount": 8},
                "modelVersion": self.model_name,
                "responseId": self.response_id,
            },
        )
        yield Case(
            "candidate_without_content",
            response=self.envelope(None, self.usages[self.default_usage], "MAX_TOKENS"),
        )
        yield Case(
            "candidate_with_empty_parts",
            response=self.envelope([], self.usages[self.default_usage], "STOP"),
        )
        yield Case(
            "response_id_absent", response=edit(thought_and_text, lambda b: b.pop("responseId"))
        )
        yield Case(
            "structured_output_json_text",
            {"structured_model": True},
            response=self.render(Turn(text='{"city": "Paris", "temperature": 22.5}')),
        )
        yield Case(
            "structured_output_broken_json_text",
            {"structured_model": True},
            response=self.render(Turn(text='{"city": "Par')),
        )
        yield Case(
            "structured_output_with_call",
            {"structured_model": True},
            response=self.render(Turn(text='{"city": "Paris"}', calls=(WEATHER,))),
        )

    def special_stream_cases(self) -> Iterator[Case]:
        turn = Turn(text=TEXTS["plain"], thinking=THINKINGS["plain"], calls=(WEATHER, TIME))
        events = plan(turn, by(11))
        yield self.stream_case("usage_last_chunk_only", turn, events, {"usage_mode": "last"})
        yield self.stream_case("usage_none", turn, events, {"usage_mode": "none"})
        yield self.stream_case(
            "call_signatures", turn, events, {"signatures": (self.signature, None)}
        )
        yield self.stream_case(
            "trailing_empty_part_with_signature",
            turn,
            events,
            {"trailing_signature": self.signature},
        )
        base = self.render_stream(turn, events)
        empty_chunk = edit(base[1], lambda b: b["candidates"][0]["content"].update(parts=[]))
        no_candidates = without(base[1], "candidates")
        yield Case("chunk_with_empty_parts", {}, chunks=[base[0], empty_chunk, *base[1:]])
        yield Case("chunk_without_candidates", {}, chunks=[base[0], no_candidates, *base[1:]])
        late_id = [without(c, "responseId") for c in base[:-1]] + [base[-1]]
        yield Case("response_id_only_in_last_chunk", {}, chunks=late_id)
        together = self.envelope(self.parts(turn), self.usages["with_thoughts"])
        yield Case("all_parts_in_one_chunk", {}, chunks=[together])
        json_turn = Turn(text='{"city": "Paris", "temperature": 22.5}')
        yield self.stream_case(
            "structured_output_json_by6", json_turn, plan(json_turn, by(6)), structured_model=True
        )


# ---------------------------------------------------------------------------
# DashScope generation
# ---------------------------------------------------------------------------


def dashscope_response(data: dict) -> Any:
    """A DashScope response JSON as the dashscope SDK builds it."""
    from dashscope.api_entities.dashscope_response import DashScopeAPIResponse, GenerationResponse

    data = copy.deepcopy(data)
    api_response = DashScopeAPIResponse(
        status_code=data.get("status_code", 200),
        request_id=data.get("request_id", ""),
        code=data.get("code", ""),
        message=data.get("message", ""),
        output=data.get("output"),
        usage=data.get("usage"),
        headers={},
    )
    return GenerationResponse.from_api_response(api_response)


class DashScopeSuite(Suite):
    provider = "dashscope"
    model_name = "qwen-plus"
    response_id = "d3f1e7b2-5c3a-9b8e-a1f4-2c6d8e0b7a91"
    usages: ClassVar[dict] = {
        "standard": {"input_tokens": 30, "output_tokens": 12, "total_tokens": 42},
        "zero": {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0},
        "with_details": {
            "input_tokens": 3019,
            "output_tokens": 104,
            "total_tokens": 3123,
            "prompt_tokens_details": {"cached_tokens": 2048},
            "output_tokens_details": {"reasoning_tokens": 80},
        },
        "empty_object": {},
        "absent": ABSENT,
    }

    def make_model(self, options: dict, stream: bool) -> Any:
        from agentscope.model import DashScopeChatModel

        return DashScopeChatModel(self.model_name, api_key=FAKE_API_KEY, stream=stream, **options)

    def parse(self, model: Any, response: Any, structured: Any) -> Any:
        return model._parse_dashscope_generation_response(
            START, dashscope_response(response), structured
        )

    def build_chunk(self, data: dict) -> Any:
        return dashscope_response(data)

    def parse_stream(self, model: Any, feed: ChunkFeed, structured: Any) -> AsyncIterator:
        return model._parse_dashscope_stream_response(START, feed, structured)

    # -- wire format -------------------------------------------------------
    def message(self, turn: Turn, list_content: bool = False) -> dict:
        text = turn.text if turn.text is not None else ""
        message: dict = {"role": "assistant", "content": [{"text": text}] if list_content else text}
        if turn.thinking is not None:
            message["reasoning_content"] = turn.thinking
        if turn.calls:
            message["tool_calls"] = [
                {
                    "index": i,
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.args},
                }
                for i, c in enumerate(turn.calls)
            ]
        return message

    def envelope(self, message: dict, usage: Any, finish: str) -> dict:
        body = {
            "status_code": 200,
            "request_id": self.response_id,
            "code": "",
            "message": "",
            "output": {
                "text": None,
                "finish_reason": None,
                "choices": [{"finish_reason": finish, "message": message}],
            },
        }
        put(body, "usage", usage)
        return body

    def render(self, turn: Turn, usage: Any = DEFAULT, list_content: bool = False) -> dict:
        usage = self.usage_or_default(usage)
        return self.envelope(
            self.message(turn, list_content), usage, "tool_calls" if turn.calls else "stop"
        )

    def call_delta(
        self, turn: Turn, event: Event, sent: dict, repeat_name: bool, repeat_id: Any
    ) -> dict:
        """One tool-call delta; ``sent`` counts the deltas sent per call."""
        index, piece = event[1], event[2]
        call = turn.calls[index]
        count = sent.get(index, 0)
        sent[index] = count + 1
        if count == 0 or repeat_id == "same":
            call_id = call.id
        elif repeat_id == "different":
            call_id = f"_part{count}"
        else:
            call_id = ""
        function = {"arguments": piece}
        if count == 0 or repeat_name:
            function = {"name": call.name, **function}
        return {"index": index, "id": call_id, "type": "function", "function": function}

    def render_stream(
        self,
        turn: Turn,
        events: list,
        list_content: bool = False,
        repeat_name: bool = False,
        repeat_id: Any = None,
        drop_index: bool = False,
    ) -> list:
        """Incremental output; usage with running counts on every chunk.
        repeat_id: None (later deltas send id ""), "same" or "different"."""
        chunks = []
        sent: dict = {}
        for n, event in enumerate(events, start=1):
            message: dict = {"role": "assistant", "content": "", "reasoning_content": ""}
            if event[0] == "think":
                message["reasoning_content"] = event[1]
            elif event[0] == "text":
                message["content"] = event[1]
            else:
                delta = self.call_delta(turn, event, sent, repeat_name, repeat_id)
                message["tool_calls"] = [without(delta, "index") if drop_index else delta]
            if list_content:
                message["content"] = [{"text": message["content"]}] if message["content"] else []
            usage = {"input_tokens": 30, "output_tokens": n, "total_tokens": 30 + n}
            chunks.append(self.envelope(message, usage, "null"))
        final = {
            "role": "assistant",
            "content": [] if list_content else "",
            "reasoning_content": "",
        }
        n = len(events) + 1
        usage = {"input_tokens": 30, "output_tokens": n, "total_tokens": 30 + n}
        chunks.append(self.envelope(final, usage, "tool_calls" if turn.calls else "stop"))
        return chunks

    # -- provider specific cases -------------------------------------------
    def special_cases(self) -> Iterator[Case]:
        plain = self.render(Turn(text=TEXTS["plain"]))

        def message_of(body: dict) -> dict:
            return body["output"]["choices"][0]["message"]

        def with_content(content: Any) -> dict:
            return edit(plain, lambda b: message_of(b).update(content=content))

        yield Case(
            "content_list_one_text",
            response=self.render(Turn(text=TEXTS["plain"]), list_content=True),
        )
        yield Case(
            "content_list_two_texts",
            response=with_content([{"text": "First."}, {"text": "Second."}]),
        )
        yield Case(
            "content_list_with_image_item",
            response=with_content(
                [{"image": "https://example.com/cat.png"}, {"text": "A cat."}, {"text": ""}]
            ),
        )
        yield Case("content_list_empty", response=with_content([]))
        yield Case("content_null", response=with_content(None))
        yield Case("content_absent", response=edit(plain, lambda b: message_of(b).pop("content")))
        yield Case(
            "reasoning_content_ignored_non_stream",
            response=self.render(Turn(text=TEXTS["plain"], thinking=THINKINGS["plain"])),
        )
        tool = self.render(Turn(calls=(WEATHER,)))

        def call_of(body: dict) -> dict:
            return message_of(body)["tool_calls"][0]["function"]

        yield Case(
            "tool_arguments_absent", response=edit(tool, lambda b: call_of(b).pop("arguments"))
        )
        yield Case(
            "tool_arguments_null", response=edit(tool, lambda b: call_of(b).update(arguments=None))
        )
        yield Case(
            "tool_calls_with_list_content",
            response=self.render(Turn(text="Calling.", calls=(WEATHER, TIME)), list_content=True),
        )
        yield Case(
            "error_status",
            response={
                "status_code": 400,
                "request_id": self.response_id,
                "code": "InvalidParameter",
                "message": "The tool call is not supported.",
            },
        )
        yield Case("request_id_absent", response=edit(plain, lambda b: b.pop("request_id")))
        yield Case(
            "legacy_text_output",
            response=edit(
                plain, lambda b: b.update(output={"text": "Legacy text.", "finish_reason": "stop"})
            ),
        )
        yield Case("structured_output_from_tool_call", {"structured_model": True}, response=tool)

    def special_stream_cases(self) -> Iterator[Case]:
        turn = Turn(text="Checking.", calls=(WEATHER, TIME))
        events = plan(turn, by(7), "interleaved")
        yield self.stream_case("repeated_name_concatenated", turn, events, {"repeat_name": True})
        yield self.stream_case("repeated_same_id_kept", turn, events, {"repeat_id": "same"})
        yield self.stream_case(
            "differing_ids_concatenated", turn, events, {"repeat_id": "different"}
        )
        yield self.stream_case(
            "tool_delta_without_index",
            Turn(calls=(WEATHER,)),
            plan(Turn(calls=(WEATHER,)), by(6)),
            {"drop_index": True},
        )
        thinking = Turn(text=TEXTS["plain"], thinking=THINKINGS["unicode"])
        yield self.stream_case(
            "list_content_with_thinking", thinking, plan(thinking, by(5)), {"list_content": True}
        )
        base = self.render_stream(thinking, plan(thinking, by(5)))
        error_chunk = {
            "status_code": 500,
            "request_id": self.response_id,
            "code": "InternalError",
            "message": "An internal error has occured, please try again later.",
        }
        yield Case(
            "error_chunk_mid_stream",
            {"stream_tool_parsing": True},
            chunks=[*base[:4], error_chunk, *base[4:]],
        )
        no_usage = [without(c, "usage") for c in base]
        yield Case("usage_absent_in_chunks", {"stream_tool_parsing": True}, chunks=no_usage)
        json_turn = Turn(calls=(WEATHER,))
        yield self.stream_case(
            "structured_output_tool_stream",
            json_turn,
            plan(json_turn, by(8)),
            structured_model=True,
        )


# ---------------------------------------------------------------------------
# Ollama /api/chat
# ---------------------------------------------------------------------------


def ollama_response(data: dict) -> Any:
    """One /api/chat JSON as the ollama SDK builds it (errors raise)."""
    import ollama

    if error := data.get("error"):
        raise ollama.ResponseError(error)
    return ollama.ChatResponse(**copy.deepcopy(data))


class OllamaSuite(Suite):
    provider = "ollama"
    model_name = "qwen3:8b"
    object_args = True
    stream_object_args = True
    tool_parsing_option = False
    timestamp = "2025-01-01T12:00:00.000000Z"
    durations: ClassVar[dict] = {
        "total_duration": 4883583458,
        "load_duration": 1334875,
        "prompt_eval_duration": 342546000,
        "eval_duration": 4535599000,
    }
    usages: ClassVar[dict] = {
        "standard": {"prompt_eval_count": 26, "eval_count": 298},
        "zero": {"prompt_eval_count": 0, "eval_count": 0},
        "only_eval_count": {"eval_count": 12},
        "null_counts": {"prompt_eval_count": None, "eval_count": None},
        "absent": {},
    }

    def make_model(self, options: dict, stream: bool) -> Any:
        from agentscope.model import OllamaChatModel

        return OllamaChatModel(self.model_name, stream=stream, **options)

    def parse(self, model: Any, response: Any, structured: Any) -> Any:
        return model._parse_ollama_completion_response(START, ollama_response(response), structured)

    def build_chunk(self, data: dict) -> Any:
        return ollama_response(data)

    def parse_stream(self, model: Any, feed: ChunkFeed, structured: Any) -> AsyncIterator:
        return model._parse_ollama_stream_completion_response(START, feed, structured)

    # -- wire format -------------------------------------------------------
    def message(self, turn: Turn) -> dict:
        message: dict = {"role": "assistant", "content": turn.text if turn.text is not None else ""}
        if turn.thinking is not None:
            message["thinking"] = turn.thinking
        if turn.calls:
            message["tool_calls"] = [
                {"function": {"name": c.name, "arguments": c.args_object()}} for c in turn.calls
            ]
        return message

    def line(self, message: dict, done: bool = False, usage: dict | None = None) -> dict:
        body = {"model": self.model_name, "created_at": self.timestamp, "message": message}
        if done:
            body.update(done_reason="stop", done=True)
            body.update(
                total_duration=self.durations["total_duration"],
                load_duration=self.durations["load_duration"],
            )
            if "prompt_eval_count" in usage:
                body["prompt_eval_count"] = usage["prompt_eval_count"]
            body["prompt_eval_duration"] = self.durations["prompt_eval_duration"]
            if "eval_count" in usage:
                body["eval_count"] = usage["eval_count"]
            body["eval_duration"] = self.durations["eval_duration"]
        else:
            body["done"] = False
        return body

    def render(self, turn: Turn, usage: Any = DEFAULT, **_: Any) -> dict:
        usage = self.usage_or_default(usage)
        return self.line(self.message(turn), done=True, usage=usage)

    def render_stream(
        self, turn: Turn, events: list, calls_together: bool = True, usage: Any = DEFAULT
    ) -> list:
        """Thinking and text pieces one per line; tool calls arrive whole
        (all in one line, or one line each); a final done line with counts."""
        usage = self.usage_or_default(usage)
        lines = []
        sent: set = set()
        for event in events:
            if event[0] == "think":
                lines.append(self.line({"role": "assistant", "content": "", "thinking": event[1]}))
            elif event[0] == "text":
                lines.append(self.line({"role": "assistant", "content": event[1]}))
            elif event[1] not in sent:
                batch = range(len(turn.calls)) if calls_together else [event[1]]
                sent.update(batch)
                calls = [self.message(Turn(calls=(turn.calls[i],)))["tool_calls"][0] for i in batch]
                lines.append(self.line({"role": "assistant", "content": "", "tool_calls": calls}))
        lines.append(self.line({"role": "assistant", "content": ""}, done=True, usage=usage))
        return lines

    # -- provider specific cases -------------------------------------------
    def special_cases(self) -> Iterator[Case]:
        yield Case(
            "unicode_arguments_ascii_escaped_raw_input",
            response=self.render(Turn(calls=(UNICODE_CALL,))),
        )
        newer = self.render(Turn(calls=(WEATHER, TIME)))
        for i, call in enumerate(newer["message"]["tool_calls"]):
            call["id"] = f"call_ollama_{i}"
            call["function"] = {"index": i, **call["function"]}
        yield Case("tool_calls_with_id_and_index_fields", response=newer)
        yield Case(
            "arguments_as_string_rejected_by_sdk",
            response=edit(
                self.render(Turn(calls=(WEATHER,))),
                lambda b: b["message"]["tool_calls"][0]["function"].update(arguments=WEATHER.args),
            ),
        )
        yield Case(
            "structured_output_json_content",
            {"structured_model": True},
            response=self.render(Turn(text='{"city": "Paris", "temperature": 22.5}')),
        )
        yield Case(
            "structured_output_non_json_content",
            {"structured_model": True},
            response=self.render(Turn(text="Paris, 22.5 degrees")),
        )
        yield Case("id_field_ignored", response=dict(self.render(Turn(text="Hi.")), id="chat-123"))
        yield Case(
            "done_false_response",
            response=edit(
                self.render(Turn(text="Partial.")), lambda b: b.update(done=False, done_reason=None)
            ),
        )

    def special_stream_cases(self) -> Iterator[Case]:
        turn = Turn(text="Checking.", calls=(WEATHER, WEATHER_LONDON))
        events = plan(turn, by(4), "interleaved")
        yield self.stream_case(
            "same_name_calls_in_separate_lines_collide", turn, events, {"calls_together": False}
        )
        two = Turn(text="Checking.", calls=(WEATHER, TIME))
        yield self.stream_case(
            "calls_in_separate_lines",
            two,
            plan(two, by(4), "interleaved"),
            {"calls_together": False},
        )
        thinking = Turn(text=TEXTS["plain"], thinking=THINKINGS["unicode"])
        yield self.stream_case(
            "usage_absent_in_done_line", thinking, plan(thinking, by(6)), {"usage": {}}
        )
        base = self.render_stream(thinking, plan(thinking, by(6)))
        empty_lines = [self.line({"role": "assistant", "content": ""}) for _ in range(2)]
        yield Case("empty_lines_not_yielded", {}, chunks=[*empty_lines, *base])
        yield Case("only_done_line_yields_empty", {}, chunks=[base[-1]])
        yield Case(
            "error_line_mid_stream",
            {},
            chunks=[*base[:3], {"error": "model runner has unexpectedly stopped"}, *base[3:]],
        )
        json_turn = Turn(text='{"city": "Paris", "temperature": 22.5}')
        yield self.stream_case(
            "structured_output_json_by7", json_turn, plan(json_turn, by(7)), structured_model=True
        )


# ---------------------------------------------------------------------------
# OpenAI Responses API
# ---------------------------------------------------------------------------


class ResponsesSuite(Suite):
    provider = "openai_responses"
    model_name = "gpt-5-mini"
    response_id = "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b"
    usages: ClassVar[dict] = {
        "standard": {
            "input_tokens": 36,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 87,
            "output_tokens_details": {"reasoning_tokens": 64},
            "total_tokens": 123,
        },
        "zero": {
            "input_tokens": 0,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 0,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 0,
        },
        "cached": {
            "input_tokens": 4096,
            "input_tokens_details": {"cached_tokens": 3968},
            "output_tokens": 12,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 4108,
        },
        "null": None,
    }

    def make_model(self, options: dict, stream: bool) -> Any:
        from agentscope.model import OpenAIResponseModel

        return OpenAIResponseModel(self.model_name, api_key=FAKE_API_KEY, stream=stream, **options)

    def parse(self, model: Any, response: Any, structured: Any) -> Any:
        from openai._models import construct_type
        from openai.types.responses import Response

        return model._parse_response(
            START, construct_type(type_=Response, value=response), structured
        )

    def build_chunk(self, data: dict) -> Any:
        from openai._models import construct_type
        from openai.types.responses import ResponseStreamEvent

        return construct_type(type_=ResponseStreamEvent, value=data)

    def parse_stream(self, model: Any, feed: ChunkFeed, structured: Any) -> AsyncIterator:
        return model._parse_stream_response(START, feed, structured)

    # -- wire format -------------------------------------------------------
    def reasoning_item(self, summaries: list, n: int = 0) -> dict:
        return {
            "type": "reasoning",
            "id": f"rs_golden{n:02d}",
            "summary": [{"type": "summary_text", "text": s} for s in summaries],
        }

    def message_item(self, texts: list, n: int = 0, status: str = "completed") -> dict:
        return {
            "type": "message",
            "id": f"msg_golden{n:02d}",
            "status": status,
            "role": "assistant",
            "content": [
                {"type": "output_text", "text": t, "annotations": [], "logprobs": []} for t in texts
            ],
        }

    def call_item(
        self, call: Call, n: int = 0, arguments: str | None = None, status: str = "completed"
    ) -> dict:
        return {
            "type": "function_call",
            "id": f"fc_golden{n:02d}",
            "call_id": call.id,
            "name": call.name,
            "arguments": call.args if arguments is None else arguments,
            "status": status,
        }

    def items(self, turn: Turn) -> list:
        items = []
        if turn.thinking is not None:
            items.append(self.reasoning_item([turn.thinking]))
        if turn.text is not None:
            items.append(self.message_item([turn.text]))
        items.extend(self.call_item(c, i) for i, c in enumerate(turn.calls))
        return items

    def envelope(self, output: list, usage: Any, status: str = "completed") -> dict:
        body = {
            "id": self.response_id,
            "object": "response",
            "created_at": CREATED,
            "status": status,
            "error": None,
            "incomplete_details": None,
            "model": self.model_name,
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
        }
        put(body, "usage", usage)
        return body

    def render(self, turn: Turn, usage: Any = DEFAULT, **_: Any) -> dict:
        return self.envelope(self.items(turn), self.usage_or_default(usage))

    def item_events(self, turn: Turn, n: int, target: Any, pieces: list, emit: Callable) -> dict:
        """Emit the events of one output item; return the finished item."""
        full = "".join(pieces)
        if target == "think":
            item = self.reasoning_item([], n)
            emit("response.output_item.added", output_index=n, item=item)
            ref = {"item_id": item["id"], "output_index": n, "summary_index": 0}
            emit(
                "response.reasoning_summary_part.added",
                **ref,
                part={"type": "summary_text", "text": ""},
            )
            for piece in pieces:
                emit("response.reasoning_summary_text.delta", **ref, delta=piece)
            emit("response.reasoning_summary_text.done", **ref, text=full)
            emit(
                "response.reasoning_summary_part.done",
                **ref,
                part={"type": "summary_text", "text": full},
            )
            done = self.reasoning_item([full], n)
        elif target == "text":
            emit(
                "response.output_item.added",
                output_index=n,
                item=self.message_item([], n, "in_progress"),
            )
            ref = {"item_id": f"msg_golden{n:02d}", "output_index": n, "content_index": 0}
            part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            emit("response.content_part.added", **ref, part=part)
            for piece in pieces:
                emit("response.output_text.delta", **ref, delta=piece, logprobs=[])
            emit("response.output_text.done", **ref, text=full, logprobs=[])
            emit("response.content_part.done", **ref, part=dict(part, text=full))
            done = self.message_item([full], n)
        else:
            call = turn.calls[target[1]]
            emit(
                "response.output_item.added",
                output_index=n,
                item=self.call_item(call, n, "", "in_progress"),
            )
            ref = {"item_id": f"fc_golden{n:02d}", "output_index": n}
            for piece in pieces:
                emit("response.function_call_arguments.delta", **ref, delta=piece)
            emit("response.function_call_arguments.done", **ref, name=call.name, arguments=full)
            done = self.call_item(call, n, full)
        emit("response.output_item.done", output_index=n, item=done)
        return done

    def render_stream(
        self,
        turn: Turn,
        events: list,
        usage: Any = DEFAULT,
        created: bool = True,
        final: str = "response.completed",
    ) -> list:
        usage = self.usage_or_default(usage)
        chunks: list = []

        def emit(kind: str, **fields: Any) -> None:
            chunks.append({"type": kind, "sequence_number": len(chunks), **fields})

        if created:
            emit("response.created", response=self.envelope([], None, "in_progress"))
            emit("response.in_progress", response=self.envelope([], None, "in_progress"))
        output = [
            self.item_events(turn, n, t, p, emit) for n, (t, p) in enumerate(segments(events))
        ]
        status = "completed" if final == "response.completed" else "incomplete"
        emit(
            final, response=self.envelope(output, usage if status == "completed" else None, status)
        )
        return chunks

    # -- provider specific cases -------------------------------------------
    def special_cases(self) -> Iterator[Case]:
        usage = self.usages[self.default_usage]
        call_item = self.call_item(WEATHER)
        yield Case(
            "reasoning_multiple_summaries",
            response=self.envelope(
                [
                    self.reasoning_item(["First summary.", "", "Third summary."]),
                    self.message_item(["Done."]),
                ],
                usage,
            ),
        )
        yield Case(
            "reasoning_without_summary",
            response=self.envelope([self.reasoning_item([]), self.message_item(["Done."])], usage),
        )
        encrypted = dict(
            self.reasoning_item(["Visible summary."]), encrypted_content="gAAAAABencrypted=="
        )
        yield Case(
            "reasoning_encrypted_content_ignored", response=self.envelope([encrypted], usage)
        )
        yield Case(
            "message_multiple_output_text_parts",
            response=self.envelope([self.message_item(["Part one.", "Part two."])], usage),
        )
        refusal = self.message_item(["Visible."])
        refusal["content"].append({"type": "refusal", "refusal": "I can't share that."})
        yield Case("refusal_part_ignored", response=self.envelope([refusal], usage))
        yield Case(
            "item_order_kept",
            response=self.envelope(
                [
                    call_item,
                    self.message_item(["After the call."]),
                    self.reasoning_item(["Late reasoning."]),
                ],
                usage,
            ),
        )
        yield Case(
            "call_id_absent_uses_item_id",
            response=self.envelope([without(call_item, "call_id")], usage),
        )
        yield Case(
            "call_arguments_empty", response=self.envelope([dict(call_item, arguments="")], usage)
        )
        web_search = {
            "type": "web_search_call",
            "id": "ws_golden",
            "status": "completed",
            "action": {"type": "search", "query": "weather"},
        }
        yield Case(
            "web_search_item_ignored",
            response=self.envelope([web_search, self.message_item(["Found it."])], usage),
        )
        yield Case("output_empty", response=self.envelope([], usage))
        yield Case("id_absent", response=without(self.render(Turn(text="Hi.")), "id"))
        yield Case("usage_absent", response=without(self.render(Turn(text="Hi.")), "usage"))
        yield Case(
            "structured_output_text",
            {"structured_model": True},
            response=self.render(Turn(text='{"city": "Paris", "temperature": 22.5}')),
        )
        yield Case(
            "structured_output_last_text_part_wins",
            {"structured_model": True},
            response=self.envelope(
                [self.message_item(['{"city": "Paris"}', '{"city": "Rome"}'])], usage
            ),
        )

    def special_stream_cases(self) -> Iterator[Case]:
        turn = Turn(text=TEXTS["plain"], thinking=THINKINGS["plain"], calls=(WEATHER,))
        events = plan(turn, by(10))
        yield self.stream_case("no_created_event_id_late", turn, events, {"created": False})
        yield self.stream_case(
            "incomplete_instead_of_completed", turn, events, {"final": "response.incomplete"}
        )
        yield self.stream_case(
            "usage_zero_in_completed", turn, events, {"usage": self.usages["zero"]}
        )
        yield self.stream_case("usage_null_in_completed", turn, events, {"usage": None})
        base = self.render_stream(Turn(calls=(WEATHER,)), plan(Turn(calls=(WEATHER,)), by(9)))
        no_call_id = [
            edit(c, lambda e: e["item"].pop("call_id"))
            if c["type"] in ("response.output_item.added", "response.output_item.done")
            else c
            for c in base
        ]
        yield Case("call_id_absent_uses_item_id", {"stream_tool_parsing": True}, chunks=no_call_id)
        unknown_item = [
            edit(c, lambda e: e.update(item_id="fc_unknown"))
            if c["type"] == "response.function_call_arguments.delta"
            else c
            for c in base
        ]
        yield Case(
            "argument_deltas_for_unknown_item", {"stream_tool_parsing": True}, chunks=unknown_item
        )
        json_turn = Turn(text='{"city": "Paris", "temperature": 22.5}')
        yield self.stream_case(
            "structured_output_json_by9", json_turn, plan(json_turn, by(9)), structured_model=True
        )


# ---------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------

SUITES = [
    OpenAIChatSuite(),
    DeepSeekSuite(),
    AnthropicSuite(),
    GeminiSuite(),
    DashScopeSuite(),
    OllamaSuite(),
    ResponsesSuite(),
]


def write_json(path: Path, document: dict) -> None:
    text = json.dumps(document, ensure_ascii=False, indent=1, allow_nan=False)
    path.write_text(text + "\n", encoding="utf-8")


def registry_suites() -> list[Suite]:
    """The suites of the registry's providers that AgentScope 1.0.21 has (an
    "agentscope" variant), in its order."""
    from agentscope_proto.providers import PROVIDERS as REGISTRY

    names = [name for name, provider in REGISTRY.items() if "agentscope" in provider.variants]
    suites = {suite.provider: suite for suite in SUITES}
    missing = [name for name in names if name not in suites]
    stale = sorted(set(suites) - set(names))
    if missing or stale:
        raise SystemExit(
            f"make_parsers.py: registry providers without a suite in SUITES: {missing}; "
            f"suites of providers not in the registry: {stale}"
        )
    return [suites[name] for name in names]


async def generate() -> None:
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    for suite in registry_suites():
        document = await suite.build_file()
        write_json(OUT_DIR / f"{suite.provider}.json", document)
        cases = document["cases"]
        streams = sum(c["stream"] for c in cases)
        print(f"{suite.provider:17} {len(cases) - streams:4} responses {streams:4} streams")


def main() -> None:
    block_network()
    silence_logs()
    pin_invented_ids()
    asyncio.run(generate())


if __name__ == "__main__":
    main()
